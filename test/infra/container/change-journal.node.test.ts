/**
 * The change journal (infra/container/change-journal.ts) with the walk it feeds (walk.ts), on a
 * real tree and real inotify watches, without a sandbox: what it vouches for, and its fallbacks
 * (an event count that could hide a queue overflow, too many directories, a walk that did not
 * finish), after each of which the walk is a full one and still sees every change.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ChangeJournal } from "../../../infra/container/change-journal.js";
import { walk, type DirListings } from "../../../infra/container/walk.js";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** A tree of `dirs` directories of 3 files each; a journal of it; walk() as a live command's sync-out makes it. */
function fixture(dirs: number, opts: { maxWatches?: number; overflowAfter?: number } = {}) {
  const root = mkdtempSync(join(tmpdir(), "journal-test-"));
  roots.push(root);
  const tree = join(root, "tree");
  for (let d = 0; d < dirs; d++) {
    mkdirSync(join(tree, `d${d}`), { recursive: true });
    for (let i = 0; i < 3; i++) writeFileSync(join(tree, `d${d}`, `f${i}.txt`), `${d}.${i}`);
  }
  const journal = new ChangeJournal(tree, join(root, "private"), opts);
  const listings: DirListings = new Map();
  // `now` far ahead: every directory counts as settled, so each walk keeps every listing (walk.ts).
  const run = async () => {
    const hooks = await journal.begin(listings);
    const after = await walk(tree, listings, Date.now() + 60_000, hooks ?? undefined);
    journal.walked(after);
    return after;
  };
  return { tree, journal, run, close: () => journal.close() };
}

describe("change journal", () => {
  it("vouches for untouched directories from the second walk on; a written directory is read again", async () => {
    const f = fixture(5);
    expect((await f.run()).vouched).toBe(0); // the first walk sets each watch before it reads the directory
    expect((await f.run()).vouched).toBe(6); // the root and 5 directories
    writeFileSync(join(f.tree, "d2", "f1.txt"), "changed!");
    const after = await f.run();
    expect(after.vouched).toBe(5);
    expect(after.files.get("d2/f1.txt")!.size).toBe(8);
    f.close();
  });

  it("after as many events as could hide a queue overflow, the walk trusts nothing (and still sees every change), then vouches again", async () => {
    const f = fixture(4, { overflowAfter: 10 });
    await f.run();
    await f.run();
    expect((await f.run()).vouched).toBe(5);
    for (let i = 0; i < 12; i++) writeFileSync(join(f.tree, "d3", `n${i}.txt`), "x");
    const full = await f.run();
    expect(full.vouched).toBe(0);
    expect(f.journal.stats.lastFull).toBe("overflow");
    expect([...full.files.keys()].filter((p) => p.startsWith("d3/n"))).toHaveLength(12);
    await f.run();
    expect((await f.run()).vouched).toBe(5);
    f.close();
  });

  it("past its most directories it ends: every later walk is a full one, and sees every change", async () => {
    const f = fixture(6, { maxWatches: 3 });
    await f.run();
    await f.run();
    expect(f.journal.active).toBe(false);
    expect(f.journal.stats.ended).toMatch(/more than 3 directories/);
    writeFileSync(join(f.tree, "d5", "f0.txt"), "a longer content");
    const after = await f.run();
    expect(after.vouched).toBe(0);
    expect(after.files.get("d5/f0.txt")!.size).toBe(16);
    f.close();
  });

  it("a walk that did not finish leaves the next one trusting nothing", async () => {
    const f = fixture(3);
    await f.run();
    await f.run();
    await f.run();
    await f.journal.begin(new Map()); // begun, never walked (the walk threw)
    writeFileSync(join(f.tree, "d0", "f0.txt"), "lost?");
    const after = await f.run();
    expect(after.vouched).toBe(0);
    expect(after.files.get("d0/f0.txt")!.size).toBe(5);
    f.close();
  });
});
