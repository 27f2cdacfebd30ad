/**
 * Files an answer deferred (`later`: the API reads only FETCH_MAX_SINGLE files one by one per
 * answer, lib/sync/fetch.ts) during a download (infra/container/download.ts): they are asked for
 * again as soon as their answer ends, while the other answers still stream, not after all of
 * them (a whole request's latency, serial, at the end of a cold start on raw uploads); the files
 * of an answer that brought none of its own are fetched alone; every file lands once, as sent.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { download } from "../../../infra/container/download.js";
import type { ReconcileStats, Slot } from "../../../infra/container/tree.js";
import { BATCH_MAX_FILE_BYTES, type BatchFile } from "../../../lib/sync/batch.js";
import type { SyncClient } from "../../../lib/sync/types.js";

const root = mkdtempSync(join(tmpdir(), "download-deferred-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const enc = new TextEncoder();
const body = (p: string) => `bytes of ${p}\n`;

function freshSlot(): Slot {
  const dir = join(root, `s${++n}`);
  mkdirSync(join(dir, "tree"), { recursive: true });
  mkdirSync(join(dir, "incoming"), { mode: 0o700 });
  return { key: "k", dir, tree: join(dir, "tree"), files: new Map(), view: new Map(), synced: null, dirs: new Map(), listings: new Map(), modes: null, links: new Map(), spread: false, cold: true, busy: true, lastUsed: 0 } as unknown as Slot;
}

/** 40 files listed at the batch limit's size: batches of 16, 16 and 8 (lib/sync/batch.ts batchesOf), all in flight at once. */
const entries = Array.from({ length: 40 }, (_, i) => ({ path: `d/f${String(i).padStart(2, "0")}`, etag: `e${i}`, size: BATCH_MAX_FILE_BYTES }));
const frame = (p: string): BatchFile => ({ path: p, etag: `e${Number(p.slice(3))}`, size: body(p).length, bytes: enc.encode(body(p)) });
const stats = (): ReconcileStats => ({ downloaded_files: 0, downloaded_bytes: 0, skipped: [], clean: false, entries: entries.length, whole: true });

function expectAll(slot: Slot): void {
  expect([...slot.files.keys()].sort()).toEqual(entries.map((e) => e.path));
  for (const e of entries) expect(readFileSync(join(slot.tree, e.path), "utf8")).toBe(body(e.path));
}

describe("files an answer deferred", () => {
  it("are asked for again as soon as their answer ends, while another answer still streams", async () => {
    const requests: string[][] = [];
    let retried!: () => void;
    const retry = new Promise<void>((r) => (retried = r));
    let retriedWhileStreaming: boolean | null = null;
    const sync = {
      async fetchMany(paths: string[]) {
        requests.push(paths);
        return (async function* (): AsyncGenerator<BatchFile> {
          if (paths[0] === "d/f00") {
            // The first answer: its two last files deferred.
            for (const p of paths) yield p === "d/f14" || p === "d/f15" ? { path: p, later: true } : frame(p);
            return;
          }
          if (paths[0] === "d/f16") {
            // The second answer streams on until the deferred files were asked for again (2 s at most: the old way never asks meanwhile).
            for (const p of paths.slice(0, -1)) yield frame(p);
            retriedWhileStreaming = await Promise.race([retry.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 2000))]);
            yield frame(paths.at(-1)!);
            return;
          }
          if (paths.includes("d/f14")) retried();
          for (const p of paths) yield frame(p);
        })();
      },
      async fetch() {
        throw new Error("no file should be fetched alone here");
      },
    } as unknown as SyncClient;
    const slot = freshSlot();
    const s = stats();
    await download(slot, entries, sync, null, s);
    expect(retriedWhileStreaming).toBe(true);
    expect(requests.map((r) => [r[0], r.length])).toEqual([["d/f00", 16], ["d/f16", 16], ["d/f32", 8], ["d/f14", 2]]);
    expect(s.downloaded_files).toBe(entries.length);
    expectAll(slot);
  });

  it("an answer that brought none of its files: they are fetched alone, once each", async () => {
    const requests: string[][] = [];
    const alone: string[] = [];
    const sync = {
      async fetchMany(paths: string[]) {
        requests.push(paths);
        return (async function* (): AsyncGenerator<BatchFile> {
          for (const p of paths) yield paths[0] === "d/f32" ? { path: p, later: true } : frame(p);
        })();
      },
      async fetch(p: string) {
        alone.push(p);
        const f = frame(p) as { etag: string; bytes: Uint8Array };
        return { body: new Response(f.bytes).body!, etag: f.etag, size: f.bytes.length };
      },
    } as unknown as SyncClient;
    const slot = freshSlot();
    await download(slot, entries, sync, null, stats());
    expect(requests.length).toBe(3);
    expect(alone.sort()).toEqual(entries.slice(32).map((e) => e.path));
    expectAll(slot);
  });
});
