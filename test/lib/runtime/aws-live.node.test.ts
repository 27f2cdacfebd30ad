/**
 * lib/runtime/aws.ts: live sessions on AWS only where the operator says one process serves every
 * request (TOOLSHED_LIVE_COORDINATOR=memory). On Lambda (unset) a keep_alive call is refused at once,
 * naming what to do, and no runner is started: Lambda runs one request per execution environment, so
 * a live runner's held poll and its session's next call would never reach the same coordinator.
 */
import { describe, expect, it } from "vitest";
import bash from "../../../functions/bash.js";
import { tools as fileTools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import type { Executor } from "../../../lib/exec/types.js";
import { fromAwsEnv } from "../../../lib/runtime/aws.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const ADMIN = "admin-token-for-tests";

async function awsApp(env: Record<string, string>) {
  const invoked: unknown[] = [];
  const executor = { run: async (req: unknown) => { invoked.push(req); throw new Error("no runner in this test"); } } as unknown as Executor;
  const deps = { ...fromAwsEnv({ TOOLSHED_BUCKET: "b", ...env }), storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal" };
  const app = createApp(deps, [...fileTools, bash]);
  const admin = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  const key = (await admin("/v1/admin/tenants/acme/keys", { scopes: ["read", "write", "execute"] })).key as string;
  const post = async (path: string, body: unknown) => {
    const res = await app.request(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "chat-1" }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  expect((await post("/v1/workspaces", { id: "main" })).status).toBe(201);
  return { deps, post, invoked, key, app };
}

describe("live sessions on the AWS entry", () => {
  it("unset (Lambda): keep_alive is UNAVAILABLE at once, saying to call without it; no runner is invoked; the sandbox route says so too", async () => {
    const { deps, post, invoked, key, app } = await awsApp({});
    expect(deps.liveCoordinator).toBeUndefined();
    const t0 = Date.now();
    const r = await post("/v1/workspaces/main/tools/bash", { command: "python3 -m http.server 8123 &", keep_alive: true });
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe("UNAVAILABLE");
    expect(r.body.error.message).toContain("call without keep_alive");
    expect(Date.now() - t0).toBeLessThan(5_000); // not after a runner's start wait
    expect(invoked).toEqual([]);
    const s = await app.request("/v1/workspaces/main/sessions/chat-1/sandbox", { headers: { authorization: `Bearer ${key}` } });
    expect(s.status).toBe(503);
  });

  it("memory: the in-process coordinator; anything else is refused at start with what to set", () => {
    expect(fromAwsEnv({ TOOLSHED_BUCKET: "b", TOOLSHED_LIVE_COORDINATOR: "memory" }).liveCoordinator).toBeDefined();
    expect(() => fromAwsEnv({ TOOLSHED_BUCKET: "b", TOOLSHED_LIVE_COORDINATOR: "dynamodb" })).toThrow(/set it to "memory".*or leave it unset/);
  });
});
