/**
 * What the live sandbox tests over sandboxApp (test/lib/doors/sandbox-app.ts) share: a session's bash
 * and file read through the app, and the runner's requests to one sync route captured as they were
 * sent (to be sent again).
 */
import { expect } from "vitest";

type Call = (path: string, init: RequestInit, auth: string) => Promise<Response>;

/** Bash in session `session` of workspace main with `key` (200 asserted; answers the output), and a raw file read. */
export function sessionCalls(call: Call, key: string, session = "s1") {
  const bash = async (args: Record<string, unknown>) => {
    const r = await call("/v1/workspaces/main/tools/bash", { method: "POST", headers: { "x-session-id": session }, body: JSON.stringify(args) }, key);
    const body = (await r.json()) as { output: string };
    expect(r.status, JSON.stringify(body)).toBe(200);
    return body.output;
  };
  const read = async (path: string) => (await call(`/v1/workspaces/main/files/${path}`, {}, key)).text();
  return { bash, read };
}

/** Every request the runner sent to a URL ending in `suffix`, as sent; `wrap` is sandboxApp's runnerFetch. */
export function capturedPosts(suffix: string) {
  const posts: { url: string; init: RequestInit }[] = [];
  const wrap = (f: typeof fetch): typeof fetch =>
    (async (u: string, i: RequestInit) => {
      const r = await f(u, i);
      if (String(u).endsWith(suffix)) posts.push({ url: String(u), init: i });
      return r;
    }) as typeof fetch;
  return { posts, wrap };
}
