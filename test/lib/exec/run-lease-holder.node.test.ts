/**
 * A fresh run's concurrent_runs lease names its run (lib/exec/limited.ts runHolder), so a run whose
 * API instance died before it released the slot frees it once its runner stored its result, found by
 * the next call past the limit (one HEAD of the run's result.json), not when the lease ends (its
 * timeout + write-back + a minute: 210 s for bash's default 120 s). A run still running has no result:
 * its slot is kept (never freed on a guess). The real app over memory storage and the real runner
 * (local executor, bubblewrap); the dead instance is an executor whose call never hears its run's
 * answer, so never releases its slot, while the runner runs it to its end.
 */
import { afterAll, expect, it } from "vitest";
import { memoryLimits } from "../../../lib/limits/store.js";
import { internalPrefix } from "../../../lib/layout/paths.js";
import type { Executor } from "../../../lib/exec/types.js";
import { sandboxApp } from "../doors/sandbox-app.js";
import { until } from "../../infra/container/live-helpers.js";

const limits = memoryLimits();
/** A command marked "# instance dies" is run, and its call waits forever: the slot it took is never released by it. */
const dyingInstance = (e: Executor): Executor => ({
  ...e,
  run: (req, caller) => (req.command?.includes("# instance dies") ? (void e.run(req, caller).catch(() => {}), new Promise(() => {})) : e.run(req, caller)),
});
const { post, tenant, storage, close } = sandboxApp({ limits }, undefined, dyingInstance);
afterAll(close);

it("a run whose instance died frees its slot once its runner stored its result; before, the next call past the limit is refused", async () => {
  const t = await tenant("run-holder");
  await limits.set(t.id, { concurrent_runs: 1 });
  const bash = (command: string) => post("/v1/workspaces/main/tools/bash", { command }, t.key);
  const results = async () => (await storage.list({ prefix: `${internalPrefix(t.id, "main")}runs/` })).objects.filter((o) => o.key.endsWith("/result.json"));

  void bash("sleep 2; printf done > dead.txt # instance dies");
  /** Whether the tenant's one slot is taken (a probe's lease, taken, is given back at once). */
  const full = async () => {
    const d = await limits.acquireRun(t.id, { key_id: "probe" }, 1_000);
    if (d.ok) await limits.releaseRun(t.id, d.lease);
    return !d.ok;
  };
  await until(full, "the dying run's slot");
  // Still running: no result, its slot kept.
  const refused = await bash("echo refused");
  expect(refused.status).toBe(429);
  expect(refused.body.error).toMatchObject({ code: "RATE_LIMITED", details: { limit: "concurrent_runs", running: 1 } });
  // Its runner ran it to the end and stored its result: the next call past the limit frees the slot and runs.
  await until(async () => (await results()).length === 1, "the dying run's stored result", 30_000);
  const ran = await bash("cat dead.txt");
  expect(ran.status, JSON.stringify(ran.body)).toBe(200);
  expect(ran.body.output).toBe("done");
}, 60_000);
