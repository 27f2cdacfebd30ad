/**
 * web_fetch against a hostile web server (Node, the Lambda transport: undici decodes gzip, br and
 * deflate): endless compressed bodies are read only to the cap and their connection closed; HTML
 * nested thousands deep (closed, unclosed, inside <pre>) converts with its text kept instead of
 * overflowing the stack or spinning the parser's tag repair for minutes, and a page of 40,000
 * paragraphs converts without the selector engine's quadratic walk; binary bytes served as
 * text are BINARY_FILE. A real HTTP server on 127.0.0.1 (the test switch lets loopback through).
 */
import type { ServerResponse } from "node:http";
import { createBrotliCompress, createDeflate, createGzip, constants } from "node:zlib";
import type { Transform } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeFetcher } from "../../lib/tools/web/node-fetcher.js";
import { webhookApp } from "../lib/tools/custom/webhook-app.js";
import { serveLocal, type LocalHttp } from "../support/local-http.js";

let server: LocalHttp;
let base = "";
/** Per endless path: compressed bytes sent, and whether its response was closed. */
const bombs = new Map<string, { sent: number; closed: boolean }>();

const ENCODERS: Record<string, () => Transform> = {
  gzip: () => createGzip({ level: 9 }),
  br: () => createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 4 } }),
  deflate: () => createDeflate({ level: 9 }),
};

/** An endless compressed body: zeros of the given text type, encoded as fast as the client pulls them. */
function bomb(res: ServerResponse, path: string, encoding: string, type: string) {
  const stat = { sent: 0, closed: false };
  bombs.set(path, stat);
  res.writeHead(200, { "content-type": type, "content-encoding": encoding });
  const enc = ENCODERS[encoding]!();
  enc.on("data", (c: Buffer) => (stat.sent += c.length));
  enc.pipe(res);
  const zeros = Buffer.alloc(1 << 20, 0x61); // "aaaa…": text, so only the cap can stop it
  const pump = () => {
    while (!res.destroyed && enc.write(zeros));
    if (!res.destroyed) enc.once("drain", pump);
  };
  res.on("close", () => ((stat.closed = true), enc.destroy()));
  pump();
}

const page = (body: string) => `<!doctype html><html><head><title>deep</title></head><body>${body}</body></html>`;

beforeAll(async () => {
  server = await serveLocal((req, res) => {
    const url = new URL(req.url!, "http://x");
    const n = Number(url.searchParams.get("n") ?? 0);
    const html = (s: string) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(s);
    switch (url.pathname) {
      case "/bomb":
        return bomb(res, req.url!, url.searchParams.get("enc")!, url.searchParams.get("type")!);
      case "/unclosed-spans":
        return html(page(`<p>before ${"<span>".repeat(n)}deep-end</p><p>after</p>`));
      case "/closed-divs":
        return html(page(`${"<div>".repeat(n)}deep-end${"</div>".repeat(n)}<p>after</p>`));
      case "/pre-spans":
        return html(page(`<pre><code class="language-js">${"<span>".repeat(n)}deep-end</code></pre><p>after</p>`));
      case "/paragraphs":
        return html(page(`${"<p>para <b>x</b> <a href='/a'>link</a></p>".repeat(n)}<p>deep-end</p><p>after</p>`));
      case "/lists":
        return html(page(`${"<ul><li>item ".repeat(n)}deep-end${"</li></ul>".repeat(n)}<p>after</p>`));
      case "/binary-as-text":
        return res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end(Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7919) % 256)));
      case "/utf16":
        return res.writeHead(200, { "content-type": "text/plain; charset=utf-16le" }).end(Buffer.from("hello in utf-16", "utf16le"));
    }
    res.writeHead(404).end();
  });
  base = server.base;
});
afterAll(() => server.close());

async function setup() {
  const { app, h } = await webhookApp({ webFetch: { fetcher: nodeFetcher(), allowLoopback: true } });
  return async (args: Record<string, unknown>) => (await (await app.request("/v1/workspaces/main/tools/web_fetch", { method: "POST", headers: h, body: JSON.stringify(args) })).json()) as any;
}

describe("an endless compressed body", () => {
  for (const enc of ["gzip", "br", "deflate"]) {
    for (const type of ["text/plain", "text/html"]) {
      it(`${enc}, ${type}: cut at the cap, its connection closed, a few MB of it read at most`, async () => {
        const call = await setup();
        const path = `/bomb?enc=${enc}&type=${encodeURIComponent(type)}`;
        const r = await call({ url: `${base}${path}`, max_bytes: 10_000 });
        expect(r.ok, JSON.stringify(r).slice(0, 300)).toBe(true);
        expect(r.data.truncated).toBe(true);
        expect(r.data.content.length).toBeLessThanOrEqual(10_000);
        expect(r.output).toContain("[Content cut at");
        // HTML is read to 2 MiB decoded (to convert), other text to max_bytes + 1.
        expect(r.data.bytes).toBe(type === "text/html" ? 2 * 1024 * 1024 : 10_001);
        await expect.poll(() => bombs.get(path)?.closed, { timeout: 5000 }).toBe(true);
        expect(bombs.get(path)!.sent).toBeLessThan(16 * 1024 * 1024);
      });
    }
  }
});

it("a 1.8 MB page of 40,000 paragraphs converts, its links made absolute", async () => {
  // node-html-parser's selector engine was quadratic in the page's elements here (the commit gives the figures).
  const call = await setup();
  const r = await call({ url: `${base}/paragraphs?n=40000`, max_bytes: 1000 });
  expect(r.ok, JSON.stringify(r).slice(0, 300)).toBe(true);
  expect(r.data.truncated).toBe(true);
  expect(r.data.content).toMatch(/^para \*\*x\*\* \[link\]\(http:\/\/127\.0\.0\.1:\d+\/a\)/);
});

describe("HTML nested thousands deep", () => {
  // Before: 8,000 unclosed <span>s (48 KB) spun node-html-parser's tag repair for minutes; 3,000 closed <div>s overflowed the converter's stack.
  for (const [path, n] of [["/unclosed-spans", 8000], ["/closed-divs", 3000], ["/pre-spans", 8000], ["/lists", 3000]] as const) {
    it(`${path} (${n} deep) converts, its deepest text kept`, async () => {
      const call = await setup();
      for (const format of ["markdown", "text"]) {
        const r = await call({ url: `${base}${path}?n=${n}`, format });
        expect(r.ok, JSON.stringify(r).slice(0, 300)).toBe(true);
        expect(r.data.content).toContain("deep-end");
        expect(r.data.content).toContain("after");
      }
    });
  }
});

it("binary bytes served as text/plain are BINARY_FILE; UTF-16 that says so in its charset is text", async () => {
  const call = await setup();
  const bin = await call({ url: `${base}/binary-as-text` });
  expect(bin.error?.code, JSON.stringify(bin).slice(0, 300)).toBe("BINARY_FILE");
  expect(bin.error.message).toContain("text/plain");
  const utf16 = await call({ url: `${base}/utf16` });
  expect(utf16.data.content).toBe("hello in utf-16");
});
