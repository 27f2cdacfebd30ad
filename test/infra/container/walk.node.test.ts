/**
 * The walk after a command (walk.ts) with the slot's kept directory listings: a reused
 * listing stands for readdir only while its directory is unchanged, so a walk with listings
 * always equals a walk without them, whatever the command did to the tree.
 */
import { appendFileSync, chmodSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, statfsSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../support/temp-dirs.js";
import { walk, type DirListings, type WalkResult } from "../../../infra/container/walk.js";
import { FINE_LISTING_SETTLED_MS, LISTING_SETTLED_MS, listingSettledMs } from "../../../infra/container/listing-settled.js";
import { fingerprint, isExec } from "../../../infra/container/file-marks.js";

const tmp = tempDirs("walk");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** As if every directory had settled long ago: each one's listing is kept. */
const later = () => Date.now() + 10 * LISTING_SETTLED_MS;
const shape = (w: WalkResult) => ({
  files: [...w.files].map(([p, f]) => [p, f.fp, f.size, f.exec]).sort(),
  dirs: [...w.dirs].sort(),
  counts: [...w.counts].sort(),
  skipped: [...w.skipped].sort((a, b) => (a.path < b.path ? -1 : 1)),
  links: [...w.links].sort(),
});

/** The files of a tree by plain recursion, one lstat each (the fingerprint as tree.ts takes it): what a walk must find. */
function oracle(root: string, rel = "", out: [string, string, number, boolean][] = []) {
  for (const d of readdirSync(rel ? join(root, rel) : root, { withFileTypes: true })) {
    const r = rel ? `${rel}/${d.name}` : d.name;
    const st = lstatSync(join(root, r), { bigint: true });
    if (st.isDirectory()) oracle(root, r, out);
    else if (st.isFile()) out.push([r, fingerprint(st), Number(st.size), isExec(st.mode)]);
  }
  return out.sort();
}

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

  it("a tree big enough for the stat workers: thousands of files, batches in flight, the same answer as one lstat each", async () => {
    const t = tmp();
    const r = rng(11);
    for (let a = 0; a < 8; a++)
      for (let b = 0; b < 8; b++) {
        mkdirSync(join(t, `d${a}/e${b}`), { recursive: true });
        for (let f = 0; f < 40; f++) writeFileSync(join(t, `d${a}/e${b}/f${f}.txt`), `${a}${b}${f}`);
      }
    const listings: DirListings = new Map();
    const first = await walk(t, listings, later()); // no listings: every lstat deferred, in batches
    expect(shape(first).files).toEqual(oracle(t));
    expect(first.files.size).toBe(2560);
    for (let round = 0; round < 6; round++) {
      await sleep(15);
      const dir = `d${r(8)}/e${r(8)}`;
      if (round === 2) {
        mkdirSync(join(t, "new"), { recursive: true });
        for (let f = 0; f < 2500; f++) writeFileSync(join(t, `new/n${f}`), "n"); // more new entries than one batch
      }
      writeFileSync(join(t, `${dir}/f${r(40)}.txt`), `changed ${round}`); // content only: its directory is unchanged
      chmodSync(join(t, `${dir}/f${r(40)}.txt`), 0o755);
      rmSync(join(t, `d${r(8)}/e${r(8)}/f${r(40)}.txt`), { force: true });
      symlinkSync("/etc/passwd", join(t, `d${r(8)}/link${round}`));
      const reused = shape(await walk(t, listings, later()));
      const fresh = shape(await walk(t));
      expect(reused, `round ${round}`).toEqual(fresh);
      expect(reused.files, `round ${round}`).toEqual(oracle(t));
      expect(reused.links.filter(([, target]) => target === "/etc/passwd")).toHaveLength(round + 1);
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

  it("with the real clock: random changes, some right after the last walk, some past the settle margin: always a fresh walk's answer", async () => {
    const t = tmp();
    const r = rng(11);
    const paths = ["a", "a/f", "a/b", "a/b/g", "c", "c/h", "top"];
    mkdirSync(join(t, "a/b"), { recursive: true });
    const listings: DirListings = new Map();
    await walk(t, listings);
    const margin = listingSettledMs(statfsSync(t).type);
    for (let round = 0; round < 16; round++) {
      await sleep(r(2) ? 15 : margin + 20); // within the margin (read again) or past it (kept)
      for (let k = 0; k < 1 + r(3); k++) {
        const p = join(t, paths[r(paths.length)]!);
        try {
          if (r(3) === 0) mkdirSync(p, { recursive: true });
          else if (r(2)) writeFileSync(p, `v${round % 10}`); // same size, new bytes
          else rmSync(p, { recursive: true, force: true });
        } catch {
          /* a parent is missing or a file */
        }
      }
      const reused = shape(await walk(t, listings));
      expect(reused, `round ${round}`).toEqual(shape(await walk(t)));
      expect(reused.files, `round ${round}`).toEqual(oracle(t));
    }
  });

  it("a file whose fingerprint holds keeps its entry from the last walk; a changed one gets a new entry", async () => {
    const t = tmp();
    mkdirSync(join(t, "d"));
    writeFileSync(join(t, "d/same"), "1");
    writeFileSync(join(t, "d/grows"), "1");
    const listings: DirListings = new Map();
    await walk(t, listings, later()); // reads every directory
    const first = await walk(t, listings, later()); // reuses the listings: the entries are made here
    await sleep(15);
    appendFileSync(join(t, "d/grows"), "23");
    const second = await walk(t, listings, later());
    expect(second.files.get("d/same")).toBe(first.files.get("d/same"));
    expect(second.files.get("d/grows")).not.toBe(first.files.get("d/grows"));
    expect(second.files.get("d/grows")!.size).toBe(3);
    expect(shape(second).files).toEqual(oracle(t));
  });

  it(`the settle margin: ${FINE_LISTING_SETTLED_MS} ms on file systems with nanosecond timestamps, ${LISTING_SETTLED_MS} ms on any other`, async () => {
    for (const magic of [0xef53, 0x01021994, 0x58465342, 0x9123683e, 0xf2f52010, 0x794c7630, BigInt(0xef53)]) expect(listingSettledMs(magic)).toBe(FINE_LISTING_SETTLED_MS);
    for (const magic of [0x4d44 /* FAT */, 0x6969 /* NFS */, 0x65735546 /* FUSE */, 0]) expect(listingSettledMs(magic)).toBe(LISTING_SETTLED_MS);
    // The walk uses the margin of the tree's own file system.
    const t = tmp();
    mkdirSync(join(t, "d"));
    const margin = listingSettledMs(statfsSync(t).type);
    const listings: DirListings = new Map();
    await walk(t, listings, Date.now() + margin - 50);
    expect(listings.has("d")).toBe(false);
    await walk(t, listings, Date.now() + margin + 50);
    expect(listings.has("d")).toBe(true);
  });

  it("a directory changed within the settle margin before the walk is read again next time", async () => {
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
