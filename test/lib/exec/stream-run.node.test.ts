/**
 * runStreamed (lib/exec/stream-run.ts) against the real handler and sandbox, record in memory
 * storage: chunk cadence, a caller gone before the start, the runner's bounds on output_every_ms.
 */
import { afterAll, describe, expect, it } from "vitest";
import { localExecutor } from "../../../infra/container/local-executor.js";
import { runStreamed, STREAM_OUTPUT_EVERY_MS } from "../../../lib/exec/stream-run.js";
import type { ProgressEvent } from "../../../lib/contract/tool.js";
import { RUNNER_SECRET, setup } from "../../infra/container/helpers.js";

const t = setup();
afterAll(() => t.cleanup());
const exec = localExecutor({ handler: t.handler.raw, secret: RUNNER_SECRET });
const recordKeys = async () => (await t.driver.list({ prefix: `t/${t.tenant}/w/${t.workspace}/x/runs/` })).objects.map((o) => o.key);

describe("runStreamed", () => {
  it("a line printed every 100 ms arrives in several chunks, about every output interval; nothing of the record is left", async () => {
    const events: { e: ProgressEvent; at: number }[] = [];
    const r = await runStreamed(t.driver, exec, t.req("for i in $(seq 1 15); do echo line$i; sleep 0.1; done"), { progress: (e) => events.push({ e, at: Date.now() }) });
    expect(r.exit_code).toBe(0);
    const text = events.map(({ e }) => (e.kind === "output" ? e.text : "")).join("");
    expect(text).toBe(Array.from({ length: 15 }, (_, i) => `line${i + 1}\n`).join(""));
    expect(r.output).toBe(text);
    // 1.5 s of output at one chunk per STREAM_OUTPUT_EVERY_MS (each chunk is one event, even when one poll reads two):
    // clearly more than the 1 s default interval would give (2).
    expect(STREAM_OUTPUT_EVERY_MS).toBeLessThanOrEqual(250);
    expect(events.length).toBeGreaterThanOrEqual(4);
    expect(await recordKeys()).toEqual([]);
  });

  it("a caller gone before the start: CANCELLED, nothing runs, no record", async () => {
    const ctrl = new AbortController();
    ctrl.abort();
    await expect(runStreamed(t.driver, exec, t.req("echo x > gone.txt"), { progress: () => {}, signal: ctrl.signal })).rejects.toMatchObject({ code: "CANCELLED" });
    await new Promise((r) => setTimeout(r, 300));
    expect(await t.read("gone.txt")).toBeNull();
    expect(await recordKeys()).toEqual([]);
  });

  it("a runner that never claims the run: UNAVAILABLE after the claim wait, and the kill flag stops a late start", async () => {
    const req = t.req("echo late > late.txt");
    let handOver: () => void = () => {};
    const lost = { start: async (r: typeof req) => void new Promise<void>((go) => (handOver = go)).then(() => t.handler({ ...r, task: true })), run: exec.run };
    const t0 = Date.now();
    await expect(runStreamed(t.driver, lost, req, { progress: () => {}, claimWaitMs: 500 })).rejects.toMatchObject({ code: "UNAVAILABLE" });
    expect(Date.now() - t0).toBeLessThan(5000);
    handOver();
    const until = Date.now() + 10_000;
    while (!(await recordKeys()).some((k) => k.endsWith("/result.json")) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    const key = (await recordKeys()).find((k) => k.endsWith("/result.json"))!;
    expect(JSON.parse(await new Response((await t.driver.get(key))!.body).text())).toMatchObject({ ok: true, result: { killed: true } });
    expect(await t.read("late.txt")).toBeNull();
    await t.driver.delete(await recordKeys());
  });

  it("the runner refuses an output interval out of its bounds", async () => {
    for (const ms of [0, 50, 10_001, 1.5]) {
      const r = await t.handler({ ...t.req("true"), output_every_ms: ms });
      expect(r.ok ? null : r.error.code).toBe("INVALID_ARGUMENT");
    }
  });
});
