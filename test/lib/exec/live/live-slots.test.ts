/**
 * A live sandbox's concurrent_runs slot frees once its holder is gone (issue #29, docs/live-sessions.md
 * "Its slot"): on the real app with the LIVE Durable Object and the fake live runner. Before, a restart
 * (wrangler dev reloading, a redeploy) or a killed runner left the slot held until its lease ran out
 * (the maximum life and a minute): with concurrent_runs 1 the first keep_alive call after a restart was refused.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { durableLiveCoordinator, type LiveObjects } from "../../../../lib/runtime/live-coordinator.js";
import type { UsageRecord } from "../../../../lib/run/metering/record.js";
import { newTenant, testApp, UNGATED, type Tenant, type TestApp } from "../../../helpers.js";
import { fakeLiveRunner } from "../../../support/fake-live-runner.js";
import { FAST, STEADY } from "./coordinator-conformance.js";
import { liveApp, okOutput, SECRET } from "./live-app.js";

const bash = (t: Tenant, command: string, session: string, more: Record<string, unknown> = {}) => t.call("bash", { command, keep_alive: true, timeout: 2, ...more }, session);
const sandbox = (t: Tenant, session: string, method = "GET") => t.req(`/v1/workspaces/${t.ws}/sessions/${session}/sandbox`, { method });

/** The tenant `t` through another app (its key, its workspace). */
function through(app: TestApp, t: Tenant): Tenant {
  const req = async (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, ...(init.headers as Record<string, string> | undefined) } });
  const call = async (tool: string, args: unknown, session?: string) => {
    const r = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", ...(session ? { "x-session-id": session } : {}) }, body: JSON.stringify(args) });
    return { status: r.status, body: (await r.json()) as any };
  };
  return { ...t, app, req, call };
}

/**
 * The service as after a restart: the same storage and limits, a new runner, and live objects that know
 * nothing of the sessions (a Durable Object's memory is gone after a reload or a redeploy; here: the same
 * namespace under other names).
 */
function restarted(limits: ReturnType<typeof memoryLimits>, round: string) {
  const runner = fakeLiveRunner();
  const forgot: LiveObjects = { idFromName: (name) => env.LIVE.idFromName(`${round} ${name}`), get: (id) => env.LIVE.get(id) as never };
  const app = testApp({ executor: runner.executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", liveCoordinator: durableLiveCoordinator(forgot, STEADY), liveBusyWaitMs: 100, limits });
  runner.attach(app);
  return { app, runner };
}

describe("a live sandbox's concurrent_runs slot, once its holder is gone", () => {
  it("after a restart the slot of a sandbox the service no longer knows is freed by the first call that finds the limit full: a live start, then a fresh run", async () => {
    const limits = memoryLimits();
    const { app } = liveApp({}, { limits });
    const t = await newTenant(app, UNGATED);
    await limits.set(t.tenant, { concurrent_runs: 1 });
    okOutput(await bash(t, "one", "s-1"));
    expect((await bash(t, "two", "s-2")).status).toBe(429); // a sandbox that runs keeps its slot

    const after = restarted(limits, `restart-${Date.now()}`);
    const t2 = through(after.app, t);
    expect(okOutput(await bash(t2, "two", "s-2"))).toContain("live sandbox started");
    // Its own slot is held as any live sandbox's: the next call past the limit is refused, and says when slots free.
    const fresh = await bash(t2, "three", "s-3", { keep_alive: false });
    expect(fresh.status).toBe(429);
    expect(fresh.body.error.message).toContain("DELETE /v1/workspaces/{ws}/sessions/{session}/sandbox");
    expect(fresh.body.error.message).toContain("its runner gone (a restart, a crash), found by the next call past the limit");
    expect(fresh.body.error.details).not.toHaveProperty("holders"); // which sessions hold slots stays inside
    expect((await sandbox(t2, "s-2", "DELETE")).status).toBe(200);
    expect(okOutput(await bash(t2, "three", "s-3", { keep_alive: false }))).toContain("fresh cmd=three\n");
    // The same session after the restart: its old generation's slot is not its new one's.
    okOutput(await bash(t2, "four", "s-1"));
    await sandbox(t2, "s-1", "DELETE");
    await sandbox(t, "s-1", "DELETE");
  });

  it("a killed runner (no poll since): its slot is freed once it is taken for lost, by a call of another session, and its end is accounted once", async () => {
    const limits = memoryLimits();
    const usage: UsageRecord[] = [];
    const { app, runner } = liveApp({ timings: FAST }, { limits, onUsage: (u) => void usage.push(u) });
    const t = await newTenant(app, UNGATED);
    await limits.set(t.tenant, { concurrent_runs: 1 });
    okOutput(await bash(t, "one", "k-1"));
    runner.kill();
    await runner.generations[0]!.done;
    await new Promise((r) => setTimeout(r, FAST.poll_ms + FAST.stale_ms + 200));
    const r = await t.call("bash", { command: "two", timeout: 2 }, "k-2"); // a fresh run finds the limit full
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(usage.filter((u) => u.route === "live sandbox")).toHaveLength(1); // the lost sandbox's end, written by the acquirer that found it
    const lost = await bash(t, "again", "k-1");
    expect(okOutput(lost)).toContain("[live sandbox lost: it stopped answering");
    expect(usage.filter((u) => u.route === "live sandbox")).toHaveLength(1); // not twice
    await sandbox(t, "k-1", "DELETE");
  });
});
