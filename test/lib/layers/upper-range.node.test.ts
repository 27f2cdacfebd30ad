/**
 * upperKeysAmong (lib/layers/upper-range.ts): the keys the upper layer holds among those asked,
 * from one listing over their range, cross-checked against a plain set lookup on random key sets
 * (names with "/", non-ASCII and astral characters, keys that are prefixes of others) and over
 * more than one page. Characters stay outside U+E000–U+FFFF, where the memory driver's UTF-16
 * order would differ from R2/S3's byte order.
 */
import { describe, expect, it } from "vitest";
import { upperKeysAmong } from "../../../lib/layers/upper-range.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import type { StorageDriver } from "../../../lib/storage/types.js";

const ALPHABET = ["a", "b", "/", "-", "ü", "名", "😀"];

function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x80000000;
  };
}

function counted(d: StorageDriver, lists: { n: number }): StorageDriver {
  return { ...d, list: (o) => (lists.n++, d.list(o)) };
}

describe("upperKeysAmong", () => {
  it("finds exactly the asked keys the upper holds (500 random trials), with one listing each", async () => {
    const rand = rng(7);
    const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
    for (let trial = 0; trial < 500; trial++) {
      const universe = new Set<string>();
      const n = 1 + Math.floor(rand() * 40);
      while (universe.size < n) {
        let name = "";
        const len = 1 + Math.floor(rand() * 4);
        for (let i = 0; i < len; i++) name += pick(ALPHABET);
        universe.add(`t/x/w/y/f/${name}`);
      }
      const keys = [...universe];
      const driver = memoryDriver();
      const upper = keys.filter(() => rand() < 0.4);
      for (const k of upper) await driver.put(k, "u");
      // Neighbours outside the workspace's prefix never count.
      await driver.put("t/x/w/y/g", "other");
      await driver.put("t/x/w/y/f", "other");
      const asked = keys.filter(() => rand() < 0.6);
      const lists = { n: 0 };
      const got = await upperKeysAmong(counted(driver, lists), asked);
      expect([...got].sort(), JSON.stringify({ asked, upper })).toEqual(asked.filter((k) => upper.includes(k)).sort());
      expect(lists.n).toBeLessThanOrEqual(asked.length ? 1 : 0);
    }
  });

  it("pages when the upper holds more than a page between the smallest and largest key asked", async () => {
    const driver = memoryDriver();
    const keys = Array.from({ length: 2500 }, (_, i) => `f/${String(i).padStart(5, "0")}`);
    for (const k of keys) await driver.put(k, "u");
    const asked = ["f/00000", "f/01234", "f/02499", "f/99999"];
    const lists = { n: 0 };
    expect([...(await upperKeysAmong(counted(driver, lists), asked))].sort()).toEqual(["f/00000", "f/01234", "f/02499"]);
    expect(lists.n).toBe(3);
    // A range the upper barely touches: one listing, and it stops past the largest key asked.
    lists.n = 0;
    expect([...(await upperKeysAmong(counted(driver, lists), ["f/00010", "f/00012"]))].sort()).toEqual(["f/00010", "f/00012"]);
    expect(lists.n).toBe(1);
  });
});
