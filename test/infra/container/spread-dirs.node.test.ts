/**
 * Where a cold start's directories are made (infra/container/spread-dirs.ts): a top-level
 * directory of the tree is made in the slot's staging directory under a random name and moved
 * into place, with the result mkdir would give; nothing is left in staging; what is already at
 * the path is never replaced; without staging it is a plain mkdir. And a download into a slot
 * makes its top-level directories that way, one random name each seen passing through staging
 * (inotify, up to a fence), deeper ones in place (staging empty after, modes as before).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { download } from "../../../infra/container/download.js";
import { mkdirPlaced } from "../../../infra/container/spread-dirs.js";
import type { ReconcileStats, Slot } from "../../../infra/container/tree.js";
import type { BatchFile } from "../../../lib/sync/batch.js";
import type { SyncClient } from "../../../lib/sync/types.js";

const root = mkdtempSync(join(tmpdir(), "spread-dirs-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => {
  const dir = join(root, `s${++n}`);
  mkdirSync(join(dir, "tree"), { recursive: true });
  mkdirSync(join(dir, "incoming"), { mode: 0o700 });
  return { dir, tree: join(dir, "tree"), staging: join(dir, "incoming") };
};

describe("mkdirPlaced", () => {
  it("makes the directory through staging and leaves staging empty", () => {
    const s = fresh();
    mkdirPlaced(join(s.tree, "src"), s.staging, 0o755);
    expect(statSync(join(s.tree, "src")).isDirectory()).toBe(true);
    expect(statSync(join(s.tree, "src")).mode & 0o777).toBe(0o755 & ~process.umask());
    expect(readdirSync(s.staging)).toEqual([]);
  });

  it("never replaces what is there: an empty directory stays the same inode, a file is EEXIST", () => {
    const s = fresh();
    mkdirSync(join(s.tree, "kept"));
    const ino = statSync(join(s.tree, "kept")).ino;
    expect(() => mkdirPlaced(join(s.tree, "kept"), s.staging, 0o755)).toThrow(expect.objectContaining({ code: "EEXIST" }));
    expect(statSync(join(s.tree, "kept")).ino).toBe(ino);
    writeFileSync(join(s.tree, "file"), "x");
    expect(() => mkdirPlaced(join(s.tree, "file"), s.staging, 0o755)).toThrow(expect.objectContaining({ code: "EEXIST" }));
    expect(statSync(join(s.tree, "file")).isFile()).toBe(true);
    expect(readdirSync(s.staging)).toEqual([]);
  });

  it("without staging (or with staging missing) it is a plain mkdir", () => {
    const s = fresh();
    mkdirPlaced(join(s.tree, "a"), null, 0o755);
    mkdirPlaced(join(s.tree, "b"), join(s.dir, "no-such-staging"), 0o755);
    expect(readdirSync(s.tree).sort()).toEqual(["a", "b"]);
    expect(() => mkdirPlaced(join(s.tree, "c", "d"), null, 0o755)).toThrow(expect.objectContaining({ code: "ENOENT" }));
  });

  it("a rename that fails (no parent) leaves nothing in staging and throws mkdir's error", () => {
    const s = fresh();
    expect(() => mkdirPlaced(join(s.tree, "c", "d"), s.staging, 0o755)).toThrow(expect.objectContaining({ code: "ENOENT" }));
    expect(readdirSync(s.staging)).toEqual([]);
    expect(readdirSync(s.tree)).toEqual([]);
  });
});

describe("a download into a slot", () => {
  it("makes every directory, top-level ones through staging, and leaves staging empty", async () => {
    const s = fresh();
    const files = ["README.md", "src/a/b/one.ts", "src/a/two.ts", "lib/x/three.ts", "docs/four.md"];
    const entries = files.map((path) => ({ path, etag: `e-${path}`, size: path.length }));
    const sync = {
      async fetchMany(paths: string[]) {
        return (async function* (): AsyncGenerator<BatchFile> {
          for (const p of paths) yield { path: p, etag: `e-${p}`, size: p.length, bytes: new TextEncoder().encode(p) };
        })();
      },
    } as unknown as SyncClient;
    const slot = { key: "k", dir: s.dir, tree: s.tree, files: new Map(), view: new Map(), synced: null, dirs: new Map(), listings: new Map(), modes: null, links: new Map(), spread: false, cold: true, busy: true, lastUsed: 0 } as unknown as Slot;
    const stats: ReconcileStats = { downloaded_files: 0, downloaded_bytes: 0, skipped: [], clean: false, entries: entries.length, whole: true };
    // What passes through staging (inotify), up to a fence written after the download.
    const staged = new Set<string>();
    let fenced: () => void;
    const fence = new Promise<void>((r) => (fenced = r));
    const watcher = watch(s.staging, (_event, name) => {
      if (name === "fence") fenced();
      else if (name) staged.add(String(name));
    });
    try {
      await download(slot, entries, sync, null, stats);
      writeFileSync(join(s.staging, "fence"), "");
      await fence;
    } finally {
      watcher.close();
      rmSync(join(s.staging, "fence"));
    }
    // One random name per top-level directory (docs, lib, src), none for deeper ones.
    expect(staged.size).toBe(3);
    for (const name of staged) expect(name).toMatch(/^d-[0-9a-f]{16}$/);
    expect(stats.skipped).toEqual([]);
    expect(stats.downloaded_files).toBe(files.length);
    expect(readdirSync(s.tree).sort()).toEqual(["README.md", "docs", "lib", "src"]);
    for (const d of ["src", "src/a", "src/a/b", "lib", "lib/x", "docs"]) expect(statSync(join(s.tree, d)).mode & 0o777).toBe(0o755 & ~process.umask());
    expect(readdirSync(s.staging)).toEqual([]);
  });
});
