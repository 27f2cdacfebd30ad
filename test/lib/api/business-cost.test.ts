/**
 * What the business layer adds to a write's path (issue #28's overhead target): every storage
 * operation (test/support/counting-stores.ts) and every call to the tenant's LIMITS Durable Object
 * is logged, and what runs before the answer is asserted exactly. An Idempotency-Key's claim rides on
 * the rate limit's round trip to the object (lib/limits/claims.ts): the key adds no storage operation
 * and no object round trip before the answer, and its one PUT (the kept answer) runs after it.
 * Also: the object-held key keeps its guarantees (retries run once, in-flight retries wait, a
 * crashed run's key is taken over after its lease).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import type { LimitsStore } from "../../../lib/limits/store.js";
import { sha256Hex } from "../../../lib/shared/hash.js";
import { countingStores, roundTrips, sorted } from "../../support/counting-stores.js";
import type { Workspace } from "../../../lib/workspace/workspace.js";
import { executionContext, newTenant, testApp, UNGATED, upload, type Tenant } from "../../helpers.js";

/** The LIMITS object with every call logged by operation (a takeCall carrying a key's claim: "takeCall+claim"). */
function countingLimits(log: string[]): LimitsStore {
  const base = durableLimits(env.LIMITS);
  return new Proxy(base, {
    get(target, name: keyof LimitsStore) {
      const f = target[name] as (...a: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => {
        log.push(name === "takeCall" && args[2] ? "takeCall+claim" : name);
        return f(...args);
      };
    },
  });
}

async function setup() {
  const stores = countingStores();
  const limitCalls: string[] = [];
  const app = testApp({ storage: stores.storage, kv: stores.kv, limits: countingLimits(limitCalls), undoPruneEvery: 0 });
  const t = await newTenant(app, UNGATED);
  await upload(t, "a.txt", "one\n");
  const { ctx, settle } = executionContext();
  const call = async (tool: string, args: unknown, key?: string) => {
    await settle();
    stores.log.length = 0;
    stores.steps.length = 0;
    limitCalls.length = 0;
    const headers: Record<string, string> = { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1", ...(key ? { "idempotency-key": key } : {}) };
    const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers, body: JSON.stringify(args) }, env, ctx);
    const body = (await res.json()) as any;
    const answered = stores.log.length;
    const limitsOnPath = [...limitCalls];
    const onPath = roundTrips(stores, 0, answered);
    stores.release();
    await settle();
    expect(body.ok, JSON.stringify(body)).toBe(true);
    return { onPath, after: sorted(stores.log.slice(answered)), limitsOnPath, limitsAfter: limitCalls.slice(limitsOnPath.length), replayed: res.headers.get("idempotent-replayed") };
  };
  return { call, t, app };
}

describe("the business layer's cost on a write's path (limits on, Idempotency-Key)", () => {
  it("a write with a key: the same storage round trips before the answer as without one; one object round trip for the rate limit and the key's claim; the kept answer after", async () => {
    const { call } = await setup();
    await call("read", { file_path: "a.txt" });
    const plain = await call("write", { file_path: "a.txt", content: "two\n" });
    const keyed = await call("write", { file_path: "a.txt", content: "three\n" }, "w-1");
    expect(keyed.onPath).toEqual(plain.onPath);
    expect(keyed.onPath.flat().filter((o) => o.endsWith(" idempotency"))).toEqual([]);
    // The rate limit's token and the key's claim in one round trip; the write's storage-quota charge, when the
    // write changes the bytes (4 → 6): a same-size overwrite (one → two) charges nothing, with no round trip.
    expect(plain.limitsOnPath).toEqual(["takeCall"]);
    expect(keyed.limitsOnPath).toEqual(["takeCall+claim", "chargeStorage"]);
    expect(keyed.after.filter((o) => o.endsWith(" idempotency"))).toEqual(["r2.put idempotency"]);
    expect(keyed.limitsAfter).toEqual([]);
    // A retry: the object refuses the claim, the kept answer is read (1 GET), nothing else runs.
    const again = await call("write", { file_path: "a.txt", content: "three\n" }, "w-1");
    expect(again.limitsAfter).toEqual([]);
    expect(again.replayed).toBe("true");
    expect(again.onPath.flat()).toEqual(["r2.get idempotency"]);
    expect(again.limitsOnPath).toEqual(["takeCall+claim"]);
  }, 120_000); // every storage operation waits for a quiet step (counting-stores.ts): slow on a busy machine
});

describe("Idempotency-Key claims held by the LIMITS object", () => {
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
    const key = await sha256Hex("busy");
    const held = await limits.claimKey(t.tenant, { key, leaseMs: 60_000, keepMs: 3600_000 });
    expect(held.taken).toBe(true);
    const busy = await write(t, "c\n", "busy");
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as any).error.code).toBe("CONFLICT");
    expect(Number(busy.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(changes.get(`${t.tenant}:c.txt`)).toBeUndefined();
    // A crashed run: its claim's lease is over (lease 0), no answer kept: the retry takes the key over.
    const crashed = await limits.claimKey(t.tenant, { key: await sha256Hex("crashed"), leaseMs: 0, keepMs: 3600_000 });
    expect(crashed.taken).toBe(true);
    const taken = await write(t, "c\n", "crashed");
    expect(taken.status).toBe(200);
    expect(changes.get(`${t.tenant}:c.txt`)).toBe(1);
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
