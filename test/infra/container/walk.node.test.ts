/**
 * The walk after a command (changes.ts) with the slot's kept directory listings: a reused
 * listing stands for readdir only while its directory is unchanged, so a walk with listings
 * always equals a walk without them, whatever the command did to the tree.
 */
import { chmodSync, mkdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../support/temp-dirs.js";
import { LISTING_SETTLED_MS, walk, type DirListings, type WalkResult } from "../../../infra/container/changes.js";

const tmp = tempDirs("walk");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** As if every directory had settled long ago: each one's listing is kept. */
const later = () => Date.now() + 10 * LISTING_SETTLED_MS;
const shape = (w: WalkResult) => ({
  files: [...w.files].map(([p, f]) => [p, f.fp, f.size, f.exec]).sort(),
  dirs: [...w.dirs].sort(),
  counts: [...w.counts].sort(),
  skipped: [...w.skipped].sort((a, b) => (a.path < b.path ? -1 : 1)),
});

function rng(seed: number) {
  let s = seed >>> 0;
  return (n: number) => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32) * n | 0;
}

describe("walk with kept listings", () => {
  it("equals a walk without them through random changes between walks", async () => {
    const t = tmp();
    const r = rng(5);
    const names = ["a", "b", "c", "d"];
    const paths: string[] = [];
    for (const x of names) for (const y of names) paths.push(`${x}/${y}`, `${x}/${y}/f`, `${x}/${y}/g`);
    mkdirSync(join(t, "a/a"), { recursive: true });
    writeFileSync(join(t, "a/a/f"), "0");
    const listings: DirListings = new Map();
    await walk(t, listings, later());
    for (let round = 0; round < 40; round++) {
      await sleep(15); // past a coarse clock tick: what a real command's start takes at least
      for (let k = 0; k < 1 + r(4); k++) {
        const p = join(t, paths[r(paths.length)]!);
        const op = r(7);
        try {
          if (op === 0) mkdirSync(p, { recursive: true });
          else if (op === 1) writeFileSync(p, `v${round}`);
          else if (op === 2) rmSync(p, { recursive: true, force: true });
          else if (op === 3) renameSync(p, join(t, paths[r(paths.length)]!));
          else if (op === 4) symlinkSync("/etc/passwd", p);
          else if (op === 5) utimesSync(join(p, ".."), new Date(0), new Date(0)); // a directory's mtime put back: ctime still moves
          else chmodSync(p, 0o700);
        } catch {
          /* a parent is missing or a file: the op does nothing */
        }
      }
      const reused = shape(await walk(t, listings, later()));
      const fresh = shape(await walk(t));
      expect(reused, `round ${round}`).toEqual(fresh);
      expect(listings.size).toBe(fresh.dirs.length + 1);
    }
  });

  it("a kept listing stands for readdir while its directory's key holds; one naming a gone entry is dropped", async () => {
    const t = tmp();
    mkdirSync(join(t, "d"));
    writeFileSync(join(t, "d/one"), "1");
    writeFileSync(join(t, "d/two"), "2");
    const listings: DirListings = new Map();
    await walk(t, listings, later());
    const d = listings.get("d")!;
    expect(d.names.sort()).toEqual(["one", "two"]);
    // Proof that the listing is used: a name taken out of it is not seen (the directory is unchanged).
    listings.set("d", { ...d, names: ["one"], dirs: [false] });
    expect([...(await walk(t, listings, later())).files.keys()]).toEqual(["d/one"]);
    // A name that is not there: the walk starts over without listings, and is exact.
    listings.set("d", { ...d, names: ["one", "two", "ghost"], dirs: [false, false, false] });
    expect([...(await walk(t, listings, later())).files.keys()].sort()).toEqual(["d/one", "d/two"]);
  });

  it(`a directory changed less than ${LISTING_SETTLED_MS} ms before the walk is read again next time`, async () => {
    const t = tmp();
    mkdirSync(join(t, "fresh"));
    const listings: DirListings = new Map();
    await walk(t, listings);
    expect(listings.has("fresh")).toBe(false);
    expect(listings.has("")).toBe(false);
    await walk(t, listings, later());
    expect(listings.has("fresh")).toBe(true);
  });
});
