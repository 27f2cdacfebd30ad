/**
 * What time to interactive costs the API (issue #31 §4; docs/benchmarks/investigations-time-to-interactive.md,
 * "Fewer storage and coordinator operations"): create a workspace, then its first `bash node -v`, on the Workers app as
 * deployed (lib/runtime/workers.ts fromWorkersEnv: local R2 and KV, the tenant's LIMITS object, the
 * usage object) with a runner that speaks the real runner protocol in-process
 * (test/support/protocol-runner.ts). Counted, not timed: every storage operation by kind
 * (test/support/counting-stores.ts), every request into the app (the client's and the runner's),
 * every call to the LIMITS object. And the guarantees the cuts must keep: a retried invocation does
 * not run the command again, a second create of the same id is refused, the call's usage is recorded.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../../lib/api/app.js";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import type { LimitsStore } from "../../../lib/limits/store.js";
import type { UsageRecord } from "../../../lib/run/metering/record.js";
import { fromWorkersEnv, type WorkersEnv } from "../../../lib/runtime/workers.js";
import { tools as allTools } from "../../../functions/index.js";
import type { UsageSink } from "../../../lib/run/metering/usage.js";
import { countingStores, sorted } from "../../support/counting-stores.js";
import { protocolRunner } from "../../support/protocol-runner.js";
import { admin, executionContext } from "../../helpers.js";

/** The LIMITS object with every call logged by operation. */
function countingLimits(log: string[]): LimitsStore {
  const base = durableLimits(env.LIMITS);
  return new Proxy(base, {
    get(target, name: keyof LimitsStore) {
      const f = target[name] as (...a: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => (log.push(String(name)), f(...args));
    },
  }) as LimitsStore;
}

async function setup() {
  const stores = countingStores();
  const limitCalls: string[] = [];
  const usage: UsageRecord[] = [];
  const runner = protocolRunner();
  const deps = fromWorkersEnv(env as unknown as WorkersEnv);
  // The deployed sink (the usage object, after the answer), with every record it is given also kept here.
  const sink = deps.onUsage;
  const onUsage: UsageSink = Object.assign((u: UsageRecord) => (usage.push(u), sink?.(u)), sink?.held ? { held: (u: UsageRecord) => (usage.push(u), sink.held!(u)) } : {});
  const app = createApp({ ...deps, storage: stores.storage, kv: stores.kv, limits: countingLimits(limitCalls), executor: runner.executor, syncSecret: "tti-cost-secret-0123456789abcdef", syncUrl: "http://toolshed.internal", onUsage }, allTools);
  const { ctx, settle } = executionContext();
  runner.attach(app, ctx);
  const tenant = `tti-${Math.random().toString(36).slice(2, 10)}`;
  expect((await admin(app, "/v1/admin/tenants", { id: tenant })).status).toBe(201);
  const key = (await admin(app, `/v1/admin/tenants/${tenant}/keys`, {})).body.key as string;
  const clientRequests: string[] = [];
  const request = async (method: string, path: string, body: unknown) => {
    clientRequests.push(`${method} ${path}`);
    const res = await app.request(path, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }, env, ctx);
    return { status: res.status, body: (await res.json()) as any };
  };
  /** One create + first `node -v`: what each step cost, the work after the answers included. */
  const createAndRun = async (id: string) => {
    await settle();
    for (const list of [stores.log, stores.steps, limitCalls, runner.requests, clientRequests, usage]) list.length = 0;
    const made = await request("POST", "/v1/workspaces", { id });
    const ran = await request("POST", `/v1/workspaces/${id}/tools/bash`, { command: "node -v" });
    await settle();
    return { made, ran, storage: sorted(stores.log), limits: sorted(limitCalls), requests: [...clientRequests, ...runner.requests], usage: [...usage] };
  };
  return { createAndRun, request, runner, stores, settle, tenant, app };
}

/** The operations with the tenant's name and the time in keys put as <tenant> and <time>. */
const named = (ops: string[], tenant: string) => sorted(ops.map((o) => o.replaceAll(tenant, "<tenant>").replace(/\/audit\/\d{8}T\d+Z.*$/, "/audit/<time>")));

describe("time to interactive: create + first bash on the Workers app", () => {
  it("costs 10 storage operations (5 PUT, 3 GET, 1 LIST, 1 DELETE), 4 requests into the app and 4 LIMITS round trips", async () => {
    const { createAndRun, tenant } = await setup();
    await createAndRun("warm-up"); // the isolate's first: the key, the call pool, the tenant's settings
    const r = await createAndRun("w1");
    expect(r.made.status, JSON.stringify(r.made.body)).toBe(201);
    expect(r.ran.body.ok, JSON.stringify(r.ran.body)).toBe(true);
    expect(r.ran.body.output).toBe("v20.0.0\n");
    expect(named(r.storage, tenant)).toEqual(
      sorted([
        // create: the record (create-only), the tenant's audit entry (after the answer); the workspaces quota's count is the
        // LIMITS object's (the warm-up's listing, alone, and the creates since): no listing
        "r2.put meta.json",
        "r2.put other:t/<tenant>/audit/<time>",
        // bash: the session's saved shell (none); the record is the one this isolate just wrote (no GET)
        "r2.get internal:shells",
        // the runner's claim and its manifest, one request (the claim, the record, the upper listing, the execute bits), its result
        "r2.put internal:runs",
        "r2.get meta.json",
        "r2.list file",
        "r2.get internal:modes.json",
        "r2.put internal:runs",
        // after the answer: the run record deleted (claim and result, one request), the call's audit entry
        "r2.delete internal:runs",
        "r2.put internal:audit",
      ]),
    );
    // The shell ended where a new one starts: nothing saved, nothing listed.
    expect(r.storage.filter((o) => o.endsWith(" internal:shells"))).toEqual(["r2.get internal:shells"]);
    // The claim rides on the manifest request (infra/container/riding-claim.ts): no POST /v1/sync/run/claim.
    expect(r.requests).toEqual(["POST /v1/workspaces", "POST /v1/workspaces/w1/tools/bash", "POST /v1/sync/manifest", "PUT /v1/sync/run/result"]);
    // The pool's refill (leaseCalls) comes once in a while, after an answer: not counted here.
    expect(r.limits.filter((n) => n !== "leaseCalls")).toEqual(sorted(["reserveWorkspace", "releaseWorkspace", "acquireRun", "releaseRun"]));
    // Usage: the create and the bash call are both recorded.
    expect(r.usage.map((u) => u.tool ?? u.route)).toEqual(expect.arrayContaining(["POST workspaces", "bash"]));
    expect(r.usage.find((u) => u.tool === "bash")).toMatchObject({ workspace: "w1", ok: true });
  }, 120_000);

  it("keeps the guarantees: a second create of the same id is refused, a deleted workspace's record is not trusted, a retried invocation runs nothing again", async () => {
    const { createAndRun, request, runner } = await setup();
    const first = await createAndRun("w2");
    expect(first.ran.body.ok, JSON.stringify(first.ran.body)).toBe(true);
    const again = await request("POST", "/v1/workspaces", { id: "w2" });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("ALREADY_EXISTS");
    // Deleted through this isolate: the record it knew is forgotten, so bash reads it and finds nothing.
    expect((await request("DELETE", "/v1/workspaces/w2", undefined)).status).toBe(200);
    const gone = await request("POST", "/v1/workspaces/w2/tools/bash", { command: "node -v" });
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe("NOT_FOUND");
    // A retried invocation (its first answer lost on the way back): the retry finds the claim and the result, and answers that result.
    const ranBefore = runner.ran;
    runner.retryEach = true;
    const retried = await createAndRun("w3");
    expect(retried.ran.body.ok, JSON.stringify(retried.ran.body)).toBe(true);
    expect(retried.ran.body.output).toBe("v20.0.0\n");
    expect(runner.ran - ranBefore).toBe(1);
    // Both attempts' claims rode on their manifest requests: the second found the first's claim and result.
    expect(retried.requests.filter((q) => q === "POST /v1/sync/manifest")).toHaveLength(2);
    expect(retried.requests.filter((q) => q === "POST /v1/sync/run/claim")).toHaveLength(0);
    // What the run record costs with the retry: the first attempt's claim and result, the retry's claim (refused: the
    // first's is there), then the claim and the result read side by side; one DELETE of both after the answer.
    expect(retried.storage.filter((o) => o.endsWith(" internal:runs"))).toEqual(sorted(["r2.put internal:runs", "r2.put internal:runs", "r2.put internal:runs", "r2.get internal:runs", "r2.get internal:runs", "r2.delete internal:runs"]));
  }, 120_000);

  it("the workspaces quota holds on the LIMITS object's count: creates up to the limit pass without a listing, the next is refused; a delete makes the next create list again", async () => {
    const { request, stores, tenant, settle, app } = await setup();
    expect((await admin(app, `/v1/admin/tenants/${tenant}/limits`, { workspaces: 3 }, "PUT")).status).toBe(200);
    const lists = () => stores.log.filter((o) => o === `r2.list other:t/${tenant}/w/`).length;
    expect((await request("POST", "/v1/workspaces", { id: "a" })).status).toBe(201);
    expect(lists()).toBe(1); // the first create lists (alone): the object keeps 1
    expect((await request("POST", "/v1/workspaces", { id: "b" })).status).toBe(201);
    expect((await request("POST", "/v1/workspaces", { id: "c" })).status).toBe(201);
    const over = await request("POST", "/v1/workspaces", { id: "d" });
    expect(over.status).toBe(413);
    expect(over.body.error.code).toBe("QUOTA_EXCEEDED");
    expect(lists()).toBe(1);
    // A delete: the count is forgotten; the next create lists, finds 2, and passes.
    expect((await request("DELETE", "/v1/workspaces/c", undefined)).status).toBe(200);
    await settle();
    expect((await request("POST", "/v1/workspaces", { id: "d" })).status).toBe(201);
    expect(lists()).toBe(2);
    expect((await request("POST", "/v1/workspaces", { id: "e" })).body.error.code).toBe("QUOTA_EXCEEDED");
  }, 120_000);
});
