/**
 * What the business layer adds to a call's path (issue #28's overhead target): every storage
 * operation (test/support/counting-stores.ts) and every call to the tenant's LIMITS Durable Object
 * is logged, and what runs before the answer is asserted exactly. With budget to spare an un-keyed
 * read, write or edit asks the object nothing before its answer: its token comes from the isolate's
 * pool of calls taken ahead (lib/limits/call-leases.ts), a write's storage-quota charge from the
 * isolate's allowance (lib/limits/storage-allowance.ts); the pool's refill and the allowance's settle
 * are held here until the answer is out, so an answer that waited for either would never come.
 * An Idempotency-Key's claim is still taken before the call runs (one round trip, no storage
 * operation), and its one PUT (the kept answer) runs after it.
 * Also: the object-held key keeps its guarantees (retries run once, in-flight retries wait, a
 * crashed run's key is taken over after its lease).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import { sha256Hex } from "../../../lib/shared/hash.js";
import { scopedKeyHash } from "../../../lib/api/idempotency.js";
import { IsolateCache } from "../../../lib/shared/isolate-cache.js";
import { auditToolCall } from "../../../lib/run/audit/tool-call.js";
import { listAudit } from "../../../lib/run/audit/store.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { Tool, ToolContext } from "../../../lib/contract/tool.js";
import { countingStores, roundTrips, sorted } from "../../support/counting-stores.js";
import { countingLimits } from "../../support/counting-limits.js";
import type { Workspace } from "../../../lib/workspace/workspace.js";
import { admin, executionContext, newTenant, testApp, UNGATED, upload, type Tenant } from "../../helpers.js";

const CACHED_FOR_THE_TEST_MS = 300_000;

async function setup() {
  const stores = countingStores();
  const limitCalls: string[] = [];
  const limits = countingLimits(limitCalls);
  // What the isolate's caches hold stays known for the whole test: the product's 5-10 s pass between
  // two calls on a busy machine, and a call after that reads the key, the policy, the workspace
  // record or the session record again (and the file early, which a known record spares): GETs that
  // would show on a path asserted here.
  const cached = <T,>() => new IsolateCache<T>(CACHED_FOR_THE_TEST_MS);
  const app = testApp({ storage: stores.storage, kv: stores.kv, limits: limits.store, undoPruneEvery: 0, apiKeys: cached(), policies: cached(), customTools: cached(), knownWorkspaces: cached(), knownRecords: cached() });
  const t = await newTenant(app, UNGATED);
  await upload(t, "a.txt", "one\n");
  const { ctx, settle } = executionContext();
  const call = async (tool: string, args: unknown, key?: string) => {
    await settle();
    stores.log.length = 0;
    stores.steps.length = 0;
    limitCalls.length = 0;
    limits.gate.closed = true;
    const headers: Record<string, string> = { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1", ...(key ? { "idempotency-key": key } : {}) };
    const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers, body: JSON.stringify(args) }, env, ctx);
    const body = (await res.json()) as any;
    const answered = stores.log.length;
    const limitsOnPath = limitCalls.filter((n) => !n.startsWith("held:"));
    const heldUntilAnswered = limitCalls.filter((n) => n.startsWith("held:"));
    // The lazy sweep of kept answers (lib/api/idempotency.ts: after 1 in SWEEP_EVERY first runs, at random) starts its LIST
    // beside the call and is not awaited by it: left out, so the assertions below do not fail 1 time in 16.
    const onPath = roundTrips(stores, 0, answered)
      .map((step) => step.filter((o) => o !== "r2.list idempotency"))
      .filter((step) => step.length > 0);
    limits.gate.open();
    stores.release();
    await settle();
    expect(body.ok, JSON.stringify(body)).toBe(true);
    return { onPath, after: sorted(stores.log.slice(answered)), limitsOnPath, heldUntilAnswered, all: [...limitCalls], replayed: res.headers.get("idempotent-replayed"), rate: res.headers.get("ratelimit") };
  };
  return { call, t, app, stores, limits, limitCalls, ctx, settle };
}

describe("the business layer's cost on a call's path (limits on)", () => {
  it("with budget to spare, an un-keyed read, write and edit ask the LIMITS object nothing before their answers; the pool's refill and the allowance's settle come after", async () => {
    const { call } = await setup();
    // The isolate's first calls took tokens from the object with calls ahead; its first size-changing write, an allowance.
    await call("read", { file_path: "a.txt" });
    await call("write", { file_path: "a.txt", content: "warm\n" });
    const read = await call("read", { file_path: "a.txt" });
    const write = await call("write", { file_path: "a.txt", content: "a longer line\n" }); // 4 → 14 bytes: a charge
    const edit = await call("edit", { file_path: "a.txt", old_string: "longer", new_string: "much longer" }); // 14 → 19 bytes
    for (const c of [read, write, edit]) {
      expect(c.limitsOnPath).toEqual([]);
      expect(c.rate).toMatch(/^"tenant";r=\d+;t=\d+$/); // the headers still say what is left
    }
    // What the charge spent is told to the object after the answer (held until then, or asked after it).
    for (const c of [write, edit]) expect(c.all.filter((n) => n.endsWith("settle"))).toHaveLength(1);
  }, 120_000); // every storage operation waits for a quiet step (counting-stores.ts): slow on a busy machine

  it("a write with a key: the same storage round trips before the answer as without one; one object round trip for the key's claim; the kept answer after", async () => {
    const { call } = await setup();
    await call("read", { file_path: "a.txt" });
    await call("write", { file_path: "a.txt", content: "warm\n" }); // its first size-changing write: an allowance held
    const plain = await call("write", { file_path: "a.txt", content: "two\n" });
    const keyed = await call("write", { file_path: "a.txt", content: "three\n" }, "w-1");
    expect(keyed.onPath).toEqual(plain.onPath);
    expect(keyed.onPath.flat().filter((o) => o.endsWith(" idempotency"))).toEqual([]);
    // The token from the pool, the key's claim in one round trip before the call runs; the charge (4 → 6 bytes) from the allowance.
    expect(plain.limitsOnPath).toEqual([]);
    expect(keyed.limitsOnPath).toEqual(["claimKey"]);
    expect(keyed.after.filter((o) => o.endsWith(" idempotency"))).toEqual(["r2.put idempotency"]);
    // A retry: the object refuses the claim, the kept answer is read (1 GET), nothing else runs.
    const again = await call("write", { file_path: "a.txt", content: "three\n" }, "w-1");
    expect(again.replayed).toBe("true");
    // (the key's and the workspace's isolate caches may have expired meanwhile on a slow machine: their GETs are not the key's)
    expect(again.onPath.flat().filter((o) => !o.endsWith(" apikey") && o !== "r2.get meta.json")).toEqual(["r2.get idempotency"]);
    expect(again.limitsOnPath).toEqual(["claimKey"]);
  }, 120_000);
});

describe("the business layer's work beside and after a keyed call", () => {
  it("a keyed edit of a file this isolate does not hold: its reads go beside the key's claim; nothing is written until the claim is taken", async () => {
    const { call, t, app, stores, limits, limitCalls, ctx, settle } = await setup();
    const other = testApp({ storage: stores.storage, kv: stores.kv, limits: limits.store, undoPruneEvery: 0 }); // another isolate: its own caches
    await call("read", { file_path: "a.txt" }); // this isolate's pool holds calls ahead; it knows the workspace record
    await call("write", { file_path: "a.txt", content: "warm\n" });
    // b.txt uploaded and read (session s1) through the other isolate: this one holds neither its version nor its record.
    const bytes = new TextEncoder().encode("b one\n");
    const put = await other.request(`/v1/workspaces/${t.ws}/files/b.txt`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": String(bytes.length) }, body: bytes }, env);
    expect(put.status, await put.clone().text()).toBe(201);
    const headers = { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1" };
    const read = await other.request(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers, body: JSON.stringify({ file_path: "b.txt" }) }, env);
    expect(read.status).toBe(200);
    await settle();
    stores.log.length = 0;
    limitCalls.length = 0;
    limits.claims.closed = true; // the claim is asked, and answered only once the reads are seen
    const edit = app.request(`/v1/workspaces/${t.ws}/tools/edit`, { method: "POST", headers: { ...headers, "idempotency-key": "e-1" }, body: JSON.stringify({ file_path: "b.txt", old_string: "one", new_string: "two" }) }, env, ctx);
    for (let i = 0; i < 200 && !(stores.log.includes("r2.get file") && stores.log.includes("kv.get record")); i++) await new Promise((r) => setTimeout(r, 25));
    const besideClaim = [...stores.log];
    limits.claims.open();
    const res = await edit;
    expect(((await res.json()) as any).ok).toBe(true);
    expect(limitCalls.filter((n) => !n.startsWith("held:") && !n.endsWith("settle") && n !== "leaseCalls")).toEqual(["claimKey"]);
    expect(besideClaim).toEqual(expect.arrayContaining(["r2.get file", "kv.get record"]));
    expect(besideClaim.filter((o) => !/^(r2\.get|r2\.head|r2\.list|kv\.get) /.test(o))).toEqual([]); // reads only
    expect(stores.log.slice(besideClaim.length)).toContain("r2.put file");
    stores.release();
    await settle();
  }, 120_000);

  it("a tool call's audit entry is built after its answer (its arguments summarized then), the same entry", async () => {
    const storage = memoryDriver();
    const later: Promise<unknown>[] = [];
    let argumentReads = 0;
    const args = { file_path: "src/a.ts", get content() {
      argumentReads++;
      return "x".repeat(4096);
    } };
    const ctx = { auth: { tenant: "t-audit", key_id: "k1" }, ws: { id: "main" }, session: "s1", deps: { storage } } as unknown as ToolContext;
    const ended = new Date().toISOString();
    await auditToolCall({ name: "write", permission: "write" } as Tool, args, ctx, { data: { path: "src/a.ts" }, call_id: "c1", journal: ["src/a.ts"] }, "http", (p) => void later.push(p));
    const answered = new Date().toISOString();
    expect(argumentReads).toBe(0); // nothing of the entry built yet: that waits a timer turn (lib/shared/after-answer.ts)
    await new Promise((r) => setTimeout(r, 20));
    await Promise.all(later);
    expect(argumentReads).toBe(1);
    const [entry, ...more] = (await listAudit(storage, { tenant: "t-audit", workspace: "main" }, {})).entries;
    expect(more).toEqual([]);
    expect(entry).toMatchObject({ tenant: "t-audit", workspace: "main", key_id: "k1", session: "s1", door: "http", tool: "write", args: { file_path: "src/a.ts", content_bytes: 4096 }, outcome: { ok: true, status: 200 }, files: ["src/a.ts"], call_id: "c1" });
    expect(entry!.at >= ended && entry!.at <= answered).toBe(true); // the call's end, taken before the answer, not when built
  });
});

describe("Idempotency-Key claims held by the LIMITS object", () => {
  /** The claim's name of `key` sent by the tenant's key (its id from tsk_<id>_<secret>): per API key (lib/api/idempotency.ts scopedKeyHash). */
  const claimed = (t: Tenant, key: string) => scopedKeyHash({ tenant: t.tenant, keyId: t.key.split("_")[1]! }, key);
  /** Every file change the workspaces tell their listeners, per tenant and path: a run that happened twice counts 2. */
  const changes = new Map<string, number>();
  const listener = { changed: async (ws: Workspace, path: string) => void changes.set(`${ws.tenant}:${path}`, (changes.get(`${ws.tenant}:${path}`) ?? 0) + 1) };
  const app = testApp({ limits: durableLimits(env.LIMITS), listeners: [listener] });
  const other = testApp({ limits: durableLimits(env.LIMITS), listeners: [listener] }); // another isolate: the same object
  const write = (t: Tenant, content: string, key: string, via = app) =>
    via.request(`/v1/workspaces/${t.ws}/tools/write`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1", "idempotency-key": key }, body: JSON.stringify({ file_path: "c.txt", content }) });

  it("10 concurrent retries through two isolates run once; every answer is the same", async () => {
    const t = await newTenant(app, UNGATED);
    const answers = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        for (let n = 0; n < 200; n++) {
          const res = await write(t, "once\n", "k-10", i % 2 ? other : app);
          const text = await res.text();
          if (res.status !== 409) return { status: res.status, text };
          expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
          await new Promise((r) => setTimeout(r, 10));
        }
        throw new Error("never got the answer");
      }),
    );
    expect(new Set(answers.map((a) => `${a.status} ${a.text}`)).size).toBe(1);
    expect(answers[0]!.status).toBe(200);
    expect(changes.get(`${t.tenant}:c.txt`)).toBe(1);
  });

  it("a key claimed by a run still going: CONFLICT with Retry-After, nothing runs; after the lease a retry takes it over and runs", async () => {
    const t = await newTenant(app, UNGATED);
    const limits = durableLimits(env.LIMITS);
    const key = await claimed(t, "busy");
    const held = await limits.claimKey(t.tenant, { key, leaseMs: 60_000, keepMs: 3600_000 });
    expect(held.taken).toBe(true);
    const busy = await write(t, "c\n", "busy");
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as any).error.code).toBe("CONFLICT");
    expect(Number(busy.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(changes.get(`${t.tenant}:c.txt`)).toBeUndefined();
    // A crashed run: its claim's lease is over (lease 0), no answer kept: the retry takes the key over.
    const crashed = await limits.claimKey(t.tenant, { key: await claimed(t, "crashed"), leaseMs: 0, keepMs: 3600_000 });
    expect(crashed.taken).toBe(true);
    const taken = await write(t, "c\n", "crashed");
    expect(taken.status).toBe(200);
    expect(changes.get(`${t.tenant}:c.txt`)).toBe(1);
  });

  it("another API key of the tenant sending a key the first holds (running, then answered) runs its own request: no CONFLICT, no refusal", async () => {
    const t = await newTenant(app, UNGATED);
    const second = (await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write"] })).body as { key: string };
    const held = await durableLimits(env.LIMITS).claimKey(t.tenant, { key: await claimed(t, "first-holds"), leaseMs: 60_000, keepMs: 3600_000 });
    expect(held.taken).toBe(true);
    expect((await write(t, "c\n", "first-holds")).status).toBe(409);
    const asSecond = (content: string, key: string) => write({ ...t, key: second.key }, content, key);
    expect((await asSecond("c\n", "first-holds")).status).toBe(200);
    expect((await write(t, "d\n", "first-answered")).status).toBe(200);
    const other = await asSecond("e\n", "first-answered"); // another request under the string the first key used: its own
    expect(other.status, await other.clone().text()).toBe(200);
    expect(other.headers.get("idempotent-replayed")).toBeNull();
    expect(changes.get(`${t.tenant}:c.txt`)).toBe(3);
  });

  it("an answer not kept (a 5xx) drops the claim: a retry runs again", async () => {
    const t = await newTenant(app, UNGATED);
    const limits = durableLimits(env.LIMITS);
    const key = await sha256Hex("k-5xx");
    const first = await limits.claimKey(t.tenant, { key, leaseMs: 60_000, keepMs: 3600_000 });
    await limits.releaseClaim(t.tenant, key, first.claim.id);
    expect((await limits.claimKey(t.tenant, { key, leaseMs: 60_000, keepMs: 3600_000 })).taken).toBe(true);
    // A release naming another claim leaves the holder's claim standing.
    await limits.releaseClaim(t.tenant, key, first.claim.id);
    expect((await limits.claimKey(t.tenant, { key, leaseMs: 60_000, keepMs: 3600_000 })).taken).toBe(false);
  });
});
