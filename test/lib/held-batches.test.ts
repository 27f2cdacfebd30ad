/** HeldBatches (lib/held-batches.ts): items held per key, handed over once per batch, within the caps. */
import { describe, expect, it } from "vitest";
import { HeldBatches } from "../../lib/held-batches.js";

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

  it("every batch goes at once when all together hold maxHeldBytes", async () => {
    const { held, handed } = recorder({ holdMs: 60_000, maxBytes: 1_000, maxHeldBytes: 12 });
    const waits = [held.add("a", "aaaa"), held.add("b", "bbbb")];
    expect(held.held).toBe(8);
    expect(handed).toEqual([]);
    waits.push(held.add("c", "cccc")); // 12 bytes held: a, b and c all go
    await Promise.all(waits);
    expect(handed.map((h) => h.items).sort()).toEqual([["aaaa"], ["bbbb"], ["cccc"]]);
    expect(held.held).toBe(0);
  }, 5_000);
});
