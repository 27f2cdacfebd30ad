/**
 * A call that passes the threshold (lib/run/tasks/late.ts): the race (ended first: its result; else
 * still running, no longer tied to the request's signal and progress), the end written into the task
 * unless a cancel came first, and a late call's task read past LATE_CALL_LOST_MS without its end.
 */
import { describe, expect, it } from "vitest";
import type { ProgressEvent } from "../../../../lib/contract/tool.js";
import type { RunDeps } from "../../../../lib/run/deps.js";
import { endOrPass, LATE_CALL_LOST_MS, settleLateCall } from "../../../../lib/run/tasks/late.js";
import { cancelCallTask, getCallTask } from "../../../../lib/run/tasks/run.js";
import type { CallTaskDeps } from "../../../../lib/run/tasks/advance.js";
import { createCallTask, type CallTaskRecord } from "../../../../lib/run/tasks/store.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";

const deferred = <T>() => {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
};
const status = (message: string): ProgressEvent => ({ kind: "status", message });

describe("endOrPass", () => {
  it("a call that ends within the threshold is its result; the request's close aborts it meanwhile", async () => {
    const request = new AbortController();
    let seen: AbortSignal | undefined;
    const r = await endOrPass({ afterMs: 60_000, signal: request.signal, run: async (signal) => ((seen = signal), request.abort(), signal.aborted ? "aborted" : "ran") });
    expect(r).toEqual({ ended: "aborted" });
    expect(seen!.aborted).toBe(true);
  });

  it("past the threshold: the call runs on, no longer aborted by the request nor reporting to it", async () => {
    const request = new AbortController();
    const told: string[] = [];
    const end = deferred<string>();
    let own: AbortSignal | undefined;
    let report: ((e: ProgressEvent) => void) | undefined;
    const r = await endOrPass({
      afterMs: 5,
      signal: request.signal,
      progress: (e) => void told.push(e.kind === "status" ? e.message : ""),
      run: (signal, progress) => ((own = signal), (report = progress), progress?.(status("before")), end.promise),
    });
    expect("running" in r).toBe(true);
    request.abort();
    report!(status("after"));
    expect(own!.aborted).toBe(false);
    expect(told).toEqual(["before"]);
    end.resolve("done");
    expect(await (r as { running: Promise<string> }).running).toBe("done");
  });
});

describe("a late call's task", () => {
  const scope = (now?: () => number): CallTaskDeps => ({ storage, tenant: "acme", workspace: "main", key_id: "k1", deps: { storage } as unknown as RunDeps, ...(now ? { now } : {}) });
  const storage = memoryDriver();
  const lateTask = async () => (await createCallTask(scope(), { tool: "grep", session: "s1", ttl_ms: 24 * 3600_000, lost_after_ms: LATE_CALL_LOST_MS } as Pick<CallTaskRecord, "tool" | "session" | "ttl_ms">)).rec;
  const outcome = (text: string): CallTaskRecord => ({ id: "", key_id: "", tool: "grep", session: "s1", status: "completed", created_at: "", updated_at: "", ttl_ms: 0, outcome: { ok: true, title: "grep", output: text, data: { n: 1 } }, status_message: "grep" });

  it("its end is the task's outcome; a cancel written first stays (a call this isolate does not run: not stopped, said so)", async () => {
    const a = await lateTask();
    await settleLateCall(scope(), a.id, outcome("found"));
    const done = await getCallTask(scope(), a.id);
    expect(done).toMatchObject({ status: "completed", outcome: { ok: true, output: "found" } });
    expect(done.lost_after_ms).toBeUndefined();

    const b = await lateTask();
    expect((await cancelCallTask(scope(), b.id)).status).toBe("cancelled");
    await settleLateCall(scope(), b.id, outcome("too late"));
    const kept = await getCallTask(scope(), b.id);
    expect(kept.status).toBe("cancelled");
    expect(kept.outcome).toMatchObject({ ok: false, code: "CANCELLED", message: expect.stringContaining("the call under way runs in another instance and was not stopped") });
  });

  it("still working LATE_CALL_LOST_MS after it was made: failed as cut off, when read; before that, working", async () => {
    const t = await lateTask();
    const made = Date.parse(t.created_at);
    expect((await getCallTask(scope(() => made + LATE_CALL_LOST_MS - 1), t.id)).status).toBe("working");
    const lost = await getCallTask(scope(() => made + LATE_CALL_LOST_MS), t.id);
    expect(lost).toMatchObject({ status: "failed", outcome: { ok: false, code: "UNAVAILABLE", message: expect.stringMatching(/^The grep call stopped without an answer/) } });
    // Its end, coming after all, changes nothing.
    await settleLateCall(scope(), t.id, outcome("late"));
    expect((await getCallTask(scope(), t.id)).status).toBe("failed");
  });
});
