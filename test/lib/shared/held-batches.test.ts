/** HeldBatches (lib/shared/held-batches.ts): items held per key, handed over once per batch, within the caps. */
import { describe, expect, it } from "vitest";
import { HeldBatches } from "../../../lib/shared/held-batches.js";

function recorder(opts: ConstructorParameters<typeof HeldBatches<string>>[1]) {
  const handed: { items: string[] }[] = [];
  const held = new HeldBatches<string>(async (items) => void handed.push({ items }), opts, (s) => s.length);
  return { held, handed };
}

describe("HeldBatches", () => {
  it("holds a key's items and hands them over once, in order, after the hold; each promise settles then", async () => {
    const { held, handed } = recorder({ holdMs: 30 });
    const waits = ["a", "b", "c"].map((x) => held.add("k", x));
    expect(handed).toEqual([]);
    expect(held.pending).toBe(1);
    await Promise.all(waits);
    expect(handed).toEqual([{ items: ["a", "b", "c"] }]);
    expect(held.pending).toBe(0);
    expect(held.held).toBe(0);
    // The next item opens the next batch.
    await held.add("k", "d");
    expect(handed).toEqual([{ items: ["a", "b", "c"] }, { items: ["d"] }]);
  });

  it("keys are batched apart", async () => {
    const { held, handed } = recorder({ holdMs: 10 });
    await Promise.all([held.add("t1/w", "x"), held.add("t2/w", "y"), held.add("t1/w", "z")]);
    expect(handed.map((h) => h.items).sort()).toEqual([["x", "z"], ["y"]]);
  });

  it("a batch at maxItems or maxBytes goes at once (a 60 s hold would time the test out)", async () => {
    const { held, handed } = recorder({ holdMs: 60_000, maxItems: 3, maxBytes: 10 });
    await Promise.all([held.add("a", "1"), held.add("a", "2"), held.add("a", "3")]);
    await Promise.all([held.add("b", "123456"), held.add("b", "7890")]);
    expect(handed.map((h) => h.items)).toEqual([["1", "2", "3"], ["123456", "7890"]]);
  }, 5_000);

  it("past maxHeldBytes the batch added to goes at once, so what is held stays near the bound", async () => {
    const { held, handed } = recorder({ holdMs: 60_000, maxBytes: 1_000, maxHeldBytes: 12 });
    const waits = [held.add("a", "aaaa"), held.add("b", "bbbb")];
    expect(held.held).toBe(8);
    expect(handed).toEqual([]);
    await held.add("c", "cccc"); // 12 bytes held: c's batch goes, in the request that added it
    expect(handed.map((h) => h.items)).toEqual([["cccc"]]);
    expect(held.held).toBe(8);
    waits.push(held.add("a", "AAAA")); // 12 again: a's batch goes
    expect(held.held).toBe(4);
    waits.push(held.add("b", "BBBBBBBB")); // 12: b's batch goes
    await Promise.all(waits);
    expect(handed.map((h) => h.items)).toEqual([["cccc"], ["aaaa", "AAAA"], ["bbbb", "BBBBBBBB"]]);
    expect(held.held).toBe(0);
  }, 5_000);
});

/**
 * Requests as the Workers runtime runs them: a timer runs in the request that set it, and once that
 * request has ended its timers never fire (a promise waiting on one never settles: the runtime
 * logs "Worker's code had hung" / "Promise will never complete"). `sleep` is the timer of the
 * request current when it is called.
 */
function requests() {
  const timers: { owner: string; ms: number; fire: () => void }[] = [];
  let current = "";
  const ended = new Set<string>();
  const sleep = (ms: number) => new Promise<void>((fire) => void timers.push({ owner: current, ms, fire }));
  /** Runs `f` as request `name` (synchronously: what it starts belongs to it). */
  const as = <R>(name: string, f: () => R): R => {
    current = name;
    try {
      return f();
    } finally {
      current = "";
    }
  };
  /** Fires every timer whose request is still alive. */
  const tick = () => {
    for (const t of timers.splice(0)) if (!ended.has(t.owner)) t.fire();
  };
  return { sleep, as, tick, end: (name: string) => ended.add(name), timers };
}

/** Whether `p` has settled (after the microtasks queued so far). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true), () => (done = true));
  for (let i = 0; i < 20; i++) await Promise.resolve();
  return done;
}

describe("HeldBatches across requests: no request waits on another's timer", () => {
  it("the last request to add hands the batch over, by its own timer; an earlier adder's end loses nothing", async () => {
    const r = requests();
    const { held, handed } = recorder({ holdMs: 50, sleep: r.sleep });
    const a = r.as("A", () => held.add("k", "a"));
    const b = r.as("B", () => held.add("k", "b"));
    const c = r.as("C", () => held.add("k", "c"));
    // A (the call that opened the batch) is gone before the hold ends: its timer never fires.
    r.end("A");
    r.tick();
    expect(await settled(b)).toBe(true);
    expect(await settled(c)).toBe(true);
    expect(handed).toEqual([{ items: ["a", "b", "c"] }]);
    // The keeper settles the earlier adders' promises once the batch is out (a resolve call, no wait).
    expect(await settled(a)).toBe(true);
  });

  it("every item of a burst is handed over exactly once, whichever requests end early", async () => {
    const r = requests();
    const { held, handed } = recorder({ holdMs: 50, maxItems: 7, sleep: r.sleep });
    const waits: Promise<void>[] = [];
    for (let i = 0; i < 30; i++) {
      waits.push(r.as(`R${i}`, () => held.add("usage", `u${i}`)));
      if (i % 3 === 0) r.end(`R${i}`); // some calls' requests end at once (their own timers with them)
    }
    r.tick();
    await Promise.all(waits.filter((_, i) => i % 3 !== 0));
    const items = handed.flatMap((h) => h.items);
    expect(items.sort()).toEqual(Array.from({ length: 30 }, (_, i) => `u${i}`).sort());
    expect(held.pending).toBe(0);
    expect(held.held).toBe(0);
  });

  it("a batch at its cap goes in the request of the add that filled it, with no timer at all", async () => {
    const r = requests();
    const { held, handed } = recorder({ holdMs: 60_000, maxItems: 2, sleep: r.sleep });
    r.as("A", () => void held.add("k", "1"));
    r.end("A");
    await r.as("B", () => held.add("k", "2"));
    expect(handed).toEqual([{ items: ["1", "2"] }]);
  });
});
