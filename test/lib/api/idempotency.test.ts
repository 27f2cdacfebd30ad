/**
 * Idempotency-Key (lib/api/idempotency.ts, issue #28 §3) over the real app with local R2 and KV:
 * retries run once and get the same answer; a different request under the same key is refused; a
 * retry while the first runs gets CONFLICT with Retry-After; keys are per tenant and API key.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { scopedKeyHash } from "../../../lib/api/idempotency.js";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import { idempotencyRecordKey } from "../../../lib/layout/paths.js";
import type { Workspace } from "../../../lib/workspace/workspace.js";
import { ADMIN, admin, newTenant, testApp, UNGATED, type Tenant } from "../../helpers.js";
import { gzip, tar } from "../archive/archives.js";

/** Counts every file change the workspace tells its listeners, per tenant and path. */
function changeCounter() {
  const seen = new Map<string, number>();
  const note = (ws: Workspace, path: string) => void seen.set(`${ws.tenant}:${path}`, (seen.get(`${ws.tenant}:${path}`) ?? 0) + 1);
  return {
    listener: {
      changed: async (ws: Workspace, path: string) => note(ws, path),
      changedBatch: async (ws: Workspace, changes: { path: string }[]) => changes.forEach((c) => note(ws, c.path)),
    },
    count: (t: Tenant, path: string) => seen.get(`${t.tenant}:${path}`) ?? 0,
  };
}

const counter = changeCounter();
const app = testApp({ listeners: [counter.listener] });

/** A key's id, from its secret (tsk_<id>_<secret>, lib/api/auth/keys.ts). */
const keyIdOf = (key: string) => key.split("_")[1]!;

type Answer = { status: number; text: string; replayed: boolean; retryAfter: string | null };
async function send(t: Tenant, path: string, init: RequestInit, key?: string): Promise<Answer> {
  const res = await t.req(path, { ...init, headers: { ...(init.headers as Record<string, string>), ...(key ? { "idempotency-key": key } : {}) } });
  return { status: res.status, text: await res.text(), replayed: res.headers.get("idempotent-replayed") === "true", retryAfter: res.headers.get("retry-after") };
}

/** A client that retries on CONFLICT (the first still running) until it gets the answer; bounded. */
async function retrying(t: Tenant, path: string, init: () => RequestInit, key: string): Promise<Answer> {
  for (let i = 0; i < 200; i++) {
    const a = await send(t, path, init(), key);
    if (a.status !== 409 || !a.text.includes("still running")) return a;
    expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("never got the answer");
}

const tool = (t: Tenant, name: string, args: unknown) => ({ path: `/v1/workspaces/${t.ws}/tools/${name}`, init: () => ({ method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) }) });

describe("Idempotency-Key", () => {
  it("a write retried 10 times concurrently with one key writes once, and every answer is the same", async () => {
    const t = await newTenant(app, UNGATED);
    const call = tool(t, "write", { file_path: "a.txt", content: "hello\n" });
    const answers = await Promise.all(Array.from({ length: 10 }, () => retrying(t, call.path, call.init, "write-1")));
    expect(counter.count(t, "a.txt")).toBe(1);
    expect(new Set(answers.map((a) => `${a.status} ${a.text}`)).size).toBe(1);
    expect(answers[0]!.status).toBe(200);
    expect(answers.filter((a) => a.replayed).length).toBeGreaterThanOrEqual(9);
  });

  it("a streamed call (SSE) retried with one key, streamed or not, gets the kept stream; never a 500", async () => {
    const t = await newTenant(app, UNGATED);
    const call = tool(t, "write", { file_path: "s.txt", content: "streamed\n" });
    const sse = () => ({ ...call.init(), headers: { ...(call.init().headers as Record<string, string>), accept: "text/event-stream" } });
    const first = await retrying(t, call.path, sse, "sse-1");
    expect(first.status).toBe(200);
    expect(first.text).toContain("event: result");
    const again = await Promise.all(Array.from({ length: 10 }, (_, i) => retrying(t, call.path, i % 2 ? sse : call.init, "sse-1")));
    for (const a of again) expect({ status: a.status, text: a.text, replayed: a.replayed }).toEqual({ status: 200, text: first.text, replayed: true });
    expect(counter.count(t, "s.txt")).toBe(1);
  });

  it("an edit retried 10 times concurrently runs once (the replacement is applied once)", async () => {
    const t = await newTenant(app, UNGATED);
    expect((await t.call("write", { file_path: "e.txt", content: "x\n" })).status).toBe(200);
    const call = tool(t, "edit", { file_path: "e.txt", old_string: "x", new_string: "xy" });
    const answers = await Promise.all(Array.from({ length: 10 }, () => retrying(t, call.path, call.init, "edit-1")));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(JSON.parse(answers[0]!.text).ok).toBe(true);
    const read = await t.call("read", { file_path: "e.txt" });
    expect(read.body.output).toContain("xy");
    expect(read.body.output).not.toContain("xyy");
  });

  it("an import retried 10 times concurrently imports once", async () => {
    const t = await newTenant(app, UNGATED);
    const archive = await gzip(tar([{ name: "src/one.ts", body: "export const one = 1;\n" }]));
    const path = `/v1/workspaces/${t.ws}/import`;
    const init = () => ({ method: "POST", headers: { "content-type": "application/gzip" }, body: archive });
    const answers = await Promise.all(Array.from({ length: 10 }, () => retrying(t, path, init, "import-1")));
    expect(new Set(answers.map((a) => `${a.status} ${a.text}`)).size).toBe(1);
    expect(answers[0]!.status).toBeLessThan(300);
    expect(counter.count(t, "src/one.ts")).toBe(1);
  });

  it("the same key with a different request is INVALID_ARGUMENT and runs nothing", async () => {
    const t = await newTenant(app, UNGATED);
    const first = tool(t, "write", { file_path: "b.txt", content: "one\n" });
    expect((await send(t, first.path, first.init(), "k")).status).toBe(200);
    const other = tool(t, "write", { file_path: "b.txt", content: "two\n" });
    const again = await send(t, other.path, other.init(), "k");
    expect(again.status).toBe(400);
    expect(JSON.parse(again.text).error.code).toBe("INVALID_ARGUMENT");
    expect(JSON.parse(again.text).error.message).toMatch(/different request/);
    expect((await t.call("read", { file_path: "b.txt" })).body.output).toContain("one");
    expect(counter.count(t, "b.txt")).toBe(1);
  });

  it("a held call repeated with X-Pending-Id under the call's own key gets the outcome once it ran, not the kept 'still waiting' answer", async () => {
    // An app keys each logical call and repeats it with X-Pending-Id to read what became of it: that repeat runs
    // nothing, so its key is not used (neither replayed nor kept); before, it replayed the held answer forever.
    const t = await newTenant(app, { policy: { gate: [{ tool: "write" }] } });
    const call = tool(t, "write", { file_path: "p.txt", content: "one\n" });
    const first = await send(t, call.path, call.init(), "held-1");
    expect(first.status).toBe(202);
    const id = JSON.parse(first.text).error.details.pending_id as string;
    const withPending = () => ({ ...call.init(), headers: { "content-type": "application/json", "x-session-id": "s1", "x-pending-id": id } });
    const waiting = await send(t, call.path, withPending(), "held-1");
    expect(waiting.status).toBe(202);
    const approver = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "approve"] })).body.key as string;
    const approved = await app.request(`/v1/workspaces/${t.ws}/pending/${id}`, { method: "POST", headers: { authorization: `Bearer ${approver}`, "content-type": "application/json" }, body: JSON.stringify({ approved: true }) });
    expect(approved.status).toBe(200);
    const outcome = await send(t, call.path, withPending(), "held-1");
    expect(outcome.status, outcome.text).toBe(200);
    expect(outcome.replayed).toBe(false);
    expect(JSON.parse(outcome.text)).toMatchObject({ ok: true, data: { file_path: "p.txt" } });
    // The call itself, retried with its key, still gets its own first answer (it ran nothing more).
    expect(await send(t, call.path, call.init(), "held-1")).toMatchObject({ status: 202, replayed: true, text: first.text });
    expect(counter.count(t, "p.txt")).toBe(1);
  });

  it("an error answer is kept and replayed, even after the state changed", async () => {
    const t = await newTenant(app, UNGATED);
    const call = tool(t, "edit", { file_path: "missing.txt", old_string: "a", new_string: "b" });
    const first = await send(t, call.path, call.init(), "err-1");
    expect(first.status).toBe(404);
    await env.FILES.put(`t/${t.tenant}/w/${t.ws}/f/missing.txt`, "a\n");
    const replay = await send(t, call.path, call.init(), "err-1");
    expect(replay).toMatchObject({ status: 404, text: first.text, replayed: true });
  });

  it("a replayed answer carries the rate limit as it is now, not the first answer's: the replay took a call too", async () => {
    const limited = testApp({ limits: durableLimits(env.LIMITS) });
    const t = await newTenant(limited, UNGATED);
    const k = await admin(limited, `/v1/admin/tenants/${t.tenant}/keys`, { name: "three a minute", limits: { calls_per_minute: 3 } });
    const write = () => limited.request(`/v1/workspaces/${t.ws}/tools/write`, { method: "POST", headers: { authorization: `Bearer ${k.body.key}`, "content-type": "application/json", "idempotency-key": "rate-1" }, body: JSON.stringify({ file_path: "r.txt", content: "r\n" }) });
    const first = await write();
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit")).toMatch(/^"key";r=2;t=\d+$/);
    const again = await write();
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("ratelimit")).toMatch(/^"key";r=1;t=\d+$/); // was the first answer's r=2
    expect(again.headers.get("ratelimit-policy")).toBe('"tenant";q=1200;w=60, "key";q=3;w=60');
    expect((await write()).headers.get("ratelimit")).toMatch(/^"key";r=0;t=\d+$/);
  });

  it("keys are per tenant: another tenant's same key runs its own request", async () => {
    const a = await newTenant(app, UNGATED);
    const b = await newTenant(app, UNGATED);
    const ca = tool(a, "write", { file_path: "t.txt", content: "a\n" });
    const cb = tool(b, "write", { file_path: "t.txt", content: "b\n" });
    expect((await send(a, ca.path, ca.init(), "shared")).status).toBe(200);
    const rb = await send(b, cb.path, cb.init(), "shared");
    expect(rb).toMatchObject({ status: 200, replayed: false });
    expect((await b.call("read", { file_path: "t.txt" })).body.output).toContain("b");
  });

  it("keys are per API key: another key of the tenant sending the same key runs its own request, never told the first used it nor given its answer; the same key after a rotation is its retry", async () => {
    const t = await newTenant(app, UNGATED);
    const keyOf = async (body: unknown) => ((await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, body)).body as { key: string; key_id: string });
    const maker = await keyOf({ scopes: ["read", "write", "manage"] });
    const limited = await keyOf({ scopes: ["read", "manage"], workspaces: ["alpha"] });
    const make = (key: string, name = "user 42") => app.request("/v1/keys", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": "make-key-user-42" }, body: JSON.stringify({ name, scopes: ["read"] }) });
    const first = await make(maker.key);
    expect(first.status).toBe(201);
    const firstKey = ((await first.clone().json()) as any).key as string;
    // The attack that found it first: a manage key limited to "alpha" was replayed the answer and held the new key's secret.
    // Then the refusal ("already used ... by another API key") told any key of the tenant which keys another had sent.
    const third = await keyOf({ scopes: ["read", "manage"] });
    for (const [key, name] of [[limited.key, "user 42"], [third.key, "another name"]] as const) {
      const other = await make(key, name);
      const body = (await other.json()) as any;
      expect(other.headers.get("idempotent-replayed")).toBeNull();
      expect(other.status, JSON.stringify(body)).toBe(201);
      expect(body.key).not.toBe(firstKey);
    }
    // ... and its own retry is its own replay.
    const again = await make(third.key, "another name");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    // A retry by the same key, its secret rotated meanwhile, is still the same request's retry.
    const rotated = await app.request(`/v1/keys/${maker.key_id}/rotate`, { method: "POST", headers: { authorization: `Bearer ${maker.key}`, "content-type": "application/json" }, body: JSON.stringify({ grace_seconds: 60 }) });
    const retry = await make(((await rotated.json()) as any).key);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await retry.text()).toBe(await first.text());
  });

  it("another key of the tenant sending a key the first holds while it runs runs its own request, not CONFLICT", async () => {
    const t = await newTenant(app, UNGATED);
    const other = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write"] })).body as { key: string };
    const key = idempotencyRecordKey(t.tenant, await scopedKeyHash({ tenant: t.tenant, keyId: keyIdOf(t.key) }, "held-by-first"));
    const now = Date.now();
    await env.FILES.put(key, JSON.stringify({ state: "running", started: now, lease_until: now + 60_000, expires: now + 3600_000 }));
    const call = tool(t, "write", { file_path: "o.txt", content: "o\n" });
    expect((await send(t, call.path, call.init(), "held-by-first")).status).toBe(409);
    const res = await app.request(call.path, { ...call.init(), headers: { ...(call.init().headers as Record<string, string>), authorization: `Bearer ${other.key}`, "idempotency-key": "held-by-first" } });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(counter.count(t, "o.txt")).toBe(1);
  });

  it("a kept answer is sealed at rest under the sync secret: the new key's secret is not in the bucket, a retry gets it back; under another secret, CONFLICT saying why", async () => {
    const sealing = testApp({ syncSecret: "sync-secret-of-this-deployment-0123" });
    const t = await newTenant(sealing, UNGATED);
    const maker = (await admin(sealing, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "manage"] })).body as { key: string };
    const make = (a: typeof sealing) => a.request("/v1/keys", { method: "POST", headers: { authorization: `Bearer ${maker.key}`, "content-type": "application/json", "idempotency-key": "sealed-key-1" }, body: JSON.stringify({ name: "end user", scopes: ["read"] }) });
    const first = await make(sealing);
    expect(first.status).toBe(201);
    const made = (await first.clone().json()) as { key: string };
    const listed = await env.FILES.list({ prefix: `t/${t.tenant}/idem/` });
    expect(listed.objects).toHaveLength(1);
    const raw = await (await env.FILES.get(listed.objects[0]!.key))!.text();
    expect(JSON.parse(raw)).toMatchObject({ state: "done", sealed: true });
    expect(raw).not.toContain(made.key);
    expect(atob(JSON.parse(raw).body)).not.toContain(made.key);
    const retry = await make(sealing);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await retry.text()).toBe(await first.text());
    // The same bucket under another sync secret (rotated): the answer does not open, and nothing runs again.
    const rotated = await make(testApp({ syncSecret: "another-sync-secret-0123456789abc" }));
    expect(rotated.status).toBe(409);
    expect(((await rotated.json()) as any).error.message).toContain("can no longer be read");
  });

  it("a retry while the first runs gets CONFLICT with Retry-After; after the lease it runs", async () => {
    const t = await newTenant(app, UNGATED);
    const key = idempotencyRecordKey(t.tenant, await scopedKeyHash({ tenant: t.tenant, keyId: keyIdOf(t.key) }, "busy"));
    const now = Date.now();
    await env.FILES.put(key, JSON.stringify({ state: "running", started: now, lease_until: now + 60_000, expires: now + 3600_000 }));
    const call = tool(t, "write", { file_path: "c.txt", content: "c\n" });
    const busy = await send(t, call.path, call.init(), "busy");
    expect(busy.status).toBe(409);
    expect(JSON.parse(busy.text).error.code).toBe("CONFLICT");
    expect(Number(busy.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(counter.count(t, "c.txt")).toBe(0);
    // A crashed first run: its lease is over, so the retry takes the key over and runs.
    await env.FILES.put(key, JSON.stringify({ state: "running", started: now - 3600_000, lease_until: now - 1, expires: now + 3600_000 }));
    const taken = await send(t, call.path, call.init(), "busy");
    expect(taken.status).toBe(200);
    expect(counter.count(t, "c.txt")).toBe(1);
  });

  it("raw file writes, workspace creation and admin routes take the key too; GET ignores it; a bad key is refused", async () => {
    const t = await newTenant(app, UNGATED);
    const put = () => ({ method: "PUT", headers: { "content-length": "2" }, body: "p\n" });
    const p1 = await send(t, `/v1/workspaces/${t.ws}/files/p.txt`, put(), "put-1");
    const p2 = await send(t, `/v1/workspaces/${t.ws}/files/p.txt`, put(), "put-1");
    expect(p2).toMatchObject({ status: p1.status, text: p1.text, replayed: true });
    const mk = () => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "second" }) });
    const w1 = await send(t, "/v1/workspaces", mk(), "ws-1");
    const w2 = await send(t, "/v1/workspaces", mk(), "ws-1");
    expect(w1.status).toBe(201);
    expect(w2).toMatchObject({ status: 201, text: w1.text, replayed: true });
    const adminKey = async () => app.request(`/v1/admin/tenants/${t.tenant}/keys`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json", "idempotency-key": "admin-1" }, body: "{}" });
    const k1 = await adminKey();
    const k2 = await adminKey();
    expect(k1.status).toBe(201);
    expect(k2.headers.get("idempotent-replayed")).toBe("true");
    expect(await k2.text()).toBe(await k1.text());
    const g = await send(t, `/v1/workspaces/${t.ws}/files/p.txt`, { method: "GET" }, "put-1");
    expect(g).toMatchObject({ status: 200, replayed: false, text: "p\n" });
    const bad = await send(t, `/v1/workspaces/${t.ws}/files/q.txt`, put(), "has space");
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.message).toMatch(/Idempotency-Key/);
  });
});
