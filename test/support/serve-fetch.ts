/** Serves a fetch handler (an app's `fetch`) over real HTTP on 127.0.0.1, streaming both ways. */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";

export interface Served {
  url: string;
  close: () => Promise<void>;
}

function toRequest(req: IncomingMessage, origin: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(new URL(req.url ?? "/", origin), {
    method: req.method ?? "GET",
    headers,
    signal,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}),
  } as RequestInit);
}

export async function serveFetch(handler: (request: Request) => Response | Promise<Response>): Promise<Served> {
  const server = createServer(async (req, res) => {
    const aborted = new AbortController();
    res.on("close", () => { if (!res.writableFinished) aborted.abort(); });
    try {
      const r = await handler(toRequest(req, "http://127.0.0.1", aborted.signal));
      res.writeHead(r.status, [...r.headers.entries()].flat());
      if (!r.body) return void res.end();
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) res.write(chunk);
      res.end();
    } catch (err) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    }
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((ok) => { server.closeAllConnections(); server.close(() => ok()); }) };
}
