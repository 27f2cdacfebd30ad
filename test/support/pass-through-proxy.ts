/**
 * A pass-through HTTP proxy on 127.0.0.1 that forwards every request byte for byte (method, path,
 * every header including Host and Origin, body, streamed answer) to one upstream on 127.0.0.1, with
 * headers of its own added (`headers`) and each answer told to `onAnswer` once it has ended (its
 * status, content type and first 256 KiB). Only node: imports.
 */
import { createServer, request, type Server } from "node:http";

export interface ProxiedAnswer {
  method: string;
  path: string;
  status: number;
  contentType: string;
  /** The answer's first 256 KiB, as UTF-8. */
  body: string;
}

export interface PassThroughProxy {
  url: string;
  close(): Promise<void>;
}

const KEPT_BYTES = 256 * 1024;

export async function startPassThroughProxy(upstream: string, opts: { headers?: Record<string, string>; onAnswer?: (answer: ProxiedAnswer) => void } = {}): Promise<PassThroughProxy> {
  const target = new URL(upstream);
  if (target.hostname !== "127.0.0.1") throw new Error(`the proxy forwards to 127.0.0.1 only, not ${target.hostname}`);
  const server: Server = createServer((req, res) => {
    const headers = { ...req.headers, ...opts.headers };
    const out = request({ host: "127.0.0.1", port: Number(target.port), method: req.method, path: req.url, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      const kept: Buffer[] = [];
      let size = 0;
      up.on("data", (chunk: Buffer) => {
        if (size < KEPT_BYTES) kept.push(chunk.subarray(0, KEPT_BYTES - size));
        size += chunk.length;
      });
      up.on("end", () => opts.onAnswer?.({ method: req.method ?? "", path: req.url ?? "", status: up.statusCode ?? 0, contentType: String(up.headers["content-type"] ?? ""), body: Buffer.concat(kept).toString("utf8") }));
      up.pipe(res);
    });
    out.on("error", (err) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`proxy: ${err.message}`);
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
