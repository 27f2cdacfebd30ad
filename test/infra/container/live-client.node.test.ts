/** The live channel over HTTP (lib/sync/live-client.ts) against a tiny node:http server: request shapes, bearer token, long poll. */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpLiveChannel } from "../../../lib/sync/live-client.js";
import type { LiveEnded, LiveStatus } from "../../../lib/sync/live-types.js";

const seen: { method: string; url: string; auth: string; type: string; body: unknown }[] = [];
/** Held `next` polls: answered when the test queues a command. */
let held: ServerResponse | null = null;
let onHeld: (() => void) | null = null;
let url = "";
let status = 0;
/** Set: the server is an API that predates LiveResultPost.poll (a result is answered 204 whatever it carries). */
let old = false;

const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
  let text = "";
  for await (const c of req) text += c;
  seen.push({ method: req.method!, url: req.url!, auth: String(req.headers.authorization), type: String(req.headers["content-type"]), body: JSON.parse(text) });
  if (status) return res.writeHead(status).end("nope");
  const poll = req.url === "/v1/sync/live/result" && !old && (seen.at(-1)!.body as { poll?: unknown }).poll !== undefined;
  if (req.url === "/v1/sync/live/next" || poll) {
    held = res;
    onHeld?.();
    return;
  }
  res.writeHead(204).end();
});

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
});
afterAll(() => server.close());

const st: LiveStatus = { generation: "g1", started_at: 1, last_used_at: 2, processes: [{ pid: 7, command: "sleep 9" }], ports: [8123], wall_ms: 3 };

describe("httpLiveChannel", () => {
  it("long-polls next with the bearer token and the status; answers what the API sends when it sends it", async () => {
    const ch = httpLiveChannel({ url, token: "tok-1" });
    const polled = new Promise<void>((r) => (onHeld = r));
    const next = ch.next(st);
    await polled; // the request is held open: nothing has answered it yet
    let answered = false;
    void next.then(() => (answered = true));
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    held!.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ command: { seq: 1, request: { command: "ls" } } }));
    expect(await next).toEqual({ command: { seq: 1, request: { command: "ls" } } });
    expect(seen.at(-1)).toEqual({ method: "POST", url: "/v1/sync/live/next", auth: "Bearer tok-1", type: "application/json", body: st });
  });

  it("an aborted poll rejects with the caller's reason", async () => {
    const ch = httpLiveChannel({ url, token: "tok-1" });
    const polled = new Promise<void>((r) => (onHeld = r));
    const ctrl = new AbortController();
    const next = ch.next(st, ctrl.signal);
    await polled;
    ctrl.abort();
    await expect(next).rejects.toThrow();
    held!.destroy();
  });

  it("posts result and ended", async () => {
    const ch = httpLiveChannel({ url, token: "tok-2" });
    await ch.result({ generation: "g1", seq: 1, response: { ok: true, result: { exit_code: 0 } }, status: st });
    const ended: LiveEnded = { generation: "g1", reason: "idle", lost_processes: [], status: st };
    await ch.ended(ended);
    expect(seen.slice(-2).map((s) => [s.url, s.auth])).toEqual([["/v1/sync/live/result", "Bearer tok-2"], ["/v1/sync/live/ended", "Bearer tok-2"]]);
    expect(seen.at(-1)!.body).toEqual(ended);
  });

  it("a result that carries a poll is held as a poll and answers its LiveNext; an API that answers it 204 (one that predates it) answers null: the runner polls", async () => {
    const ch = httpLiveChannel({ url, token: "tok-4" });
    const post = { generation: "g1", seq: 3, response: { ok: true as const, result: { exit_code: 0 } }, status: st, poll: { manifest: { buckets: 1, modes: null } } };
    const polled = new Promise<void>((r) => (onHeld = r));
    const next = ch.result(post);
    await polled;
    held!.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ wait: true }));
    expect(await next).toEqual({ wait: true });
    expect(seen.at(-1)).toMatchObject({ url: "/v1/sync/live/result", body: post });
    old = true;
    try {
      expect(await ch.result(post)).toBeNull();
    } finally {
      old = false;
    }
    expect(await ch.result({ ...post, poll: undefined })).toBeNull();
  });

  it("a refused call or a malformed answer is an error that says which route", async () => {
    const ch = httpLiveChannel({ url, token: "tok-3" });
    status = 503;
    await expect(ch.result({ generation: "g1", seq: 2, response: { ok: true, result: null }, status: st })).rejects.toThrow(/live channel \(result\) failed: HTTP 503/);
    status = 0;
    const polled = new Promise<void>((r) => (onHeld = r));
    const next = ch.next(st);
    await polled;
    held!.writeHead(200).end(JSON.stringify({ nothing: true }));
    await expect(next).rejects.toThrow(/not a LiveNext/);
    await expect(httpLiveChannel({ url: "http://127.0.0.1:1", token: "x" }).next(st)).rejects.toThrow(/unreachable/);
  });
});
