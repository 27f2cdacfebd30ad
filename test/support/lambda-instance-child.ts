/**
 * One API instance of the Lambda runtime in a Node process of its own (test/support/lambda-instances.ts
 * bundles this file and starts it): the esbuild bundle of infra/lambda.ts (infra/aws/bundle-api.ts, as
 * deployed) invoked as the Lambda Node.js runtime does (lambda-local: test/support/lambda-invoke.ts),
 * behind a function URL stand-in on 127.0.0.1: each HTTP request becomes a payload 2.0 event, and its
 * streamed answer goes back as it comes. The entry reads this process's environment, set by the parent.
 * Unlike one Lambda execution environment it serves requests at once (a call under way and the
 * requests beside it share the instance's caches, as the environments of one instance never would).
 * argv: <the bundle's path> <port>.
 */
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";
import { eventV2, invokeStreaming } from "./lambda-invoke.js";

const [bundle, port] = process.argv.slice(2);
// After lambda-invoke.js: lambda-local defines the `awslambda` global the entry streams through.
const { handler } = (await import(pathToFileURL(bundle!).href)) as { handler: unknown };

/** Headers a function URL event carries (the event sets its own host and body length). */
const DROPPED = new Set(["host", "content-length", "connection", "transfer-encoding"]);

const server = createServer(async (req, res) => {
  try {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !DROPPED.has(k)) headers[k] = Array.isArray(v) ? v.join(", ") : v;
    const answer = await invokeStreaming(handler, eventV2(req.method ?? "GET", req.url ?? "/", { headers, ...(body.length ? { body } : {}) }), 15 * 60_000);
    res.writeHead(answer.status, { ...answer.headers, ...(answer.cookies.length ? { "set-cookie": answer.cookies } : {}) });
    answer.body.pipe(res);
  } catch (e) {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end(`lambda instance: ${String(e)}`);
  }
});
server.listen(Number(port), "127.0.0.1");
