/** concurrent_runs: the executor holds a slot of the tenant's limits while a command runs; every slot is taken through acquireSlot. */
import { describe, expect, it } from "vitest";
import { acquireSlot, limitedExecutor, runLeaseMs } from "../../../lib/exec/limited.js";
import { memoryLiveCoordinator } from "../../../lib/exec/live/memory.js";
import { liveService } from "../../../lib/exec/live/service.js";
import type { Executor, RunRequest, RunResult } from "../../../lib/exec/types.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { ToolError } from "../../../lib/shared/errors.js";
import { FAST } from "./live/coordinator-conformance.js";

/** An executor whose runs end when the test says (the runner's part is tested with the real runner elsewhere). */
function heldExecutor() {
  const waiting: (() => void)[] = [];
  let started = 0;
  const executor: Executor = {
    run: () => {
      started++;
      return new Promise<RunResult>((resolve) => waiting.push(() => resolve({ exit_code: 0 } as unknown as RunResult)));
    },
    start: async () => {},
  };
  return { executor, waiting, started: () => started };
}

const req = (tenant: string): RunRequest => ({ version: 1, idempotency_key: Math.random().toString(36), tenant, workspace: "w", command: "true", timeout_ms: 60_000, sync: { url: "http://x", token: "t" } });

describe("limitedExecutor", () => {
  it("the run past concurrent_runs is RATE_LIMITED naming it, before the runner is invoked; a finished run frees its slot; other tenants are not counted", async () => {
    const limits = memoryLimits();
    await limits.set("a", { concurrent_runs: 2 });
    const held = heldExecutor();
    const ex = limitedExecutor(held.executor, limits);
    const one = ex.run(req("a"));
    const two = ex.run(req("a"));
    await new Promise((r) => setTimeout(r, 0));
    const refused = await ex.run(req("a")).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ToolError);
    expect(refused).toMatchObject({ code: "RATE_LIMITED", details: { limit: "concurrent_runs", running: 2, quota: 2 } });
    expect((refused as ToolError).message).toContain("concurrent_runs: 2");
    expect(held.started()).toBe(2);
    const other = ex.run(req("b")); // another tenant: its own count
    await new Promise((r) => setTimeout(r, 0));
    expect(held.started()).toBe(3);
    held.waiting.shift()!();
    await one;
    const three = ex.run(req("a"));
    await new Promise((r) => setTimeout(r, 0));
    expect(held.started()).toBe(4);
    for (const go of held.waiting.splice(0)) go();
    await Promise.all([two, three, other]);
  });

  it("a run that fails still releases its slot; the lease covers the timeout and its write-back", async () => {
    const limits = memoryLimits();
    await limits.set("a", { concurrent_runs: 1 });
    const ex = limitedExecutor({ run: async () => { throw new ToolError("UNAVAILABLE", "runner down"); }, start: async () => {} }, limits);
    await expect(ex.run(req("a"))).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await expect(ex.run(req("a"))).rejects.toMatchObject({ code: "UNAVAILABLE" }); // not RATE_LIMITED: the slot came back
    expect(runLeaseMs(req("a"))).toBe(60_000 + 15_000 + 60_000);
  });
});

describe("acquireSlot: past the limit, live sandboxes' slots whose holder is gone are freed (issue #29)", () => {
  const caller = { key_id: "k" };
  const holder = (session: string, generation: string) => ({ workspace: "w", session, generation });

  it("a holder its session no longer runs (a coordinator that forgot it, another generation) is freed and the slot taken; a current one, a fresh run's lease and a coordinator that fails keep theirs", async () => {
    const limits = memoryLimits();
    await limits.set("a", { concurrent_runs: 2 });
    const live = liveService(memoryLiveCoordinator(FAST), { limits });
    // A session whose runner is current: its generation as the coordinator made it.
    const b = await live.coordinator.begin({ tenant: "a", workspace: "w", session: "s-live" }, { wait_ms: 0, turn_ms: 60_000 });
    const current = "start" in b ? b.start.generation : "";
    expect((await acquireSlot(limits, "a", caller, 60_000, { holder: holder("s-live", current), live })).ok).toBe(true);
    expect((await acquireSlot(limits, "a", caller, 60_000, { holder: holder("s-gone", "g_old"), live })).ok).toBe(true);
    // The limit full: the forgotten holder's slot goes to this acquirer, the current one's stays.
    expect(await acquireSlot(limits, "a", caller, 60_000, { live })).toMatchObject({ ok: true, running: 2 });
    const refused = await acquireSlot(limits, "a", caller, 60_000, { live });
    expect(refused).toMatchObject({ ok: false, running: 2 });
    expect(!refused.ok && refused.holders?.map((h) => "session" in h.holder && h.holder.session)).toEqual(["s-live"]);
    // A coordinator that does not answer frees nothing (never on a guess); without a live service, nothing is asked.
    const failing = { ...live, coordinator: { ...live.coordinator, status: async () => { throw new Error("down"); } } };
    const l2 = memoryLimits();
    await l2.set("c", { concurrent_runs: 1 });
    expect((await l2.acquireRun("c", caller, 60_000, holder("s-x", "g_x"))).ok).toBe(true);
    expect((await acquireSlot(l2, "c", caller, 60_000, { live: failing })).ok).toBe(false);
    expect((await acquireSlot(l2, "c", caller, 60_000)).ok).toBe(false);
    expect((await acquireSlot(l2, "c", caller, 60_000, { live })).ok).toBe(true); // a coordinator that answers: s-x is not running
  });

  it("a fresh run past the limit frees a forgotten sandbox's slot too (limitedExecutor takes its slot through acquireSlot)", async () => {
    const limits = memoryLimits();
    await limits.set("a", { concurrent_runs: 1 });
    const live = liveService(memoryLiveCoordinator(FAST), { limits });
    expect((await limits.acquireRun("a", caller, 60_000, holder("s-gone", "g_old"))).ok).toBe(true);
    const ran = await limitedExecutor({ run: async () => ({ exit_code: 0 }) as unknown as RunResult, start: async () => {} }, limits, live).run(req("a"));
    expect(ran).toMatchObject({ exit_code: 0 });
  });
});
