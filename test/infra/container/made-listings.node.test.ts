/**
 * The first walk after a cold download on the download's word (infra/container/made-listings.ts):
 * a change journal armed as the download returns, on listings made from what it wrote, lets the
 * walk after the command read (readdir) only the directories something happened in, and that walk
 * (and the next one, without a journal, on the listings it keyed) always equals a walk that reads
 * everything, whatever the command did: even what inotify does not report. Real trees and real
 * inotify watches, no sandbox.
 */
import { chmodSync, linkSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../support/temp-dirs.js";
import { rng } from "../../support/prng.js";
import { download } from "../../../infra/container/download.js";
import { endHandOver, handOver } from "../../../infra/container/made-listings.js";
import { walk, type WalkResult } from "../../../infra/container/walk.js";
import { fingerprint, isExec } from "../../../infra/container/file-marks.js";
import type { ReconcileStats, Slot } from "../../../infra/container/tree.js";
import type { BatchFile } from "../../../lib/sync/batch.js";
import type { SyncClient } from "../../../lib/sync/types.js";

const tmp = tempDirs("made-listings");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const shape = (w: WalkResult) => ({
  files: [...w.files].map(([p, f]) => [p, f.fp, f.size, f.exec]).sort(),
  dirs: [...w.dirs].sort(),
  counts: [...w.counts].sort(),
  skipped: [...w.skipped].sort((a, b) => (a.path < b.path ? -1 : 1)),
  links: [...w.links].sort(),
});

/** The files of a tree by plain recursion, one lstat each: what a walk must find. */
function oracle(root: string, rel = "", out: [string, string, number, boolean][] = []) {
  for (const d of readdirSync(rel ? join(root, rel) : root, { withFileTypes: true })) {
    const r = rel ? `${rel}/${d.name}` : d.name;
    const st = lstatSync(join(root, r), { bigint: true });
    if (st.isDirectory()) oracle(root, r, out);
    else if (st.isFile()) out.push([r, fingerprint(st), Number(st.size), isExec(st.mode)]);
  }
  return out.sort();
}

/** A cold slot (an empty tree) and the download of `paths` into it, as reconcile makes it; the journal handed over on it. */
async function cold(paths: string[]) {
  const dir = tmp();
  const tree = join(dir, "tree");
  mkdirSync(tree);
  mkdirSync(join(dir, "incoming"));
  const slot = { key: "k", dir, tree, files: new Map(), view: new Map(), synced: null, dirs: new Map(), listings: new Map(), modes: null, links: new Map(), spread: false, cold: true, busy: true, lastUsed: 0 } as unknown as Slot;
  const sync = {
    async fetchMany(ps: string[]) {
      return (async function* (): AsyncGenerator<BatchFile> {
        for (const p of ps) yield { path: p, etag: `e-${p}`, size: p.length, bytes: new TextEncoder().encode(p) };
      })();
    },
  } as unknown as SyncClient;
  const stats: ReconcileStats = { downloaded_files: 0, downloaded_bytes: 0, skipped: [], clean: false, entries: paths.length, whole: true };
  const dirs = await download(slot, paths.map((path) => ({ path, etag: `e-${path}`, size: path.length })), sync, null, stats);
  const journal = handOver(slot, dirs, tree, join(dir, "private"), 0)!;
  expect(journal).not.toBeNull();
  /** The walk after the command, as sync-out makes it with the journal. */
  const walkAfter = async () => {
    const hooks = await journal.begin(slot.listings);
    const after = await walk(tree, slot.listings, Date.now(), hooks ?? undefined);
    journal.walked(after);
    return after;
  };
  return { slot, tree, dir, journal, walkAfter };
}

/** Paths of a tree: `dirs` directories up to 3 deep, `perDir` files in each. */
function treePaths(r: ReturnType<typeof rng>, dirs: number, perDir: number): string[] {
  const made = [""];
  const out: string[] = [];
  for (let d = 0; d < dirs; d++) {
    const parent = r.pick(made.filter((m) => m.split("/").length < 3));
    made.push(parent ? `${parent}/d${d}` : `d${d}`);
  }
  for (const d of made) for (let f = 0; f < perDir; f++) out.push(d ? `${d}/f${f}.txt` : `top${f}.txt`);
  return out;
}

describe("the walk after a cold download, on the download's word", () => {
  it("reads no directory when nothing happened since the download; one directory written in: that one alone", async () => {
    const paths = treePaths(rng(1), 40, 5);
    const c = await cold(paths);
    const quiet = await c.walkAfter();
    expect(quiet.files.size).toBe(paths.length);
    expect(quiet.vouched).toBe(quiet.dirs.length + 1); // every directory's listing on the journal's word, the root's included: no readdir
    expect(shape(quiet)).toEqual(shape(await walk(c.tree)));
    // Every listing got its key (the next walk, without a journal, reuses them).
    expect([...c.slot.listings.values()].every((l) => l.key !== "")).toBe(true);
    endHandOver(c.journal, c.slot);

    const d = await cold(paths);
    const dir = paths.find((p) => p.split("/").length === 3)!.split("/").slice(0, 2).join("/");
    writeFileSync(join(d.tree, dir, "new.txt"), "new");
    const one = await d.walkAfter();
    expect(one.vouched).toBe(one.dirs.length); // all but the one written in
    expect(shape(one)).toEqual(shape(await walk(d.tree)));
    endHandOver(d.journal, d.slot);
  });

  it("equals a walk that reads everything, through random changes after the download (the tree moved away and back meanwhile, as staging does)", async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const r = rng(seed);
      const paths = treePaths(r, 12 + r.int(20), 1 + r.int(4));
      const c = await cold(paths);
      const staged = join(c.dir, "staged");
      renameSync(c.tree, staged); // stage.ts: the run's tree is bound at another path
      const dirsOf = [...new Set(paths.map((p) => p.split("/").slice(0, -1).join("/")).filter(Boolean))];
      const pick = () => (r.int(2) ? r.pick(paths) : r.pick(dirsOf));
      for (let k = 0; k < r.int(6); k++) {
        const p = join(staged, pick());
        try {
          switch (r.int(9)) {
            case 0: mkdirSync(join(p, `m${k}`), { recursive: true }); break;
            case 1: writeFileSync(p, `v${k}`); break; // a file rewritten (or a directory: refused)
            case 2: rmSync(p, { recursive: true, force: true }); break;
            case 3: renameSync(p, join(staged, pick())); break;
            case 4: symlinkSync("/etc/passwd", join(p, `l${k}`)); break;
            case 5: utimesSync(join(p, ".."), new Date(0), new Date(0)); break; // a directory's mtime put back: ctime still moves
            case 6: chmodSync(p, 0o700); break;
            case 7: linkSync(p, join(staged, r.pick(dirsOf), `h${k}`)); break; // a hard link elsewhere (written through below, maybe)
            default: writeFileSync(join(p, `n${k}`), "x"); // a new file in a directory (or through a hard link's name)
          }
        } catch {
          /* a parent is missing, or not a directory: the change does nothing */
        }
      }
      renameSync(staged, c.tree);
      const after = await c.walkAfter();
      const fresh = shape(await walk(c.tree));
      expect(shape(after), `seed ${seed}`).toEqual(fresh);
      expect(shape(after).files, `seed ${seed}`).toEqual(oracle(c.tree));
      endHandOver(c.journal, c.slot);
      // The next run's walk, with no journal, on the listings the first one kept (and keyed): the same.
      await sleep(15);
      writeFileSync(join(c.tree, "later.txt"), "after the first walk");
      expect(shape(await walk(c.tree, c.slot.listings, Date.now())), `seed ${seed}, next walk`).toEqual(shape(await walk(c.tree)));
    }
  });

  it("sees what inotify does not report: a write through a hard link made and removed in the command", async () => {
    const paths = treePaths(rng(3), 20, 3);
    const c = await cold(paths);
    const f = paths.find((p) => p.startsWith("d") && p.split("/").length === 2)!;
    const other = paths.find((p) => p.split("/")[0] !== f.split("/")[0] && p.split("/").length === 2)!.split("/")[0]!;
    linkSync(join(c.tree, f), join(c.tree, other, "h"));
    writeFileSync(join(c.tree, other, "h"), "written through the other name");
    rmSync(join(c.tree, other, "h"));
    const after = await c.walkAfter();
    const fresh = await walk(c.tree);
    expect(fresh.files.get(f)!.size).toBe(30);
    expect(after.vouched).toBe(after.dirs.length); // the listings stood (the other name's directory was read)
    expect(after.files.get(f)).toEqual(fresh.files.get(f)); // the file's lstat shows the write
    endHandOver(c.journal, c.slot);
  });

  it("a download too small to be worth a journal hands nothing over", async () => {
    const c = await cold(["a/b.txt", "c.txt"]);
    endHandOver(c.journal, c.slot);
    const dir = tmp();
    const slot = { files: new Map([["a.txt", { etag: "e", size: 1, hash: "h", fp: "1:1:1:1", exec: false }]]), listings: new Map(), tree: dir } as unknown as Slot;
    expect(handOver(slot, new Set(), dir, join(dir, "private"))).toBeNull();
    expect(slot.listings.size).toBe(0);
  });
});
