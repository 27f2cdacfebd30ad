/**
 * What makes two requests under one Idempotency-Key the same (lib/api/idempotency.ts): the
 * fingerprint of a request, its body hashed as the handler reads it, and the refusal of a key
 * reused for another request.
 */
import { createHash } from "node:crypto";
import type { Context } from "hono";
import { ToolError } from "../shared/errors.js";
import { sha256Hex } from "../shared/hash.js";
import type { AppEnv } from "./http.js";
import { isMcpPath } from "./routes/mcp-body.js";

/**
 * A key this API key already used for another request. An MCP client sends its
 * transport's requestInit headers with every request, so a key put there is reused by the next one:
 * on the MCP route the refusal says so.
 */
export function differentRequest(c: Context<AppEnv>): ToolError {
  const mcp = isMcpPath(new URL(c.req.url).pathname) ? " An MCP client sends the headers of its transport's requestInit with every request, so a key put there is reused by the next one: give each POST its own key in the transport's fetch (docs/idempotency.md, \"MCP\")." : "";
  return new ToolError("INVALID_ARGUMENT", `This Idempotency-Key was already used for a different request (method, path, query or body) by this API key. Use a new key for a new request; retry only with the same request.${mcp}`);
}

/**
 * What makes a request the same: its method, path, query, content type and body. Who sent it is the
 * key's scope (lib/api/idempotency.ts IdempotencyScope: another API key never meets this record).
 */
export async function fingerprintOf(c: Context<AppEnv>, bodyHash: string): Promise<string> {
  const url = new URL(c.req.url);
  return sha256Hex([c.req.method, url.pathname, url.search, c.req.header("content-type") ?? "", bodyHash].join("\n"));
}

/**
 * Puts the request's body through a SHA-256 as the handler reads it. finish() reads what the
 * handler left unread (or all of it, when nothing read it) and gives the hex digest.
 */
export type HashedBody = { finish(): Promise<string> };

export function hashedBody(c: Context<AppEnv>): HashedBody {
  const hash = createHash("sha256");
  const raw = c.req.raw;
  if (!raw.body) return { finish: async () => hash.digest("hex") };
  const reader = raw.body.getReader();
  let done = false;
  let digest: string | undefined;
  // One read at a time, in order: the handler's (through `stream`) and finish()'s may overlap (a
  // replay or a kept answer while a read the guard started is still on its way), and a stream takes
  // one pending read only. Each chunk is hashed once, in the order it came.
  let last: Promise<unknown> = Promise.resolve();
  const readNext = (): Promise<ReadableStreamReadResult<Uint8Array>> => {
    const r = last.then(async () => {
      if (done) return { done: true, value: undefined } as ReadableStreamReadResult<Uint8Array>;
      const got = await reader.read();
      if (got.done) done = true;
      else hash.update(got.value);
      return got;
    });
    last = r.catch(() => {});
    return r;
  };
  const stream = new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      const r = await readNext();
      if (r.done) ctrl.close();
      else ctrl.enqueue(r.value);
    },
  });
  c.req.raw = new Request(raw.url, { method: raw.method, headers: raw.headers, body: stream, duplex: "half", signal: raw.signal } as RequestInit);
  return {
    async finish() {
      if (digest !== undefined) return digest;
      while (!(await readNext()).done);
      return (digest ??= hash.digest("hex"));
    },
  };
}
