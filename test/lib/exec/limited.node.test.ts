/** concurrent_runs: the executor holds a slot of the tenant's limits while a command runs. */
import { describe, expect, it } from "vitest";
import { limitedExecutor, runLeaseMs } from "../../../lib/exec/limited.js";
import type { Executor, RunRequest, RunResult } from "../../../lib/exec/types.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { ToolError } from "../../../lib/shared/errors.js";

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
