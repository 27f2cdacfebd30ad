/**
 * A pass-through HTTP proxy on 127.0.0.1 that adds `Authorization: Bearer <key>` to every request
 * and forwards it byte for byte (method, path, every header including Host and Origin, body,
 * streamed answer) to one upstream on 127.0.0.1. For clients that cannot send headers, such as the
 * MCP conformance runner (its CLI takes only a URL). Only node: imports.
 */
import { createServer, request, type Server } from "node:http";

export interface AuthProxy {
  url: string;
  close(): Promise<void>;
}

export async function startAuthProxy(upstream: string, key: string): Promise<AuthProxy> {
  const target = new URL(upstream);
  if (target.hostname !== "127.0.0.1") throw new Error(`the auth proxy forwards to 127.0.0.1 only, not ${target.hostname}`);
  const server: Server = createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${key}` };
    const out = request({ host: "127.0.0.1", port: Number(target.port), method: req.method, path: req.url, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on("error", (err) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`auth proxy: ${err.message}`);
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
