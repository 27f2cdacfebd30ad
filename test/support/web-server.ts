/**
 * A real HTTP server on 127.0.0.1 for the web tools' tests: real HTML documents (rust and Python
 * documentation pages kept in test/fixtures/web/), redirects (also to addresses the SSRF guard
 * must refuse), slow answers, HTTP errors (a CDN-style bot wall among them), binary, JSON,
 * markdown, huge pages. Node-only (node:http).
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";

export const FIXTURES = join(process.cwd(), "test/fixtures/web");
export const DOCS = {
  rustdoc: "rustdoc-documentation-tests.html",
  book: "rust-book-data-types.html",
  idle: "python-idle-help.html",
} as const;
export const fixture = (name: string) => readFileSync(join(FIXTURES, name), "utf8");

export interface WebServer {
  url: string;
  port: number;
  /** Requests seen, newest last: method, path, headers, body. */
  seen: { method: string; path: string; headers: IncomingMessage["headers"]; body: string }[];
  close(): Promise<void>;
}

const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, ...new Array(2000).fill(7)]);
const BOT_WALL = `<!DOCTYPE html><html><head><title>Just a moment...</title></head><body><h1>Checking your browser before accessing the site.</h1><p>Please enable JavaScript and cookies to continue. Verify you are human by completing the action below.</p><div id="challenge-form">cf-challenge</div><p>Performance &amp; security by Cloudflare</p></body></html>`;

function handle(req: IncomingMessage, res: ServerResponse, body: string, base: string) {
  const url = new URL(req.url ?? "/", base);
  const p = url.pathname;
  const send = (status: number, type: string, data: string | Uint8Array, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": type, ...headers });
    res.end(data);
  };
  if (p.startsWith("/docs/")) {
    const name = Object.values(DOCS).find((f) => `/docs/${f}` === p);
    return name ? send(200, "text/html; charset=utf-8", fixture(name)) : send(404, "text/html", "<h1>Not Found</h1><p>No such document.</p>");
  }
  switch (p) {
    case "/redirect":
      res.writeHead(Number(url.searchParams.get("status") ?? 302), { location: url.searchParams.get("to") ?? "/" });
      return res.end();
    case "/chain": {
      const n = Number(url.searchParams.get("n") ?? 1);
      res.writeHead(302, { location: n > 1 ? `/chain?n=${n - 1}` : "/data.json" });
      return res.end();
    }
    case "/slow":
      return void setTimeout(() => send(200, "text/plain", "finally"), Number(url.searchParams.get("ms") ?? 5000)).unref();
    case "/slow-body": {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("first part\n");
      return void setTimeout(() => res.end("second part\n"), Number(url.searchParams.get("ms") ?? 5000)).unref();
    }
    case "/chunked": {
      // n chunks of `size` bytes of text, `ms` apart; with Content-Length unless len=0.
      const n = Number(url.searchParams.get("n") ?? 10);
      const size = Number(url.searchParams.get("size") ?? 1024);
      const line = "x".repeat(size - 1) + "\n";
      res.writeHead(200, { "content-type": "text/plain", ...(url.searchParams.get("len") === "0" ? {} : { "content-length": String(n * size) }) });
      let sent = 0;
      const tick = () => {
        if (res.destroyed) return;
        res.write(line);
        if (++sent === n) res.end();
        else setTimeout(tick, Number(url.searchParams.get("ms") ?? 50)).unref();
      };
      return tick();
    }
    case "/bot-wall":
      return send(403, "text/html; charset=utf-8", BOT_WALL, { "cf-mitigated": "challenge", server: "cloudflare" });
    case "/forbidden":
      return send(403, "text/plain", "You do not have access to this document.");
    case "/missing":
      return send(404, "text/html", "<html><head><title>404</title></head><body><h1>Not Found</h1><p>The page /missing is not here.</p></body></html>");
    case "/broken":
      return send(500, "text/plain", "Internal Server Error: database connection lost");
    case "/too-many":
      return send(429, "text/plain", "Too many requests", { "retry-after": "30" });
    case "/image.png":
      return send(200, "image/png", PNG);
    case "/unknown-binary":
      return send(200, "application/octet-stream", PNG);
    case "/data.json":
      return send(200, "application/json", JSON.stringify({ name: "toolshed", items: [1, 2, 3], nested: { ok: true } }, null, 2));
    case "/notes.md":
      return send(200, "text/markdown; charset=utf-8", "# Notes\n\n- one\n- two\n\n```js\nconsole.log(1)\n```\n");
    case "/huge.html": {
      // Real documents, many times over: about 2.3 MB of HTML.
      const docs = Object.values(DOCS).map((f) => fixture(f).replace(/^[\s\S]*?<body[^>]*>|<\/body>[\s\S]*$/gi, ""));
      const parts = Array.from({ length: 40 }, (_, i) => `<section><h2>Part ${i + 1}</h2>${docs[i % docs.length]}</section>`);
      return send(200, "text/html; charset=utf-8", `<!DOCTYPE html><html><head><title>Huge page</title></head><body><main>${parts.join("\n")}</main></body></html>`);
    }
    case "/huge.txt": {
      res.writeHead(200, { "content-type": "text/plain" });
      const line = "0123456789abcdefghijklmnopqrstuvwxyz".repeat(3) + "\n";
      let sent = 0;
      const pump = () => {
        while (sent < 8 * 1024 * 1024) {
          sent += line.length * 100;
          if (!res.write(line.repeat(100))) return void res.once("drain", pump);
        }
        res.end();
      };
      res.on("close", () => (sent = Infinity));
      return pump();
    }
    case "/echo":
      return send(200, "application/json", JSON.stringify({ method: req.method, headers: req.headers, body }));
    default:
      return send(404, "text/plain", "not found");
  }
}

export async function startWebServer(): Promise<WebServer> {
  const seen: WebServer["seen"] = [];
  let base = "";
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      seen.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body });
      handle(req, res, body, base);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  base = `http://127.0.0.1:${port}`;
  return {
    url: base,
    port,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
