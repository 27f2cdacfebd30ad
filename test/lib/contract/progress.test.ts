/** The status throttle (lib/contract/progress.ts): at most one event per interval, a final one unless the call was quick, nothing when nobody listens. */
import { describe, expect, it } from "vitest";
import { PROGRESS_INTERVAL_MS, sizeText, statusReporter, type Describe } from "../../../lib/contract/progress.js";
import type { ProgressEvent } from "../../../lib/contract/tool.js";

const counted: Describe = (done, total) => ({ message: `${done} of ${total}`, done, ...(total !== undefined ? { total } : {}) });

function setup(intervalMs?: number) {
  let t = 1000;
  const events: ProgressEvent[] = [];
  const r = statusReporter({ progress: (e) => events.push(e) }, counted, { now: () => t, ...(intervalMs !== undefined ? { intervalMs } : {}) })!;
  return { r, events, tick: (ms: number) => void (t += ms) };
}

describe("statusReporter", () => {
  it("is undefined when nobody listens, so loops pay nothing", () => {
    expect(statusReporter({}, counted)).toBeUndefined();
  });

  it("sends at most one event per interval, each with the latest counts, and the last counts at the end", () => {
    const { r, events, tick } = setup();
    for (let i = 1; i <= 100; i++) {
      tick(10); // 100 updates over 1 s
      r.update(i, 100);
    }
    r.finish();
    // 250, 500, 750, 1000 ms: four throttled events; the last update is the fourth, so finish adds nothing.
    expect(events.map((e) => (e as { done: number }).done)).toEqual([25, 50, 75, 100]);
    expect(events[0]).toEqual({ kind: "status", message: "25 of 100", done: 25, total: 100 });
  });

  it("finish sends counts not yet sent", () => {
    const { r, events, tick } = setup();
    tick(300);
    r.update(1, 10);
    tick(10);
    r.update(7, 10);
    r.finish();
    expect(events.map((e) => (e as { done: number }).done)).toEqual([1, 7]);
  });

  it("a call quicker than the interval sends nothing, finish included", () => {
    const { r, events, tick } = setup();
    for (let i = 1; i <= 10; i++) {
      tick(20);
      r.update(i, 10);
    }
    r.finish();
    expect(events).toEqual([]);
  });

  it("a call longer than the interval whose updates all came early still gets its final event", () => {
    const { r, events, tick } = setup();
    r.update(5, 5);
    tick(PROGRESS_INTERVAL_MS + 50);
    r.finish();
    expect(events).toEqual([{ kind: "status", message: "5 of 5", done: 5, total: 5 }]);
  });

  it("a stage changes what the counts mean; the last counts of the stage before are dropped", () => {
    const { r, events, tick } = setup();
    r.stage((n) => ({ message: `listed ${n}` }));
    tick(300);
    r.update(2000);
    tick(100);
    r.update(3000); // not sent: within the interval, then the stage ends
    r.stage(counted);
    tick(200);
    r.update(10, 40);
    r.finish();
    expect(events).toEqual([
      { kind: "status", message: "listed 2000" },
      { kind: "status", message: "10 of 40", done: 10, total: 40 },
    ]);
  });

  it("interval 0 (tests) sends every change, never the same event twice", () => {
    const { r, events } = setup(0);
    r.update(1, 3);
    r.update(1, 3);
    r.update(2, 3);
    r.finish();
    expect(events.map((e) => (e as { done: number }).done)).toEqual([1, 2]);
  });

  it("takes its interval from deps when the caller does not give one", () => {
    let t = 0;
    const events: ProgressEvent[] = [];
    const r = statusReporter({ progress: (e) => events.push(e), deps: { progress: { intervalMs: 1000 } } }, counted, { now: () => t })!;
    t = 500;
    r.update(1, 2);
    t = 1000;
    r.update(2, 2);
    expect(events).toHaveLength(1);
  });
});

describe("sizeText", () => {
  it("bytes, KB, MB", () => {
    expect([sizeText(0), sizeText(1023), sizeText(48 * 1024 + 100), sizeText(3.25 * 1024 * 1024)]).toEqual(["0 B", "1023 B", "48 KB", "3.3 MB"]);
  });
});
