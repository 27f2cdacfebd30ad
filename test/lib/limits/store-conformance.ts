/**
 * The limits store's conformance suite (lib/limits/store.ts): what every LimitsStore answers,
 * through two handles on one store (two instances or isolates sharing it), on a clock the test
 * moves. memory-limits.node.test.ts runs it over memoryLimits; dynamodb-limits.node.test.ts over
 * DynamoDB (dynalite). The Durable Object runs the same semantics in durable-limits.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { LimitsStore } from "../../../lib/limits/store.js";
import { ALLOWANCE_MS } from "../../../lib/limits/held-room.js";

export interface Clock {
  now: () => number;
  advance(ms: number): void;
}

export const clock = (start = Date.now()): Clock => {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
};

/** Two handles on one store, on the clock given. */
export type MakeStores = (now: () => number) => { a: LimitsStore; b: LimitsStore };

let n = 0;
const tenantName = (what: string) => `${what}-${Date.now().toString(36)}-${(n++).toString(36)}`;

export function describeLimitsStore(name: string, make: MakeStores) {
  describe(`limits store conformance: ${name}`, { timeout: 120_000 }, () => {
    it("limits: unset is {}, set replaces, both handles see the same", async () => {
      const { a, b } = make(clock().now);
      const t = tenantName("l");
      expect(await a.get(t)).toEqual({});
      expect(await a.set(t, { workspaces: 2, calls_per_minute: 10 })).toEqual({ workspaces: 2, calls_per_minute: 10 });
      expect(await b.get(t)).toEqual({ workspaces: 2, calls_per_minute: 10 });
      await b.set(t, { storage_bytes: 5 });
      expect(await a.get(t)).toEqual({ storage_bytes: 5 });
    });

    it("200 concurrent calls at 100/min through two handles, the clock standing still: exactly 100 pass; the rest are told when to retry; a minute later the bucket is full again", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("c");
      await a.set(t, { calls_per_minute: 100 });
      const ds = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).takeCall(t, { key_id: `k${i % 3}` })));
      expect(ds.filter((d) => d.ok)).toHaveLength(100);
      const refused = ds.filter((d) => !d.ok);
      expect(refused).toHaveLength(100);
      for (const d of refused) expect(d).toMatchObject({ ok: false, retry_after: 1, remaining: 0, limit: 100, policy: "tenant" });
      c.advance(60_000);
      expect(await a.takeCall(t, { key_id: "k0" })).toMatchObject({ ok: true, remaining: 99 });
    });

    it("a key's own limit binds it alone; its bucket refills with time", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("k");
      const small = { key_id: "small", limits: { calls_per_minute: 2 } };
      expect((await a.takeCall(t, small)).ok).toBe(true);
      expect((await b.takeCall(t, small)).ok).toBe(true);
      expect(await a.takeCall(t, small)).toMatchObject({ ok: false, policy: "key", limit: 2, remaining: 0, retry_after: 30 });
      expect((await b.takeCall(t, { key_id: "other" })).ok).toBe(true);
      c.advance(30_000);
      expect((await b.takeCall(t, small)).ok).toBe(true);
    });

    it("a key made by a limited key draws from its maker's bucket and run slots too, across handles (siblings share them)", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("m");
      const maker = { key_id: "maker", limits: { calls_per_minute: 3, concurrent_runs: 1 } };
      const child = (id: string) => ({ key_id: id, limits: maker.limits, maker_limits: [maker] });
      expect((await a.takeCall(t, maker)).ok).toBe(true);
      expect((await b.takeCall(t, child("c1"))).ok).toBe(true);
      expect((await a.takeCall(t, child("c2"))).ok).toBe(true);
      expect(await b.takeCall(t, child("c3"))).toMatchObject({ ok: false, policy: "key", limit: 3, remaining: 0 });
      expect((await a.takeCall(t, { key_id: "other" })).ok).toBe(true);
      const run = await a.acquireRun(t, child("c1"), 60_000);
      expect(run.ok).toBe(true);
      expect(await b.acquireRun(t, child("c2"), 60_000)).toMatchObject({ ok: false, by: "key", limit: 1 });
      expect(await b.acquireRun(t, maker, 60_000)).toMatchObject({ ok: false, by: "key" });
      if (run.ok) await b.releaseRun(t, run.lease);
      expect((await a.acquireRun(t, maker, 60_000)).ok).toBe(true);
    });

    it("concurrent_runs: at most the limit across handles; a release frees a slot; a lease not released ends with its time", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("r");
      await a.set(t, { concurrent_runs: 2 });
      const ds = await Promise.all([a, b, a].map((s) => s.acquireRun(t, { key_id: "k" }, 60_000)));
      expect(ds.filter((d) => d.ok)).toHaveLength(2);
      expect(ds.find((d) => !d.ok)).toMatchObject({ ok: false, running: 2, limit: 2, retry_after: 60 });
      const held = ds.filter((d) => d.ok).map((d) => (d.ok ? d.lease : ""));
      expect(new Set(held).size).toBe(2); // lease ids never repeat
      await b.releaseRun(t, held[0]!);
      expect((await a.acquireRun(t, { key_id: "k" }, 60_000)).ok).toBe(true);
      expect((await b.acquireRun(t, { key_id: "k" }, 60_000)).ok).toBe(false);
      c.advance(60_000); // every lease ended
      expect(await a.acquireRun(t, { key_id: "k" }, 1_000)).toMatchObject({ ok: true, running: 1 });
    });

    it("concurrent_runs holders: a fresh run's holder (its run id) round-trips beside a live sandbox's, named with its lease in a refusal across handles; only the holder's own fields are kept", async () => {
      const { a, b } = make(clock().now);
      const t = tenantName("r");
      await a.set(t, { concurrent_runs: 2 });
      const run = { workspace: "w-1", run: "r0123456789abcde" };
      const live = { workspace: "w-1", session: "s-1", generation: "g_0123456789abcdef" };
      const ran = await a.acquireRun(t, { key_id: "k" }, 60_000, { ...run, extra: "dropped" } as typeof run);
      const lived = await b.acquireRun(t, { key_id: "k" }, 60_000, live);
      const refused = await b.acquireRun(t, { key_id: "k" }, 60_000, run);
      expect(refused).toMatchObject({ ok: false, running: 2 });
      expect(!refused.ok && refused.holders).toEqual([{ lease: ran.ok ? ran.lease : "", holder: run }, { lease: lived.ok ? lived.lease : "", holder: live }]);
    });

    it("concurrent_runs holders: a lease's holder (a live sandbox) round-trips, named with its lease in a refusal across handles; a lease without one, or past a key's own limit another key's, is not named", async () => {
      const { a, b } = make(clock().now);
      const t = tenantName("h");
      await a.set(t, { concurrent_runs: 3 });
      const holder = { workspace: "w-1", session: "chat/ü 1", generation: "g_0123456789abcdef" };
      const live = await a.acquireRun(t, { key_id: "k" }, 60_000, holder);
      const fresh = await b.acquireRun(t, { key_id: "k" }, 60_000);
      const other = await b.acquireRun(t, { key_id: "k2" }, 60_000, { ...holder, session: "s-2" });
      expect([live.ok, fresh.ok, other.ok]).toEqual([true, true, true]);
      const refused = await b.acquireRun(t, { key_id: "k" }, 60_000, holder);
      expect(refused).toMatchObject({ ok: false, running: 3, limit: 3, by: "tenant" });
      expect(!refused.ok && refused.holders).toEqual([{ lease: live.ok ? live.lease : "", holder }, { lease: other.ok ? other.lease : "", holder: { ...holder, session: "s-2" } }]);
      // Past the key's own limit: the key's leases alone are counted, and named.
      const byKey = await a.acquireRun(t, { key_id: "k2", limits: { concurrent_runs: 1 } }, 60_000);
      expect(byKey).toMatchObject({ ok: false, running: 1, limit: 1, by: "key" });
      expect(!byKey.ok && byKey.holders).toEqual([{ lease: other.ok ? other.lease : "", holder: { ...holder, session: "s-2" } }]);
      await a.releaseRun(t, live.ok ? live.lease : "");
      const again = await b.acquireRun(t, { key_id: "k" }, 60_000);
      expect(again).toMatchObject({ ok: true, running: 3 });
      expect(await a.acquireRun(t, { key_id: "k" }, 60_000)).not.toHaveProperty("lease");
    });

    it("storage: a first count, charges refused past files_per_workspace and storage_bytes (nothing charged), concurrent charges exact, give-backs and recounts", async () => {
      const { a, b } = make(clock().now);
      const t = tenantName("s");
      const k = { key_id: "k" };
      await a.set(t, { files_per_workspace: 10, storage_bytes: 1000 });
      expect(await a.chargeStorage(t, k, "w1", { files: 1, bytes: 1 })).toEqual({ ok: false, unknown: true });
      expect(await b.chargeStorage(t, k, "w1", { files: 1, bytes: 100 }, { init: { files: 2, bytes: 200 } })).toEqual({ ok: true, files: 3, bytes: 300, tenant_bytes: 300 });
      // 20 writers racing for 7 free places: exactly 7 pass.
      const ds = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).chargeStorage(t, k, "w1", { files: 1, bytes: 10 })));
      expect(ds.filter((d) => d.ok)).toHaveLength(7);
      expect(ds.find((d) => !d.ok)).toEqual({ ok: false, quota: "files_per_workspace", usage: 10, limit: 10 });
      expect(await a.chargeStorage(t, k, "w2", { files: 1, bytes: 700 }, { init: { files: 0, bytes: 0 } })).toEqual({ ok: false, quota: "storage_bytes", usage: 370, limit: 1000 });
      expect(await a.chargeStorage(t, k, "w2", { files: 1, bytes: 630 })).toEqual({ ok: true, files: 1, bytes: 630, tenant_bytes: 1000 }); // w2 was counted by the refused charge's init
      expect(await b.chargeStorage(t, k, "w1", { files: -5, bytes: -70 })).toEqual({ ok: true, files: 5, bytes: 300, tenant_bytes: 930 });
      await b.setStorage(t, "w2", null);
      expect(await a.chargeStorage(t, k, "w1", { files: 0, bytes: 700 })).toEqual({ ok: true, files: 5, bytes: 1000, tenant_bytes: 1000 });
      await a.setStorage(t, "w1", { files: 1, bytes: 1 });
      expect(await b.chargeStorage(t, k, "w1", { files: 0, bytes: 0 })).toEqual({ ok: true, files: 1, bytes: 1, tenant_bytes: 1 });
      // Where the quotas stand for a caller (what an import and a packed write-back bound themselves by), through either handle; a key's own limits apply.
      expect(await a.chargeStorage(t, k, "w1", { files: 0, bytes: 0 }, { standing: true })).toMatchObject({ ok: true, standing: { storage_bytes: { usage: 1, limit: 1000 }, files_per_workspace: { usage: 1, limit: 10 } } });
      expect(await b.chargeStorage(t, { key_id: "k2", limits: { storage_bytes: 500 } }, "w1", { files: 0, bytes: 0 }, { standing: true })).toMatchObject({ ok: true, standing: { storage_bytes: { usage: 1, limit: 500 }, files_per_workspace: { usage: 1, limit: 10 } } });
    });

    it("storage allowances: room held for one handle counts as used for the other; a settle counts what was spent and holds on; the room ends after ALLOWANCE_MS; a late settle still counts", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("al");
      const k = { key_id: "k" };
      await a.set(t, { storage_bytes: 640_000 }); // an allowance holds at most 640,000 / 64 = 10,000 bytes
      const first = await a.chargeStorage(t, k, "w", { files: 1, bytes: 100 }, { init: { files: 0, bytes: 0 }, reserve: { files: 64, bytes: 100_000 } });
      expect(first).toMatchObject({ ok: true, files: 1, bytes: 100, allowance: { files: 64, bytes: 10_000 } });
      const id = first.ok ? first.allowance!.id : "";
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 629_901 })).toEqual({ ok: false, quota: "storage_bytes", usage: 10_100, limit: 640_000 });
      const settled = await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { settle: { id, spent: { files: 0, bytes: 60 }, used: { files: 0, bytes: 60 } }, reserve: { files: 64, bytes: 100_000 } });
      expect(settled).toMatchObject({ ok: true, bytes: 160, allowance: { id, bytes: 10_000 } });
      c.advance(ALLOWANCE_MS);
      expect(await b.chargeStorage(t, k, "w", { files: 0, bytes: 639_840 })).toMatchObject({ ok: true, bytes: 640_000 });
      expect(await a.chargeStorage(t, k, "w", { files: 0, bytes: 0 }, { settle: { id, spent: { files: 1, bytes: 0 }, used: { files: 1, bytes: 0 } } })).toMatchObject({ ok: true, files: 2, bytes: 640_000 });
    });

    it("calls taken ahead (extra, leaseCalls): at most what the bucket refills in LEASE_MS per answer, and only what it holds; a refused call is given nothing", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("lease");
      await a.set(t, { calls_per_minute: 60 }); // at most 10 ahead per answer
      expect(await a.takeCall(t, { key_id: "k" }, undefined, 50)).toMatchObject({ ok: true, extra: 10, remaining: 49 });
      expect(await b.leaseCalls(t, { key_id: "k" }, 50)).toMatchObject({ granted: 10, remaining: 39 });
      expect(await b.leaseCalls(t, { key_id: "k" }, 5)).toMatchObject({ granted: 5, remaining: 34 });
      for (let i = 0; i < 3; i++) await a.leaseCalls(t, { key_id: "k" }, 10);
      expect(await b.leaseCalls(t, { key_id: "k" }, 10)).toMatchObject({ granted: 4, remaining: 0 });
      expect(await a.takeCall(t, { key_id: "k" }, undefined, 10)).toMatchObject({ ok: false, extra: 0 });
      expect(await a.leaseCalls(t, { key_id: "k" }, 10)).toMatchObject({ granted: 0 });
    });

    it("workspace slots: each create sees the others pending, across handles, until released or ended", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("w");
      await a.set(t, { workspaces: 3 });
      const one = await a.reserveWorkspace(t, { key_id: "k" }, 10_000);
      const two = await b.reserveWorkspace(t, { key_id: "k", limits: { workspaces: 2 } }, 10_000);
      expect(one).toMatchObject({ pending: 0, limit: 3 });
      expect(two).toMatchObject({ pending: 1, limit: 2 });
      expect(one.slot).not.toBe(two.slot);
      await b.releaseWorkspace(t, one.slot);
      expect(await a.reserveWorkspace(t, { key_id: "k" }, 10_000)).toMatchObject({ pending: 1 });
      c.advance(10_000);
      expect(await b.reserveWorkspace(t, { key_id: "k" }, 10_000)).toMatchObject({ pending: 0 });
    });

    it("checkpoint slots: each checkpoint of a workspace sees the others' ids, across handles, not another workspace's, until released or ended; the limit is the smaller of key and tenant", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("cp");
      await a.set(t, { checkpoints_per_workspace: 5 });
      expect(await a.reserveCheckpoint(t, { key_id: "k" }, "w1", "cp1", 10_000)).toEqual({ pending: [], limit: 5 });
      expect(await b.reserveCheckpoint(t, { key_id: "k", limits: { checkpoints_per_workspace: 2 } }, "w1", "cp2", 10_000)).toEqual({ pending: ["cp1"], limit: 2 });
      expect(await b.reserveCheckpoint(t, { key_id: "k" }, "w2", "cp3", 10_000)).toMatchObject({ pending: [] });
      await b.releaseCheckpoint(t, "cp1");
      expect(await a.reserveCheckpoint(t, { key_id: "k" }, "w1", "cp4", 10_000)).toMatchObject({ pending: ["cp2"] });
      c.advance(10_000);
      expect(await b.reserveCheckpoint(t, { key_id: "k" }, "w1", "cp5", 10_000)).toMatchObject({ pending: [] });
    });

    it("background tasks: the limit across handles, by id (taking one's own again is no new place), released by id, ended by time", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("t");
      await a.set(t, { background_tasks: 2 });
      expect(await a.acquireTask(t, { key_id: "k" }, "x", 5_000)).toEqual({ ok: true, running: 1, limit: 2 });
      expect(await b.acquireTask(t, { key_id: "k" }, "x", 5_000)).toEqual({ ok: true, running: 1, limit: 2 });
      expect(await b.acquireTask(t, { key_id: "k" }, "y", 5_000)).toEqual({ ok: true, running: 2, limit: 2 });
      expect(await a.acquireTask(t, { key_id: "k" }, "z", 5_000)).toEqual({ ok: false, running: 2, limit: 2, tasks: ["x", "y"], retry_after: 5 });
      await b.releaseTasks(t, ["x"]);
      expect((await a.acquireTask(t, { key_id: "k" }, "z", 5_000)).ok).toBe(true);
      c.advance(5_000);
      expect(await b.acquireTask(t, { key_id: "k" }, "w", 5_000)).toEqual({ ok: true, running: 1, limit: 2 });
    });

    it("Idempotency-Key claims: 10 concurrent claims of one key through two handles, one taken; a takeover only of the claim seen once its lease is over; a release only of one's own; a refused call claims nothing", async () => {
      const c = clock();
      const { a, b } = make(c.now);
      const t = tenantName("idem");
      const ask = (over?: string) => ({ key: "e".repeat(64), leaseMs: 1_000, keepMs: 60_000, ...(over ? { over } : {}) });
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).claimKey(t, ask())));
      const taken = answers.filter((x) => x.taken);
      expect(taken).toHaveLength(1);
      const holder = taken[0]!.claim;
      for (const x of answers) expect(x.claim.id).toBe(holder.id);
      expect((await b.claimKey(t, ask(holder.id))).taken).toBe(false); // its lease is still on
      c.advance(1_000);
      expect((await a.claimKey(t, ask("not-the-claim-seen"))).taken).toBe(false);
      const over = await b.claimKey(t, ask(holder.id));
      expect(over.taken).toBe(true);
      expect((await a.claimKey(t, ask(holder.id))).taken).toBe(false); // a second retry that saw the old claim comes late
      await a.releaseClaim(t, ask().key, holder.id); // not the holder's any more: nothing
      expect((await b.claimKey(t, ask())).claim.id).toBe(over.claim.id);
      await a.releaseClaim(t, ask().key, over.claim.id);
      const again = await b.takeCall(t, { key_id: "k1" }, ask());
      expect(again.ok && again.claim?.taken).toBe(true);
      await a.set(t, { calls_per_minute: 1 });
      expect((await b.takeCall(t, { key_id: "k2" })).ok).toBe(true); // the minute's one call
      const refused = await a.takeCall(t, { key_id: "k2" }, { ...ask(), key: "f".repeat(64) });
      expect(refused.ok).toBe(false);
      expect(refused.claim).toBeUndefined();
      c.advance(60_000); // the first claim's keep is over: the key is free
      expect((await a.claimKey(t, ask())).taken).toBe(true);
    });
  });
}
