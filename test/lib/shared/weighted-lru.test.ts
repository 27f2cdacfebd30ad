import { describe, expect, it } from "vitest";
import { WeightedLru } from "../../../lib/shared/weighted-lru.js";

describe("WeightedLru", () => {
  it("drops the least recently used until the weight fits; a value heavier than the bound is kept alone", () => {
    const c = new WeightedLru<string>(10);
    c.set("a", "A", 4);
    c.set("b", "B", 4);
    expect(c.get("a")).toBe("A"); // a is now the most recently used
    c.set("c", "C", 4); // 12 > 10: b goes
    expect(c.get("b")).toBeUndefined();
    expect(c.weight).toBe(8);
    c.set("huge", "H", 25); // everything else goes; it stays, alone
    expect(c.get("huge")).toBe("H");
    expect([c.get("a"), c.get("c")]).toEqual([undefined, undefined]);
    expect(c.weight).toBe(25);
  });

  it("setting a key again replaces its weight, not adds to it", () => {
    const c = new WeightedLru<number>(10);
    c.set("a", 1, 6);
    c.set("a", 2, 6);
    expect(c.weight).toBe(6);
    expect(c.get("a")).toBe(2);
  });
});
