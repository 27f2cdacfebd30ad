/**
 * Dropped slots leave the call's path (infra/container/trash.ts): an evicted or wiped tree is
 * out of use when release/acquire returns and deleted in the background; a host-isolated
 * cache (exclusive) waits for the deletion before a command may start; a new process neither
 * keeps nor waits for the trees of the one before.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../support/temp-dirs.js";
import { TreeCache } from "../../../infra/container/slot-cache.js";
import type { Slot } from "../../../infra/container/tree.js";

const base = tempDirs("trash");

/** 20 directories of 20 files: enough that deleting them takes many steps of the thread pool. */
function fill(slot: Slot, text: string): void {
  for (let d = 0; d < 20; d++) {
    mkdirSync(join(slot.tree, `d${d}`));
    for (let f = 0; f < 20; f++) writeFileSync(join(slot.tree, `d${d}`, `f${f}.txt`), text);
  }
}

describe("TreeCache: dropped trees go to the trash", () => {
  it("an evicted slot is out of its place when release returns, and deleted after", async () => {
    const root = join(base(), "slots");
    const cache = new TreeCache(root, null, 0); // no idle slot kept: every release evicts
    const slot = await cache.acquire("acme", "w1", "http://api");
    fill(slot, "w1\n");
    await cache.release(slot, true);
    expect(existsSync(slot.dir)).toBe(false);
    expect(readdirSync(root)).toEqual([".trash"]);
    // The release did not wait for the delete: the tree is still in the trash.
    expect(readdirSync(join(root, ".trash"))).toHaveLength(1);
    await cache.emptied();
    expect(readdirSync(join(root, ".trash"))).toEqual([]);
  });

  it("a slot released unclean is wiped the same way", async () => {
    const root = join(base(), "slots");
    const cache = new TreeCache(root, null);
    const slot = await cache.acquire("acme", "w1", "http://api");
    fill(slot, "w1\n");
    await cache.release(slot, false);
    expect(existsSync(slot.dir)).toBe(false);
    await cache.emptied();
    expect(readdirSync(join(root, ".trash"))).toEqual([]);
    const again = await cache.acquire("acme", "w1", "http://api");
    expect(again.dir).not.toBe(slot.dir);
    expect(readdirSync(again.tree).filter((n) => n.startsWith("d"))).toEqual([]);
  });

  it("a trash removed from under the cache (the process sandbox's wipe, an operator) still deletes what is dropped", async () => {
    const root = join(base(), "slots");
    const cache = new TreeCache(root, null, 0);
    const slot = await cache.acquire("acme", "w1", "http://api");
    fill(slot, "w1\n");
    rmSync(join(root, ".trash"), { recursive: true });
    await cache.release(slot, true);
    expect(existsSync(slot.dir)).toBe(false);
    expect(readdirSync(root)).toEqual([]);
  });

  it("exclusive: another workspace's tree is gone from the disk before a command may start", async () => {
    const b = base();
    const root = join(b, "slots");
    const cache = new TreeCache(root, null, 8, true);
    const w1 = await cache.acquire("acme", "w1", "http://api");
    fill(w1, "w1 secret\n");
    await cache.release(w1, true);
    const w2 = await cache.acquire("acme", "w2", "http://api");
    expect(existsSync(w1.dir)).toBe(false);
    await cache.beforeCommand();
    const left = (dir: string): string[] => readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
    expect(left(b)).toEqual([]);
    await cache.release(w2, true);
  });

  it("exclusive: a tree that cannot be deleted stops the command (never left readable under it)", async (ctx) => {
    const root = join(base(), "slots");
    const cache = new TreeCache(root, null, 8, true);
    const w1 = await cache.acquire("acme", "w1", "http://api");
    fill(w1, "w1 secret\n");
    const stuck = join(w1.tree, "d0", "f0.txt");
    try {
      execFileSync("chattr", ["+i", stuck]); // immutable: not even root can unlink it
    } catch {
      return ctx.skip(); // not root, or a file system without the flag
    }
    try {
      await cache.release(w1, true);
      const w2 = await cache.acquire("acme", "w2", "http://api");
      await expect(cache.beforeCommand()).rejects.toThrow();
      await cache.release(w2, true);
    } finally {
      for (const name of readdirSync(join(root, ".trash"))) execFileSync("chattr", ["-i", join(root, ".trash", name, "tree", "d0", "f0.txt")]);
    }
    await cache.beforeCommand(); // deletable again: the next run proceeds
    expect(readdirSync(join(root, ".trash"))).toEqual([]);
  });

  it("a new process starts empty and deletes the old trees (and an old trash) in the background", async () => {
    const root = join(base(), "slots");
    const before = new TreeCache(root, null);
    const old = await before.acquire("acme", "w1", "http://api");
    fill(old, "old\n");
    await before.release(old, true); // kept as an idle slot
    mkdirSync(join(root, ".trash", "leftover"), { recursive: true }); // a delete the old process did not finish
    writeFileSync(join(root, ".trash", "leftover", "f"), "x");

    const after = new TreeCache(root, null); // the process restarted
    const slot = await after.acquire("acme", "w1", "http://api");
    expect(readdirSync(root).sort()).toEqual([".trash", slot.dir.slice(root.length + 1)].sort());
    expect(readdirSync(slot.tree).filter((n) => n.startsWith("d"))).toEqual([]);
    await after.emptied();
    expect(readdirSync(join(root, ".trash"))).toEqual([]);
    await after.release(slot, true);
  });
});
