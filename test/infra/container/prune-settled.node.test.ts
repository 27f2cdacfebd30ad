/**
 * pruneSettled (infra/container/tree.ts) removes the directories a discarded run left empty without
 * holding the runner's event loop: 16,000 synchronous rmdirs held it 10.8 s on ext4 (live sandboxes'
 * polls, other runs' pumps and kill checks all waited). A timer set before the prune fires while it
 * works, and the tree it leaves is the same (the same file's round trip in sync-cost.node.test.ts).
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pruneSettled } from "../../../infra/container/tree.js";
import { walk } from "../../../infra/container/walk.js";
import { tempDirs } from "../../support/temp-dirs.js";

const tmp = tempDirs("prune-settled");

describe("pruneSettled of 16,000 empty directories", () => {
  it("leaves the event loop free: a timer set before it fires while it works, never late by a second; every empty directory goes, the kept one and the file stay", async () => {
    const t = tmp("tree");
    for (let i = 0; i < 160; i++) for (let j = 0; j < 100; j++) mkdirSync(join(t, `d${i}`, `e${j}`), { recursive: true });
    writeFileSync(join(t, "d0", "e0", "file"), "x");
    const after = await walk(t);
    expect(after.counts.size).toBe(1 + 160 + 16_000);

    let ticks = 0;
    let last = Date.now();
    let worstGapMs = 0;
    const timer = setInterval(() => {
      const now = Date.now();
      worstGapMs = Math.max(worstGapMs, now - last);
      last = now;
      ticks++;
    }, 5);
    try {
      last = Date.now();
      await pruneSettled(t, after, [], new Map([["d1/e1", true]]));
      worstGapMs = Math.max(worstGapMs, Date.now() - last);
    } finally {
      clearInterval(timer);
    }
    // Synchronous, the prune ran to its end before any timer: no tick, one gap as long as the whole prune.
    expect(ticks).toBeGreaterThan(0);
    expect(worstGapMs).toBeLessThan(1000);
    expect(readdirSync(t).sort()).toEqual(["d0", "d1"]);
    expect(readdirSync(join(t, "d0"))).toEqual(["e0"]);
    expect(existsSync(join(t, "d0", "e0", "file"))).toBe(true);
    expect(readdirSync(join(t, "d1"))).toEqual(["e1"]);
    // 5.6 s alone on this machine; over 30 s in the clean-clone CI at d8e0b34, where four Node test
    // files share the 2 cores and the disk (making and walking 16,000 directories is most of it).
  }, 180_000);
});
