/**
 * Downloading files into a slot's tree (reconcile's second half, tree.ts). Small files come in
 * batches (POST /v1/sync/fetch, up to FETCH_MAX_FILES files or ~FETCH_TARGET_BYTES a request,
 * FETCH_CONCURRENCY in flight), each written as its frame arrives: created in place with
 * O_EXCL|O_NOFOLLOW (a file already there is unlinked first, so a hard link of it elsewhere keeps
 * its bytes), owner and fingerprint set on the open descriptor, directories made once (tree.ts mkdirs). Synchronous
 * system calls: for files this small they cost less than a round trip through the thread pool.
 * Large files (and what a batch could not bring) come alone, streamed to a private temporary
 * file and renamed into place. Files whose bytes came with a live command (`carried`,
 * lib/sync/carried-files.ts) at the very etag the manifest lists are written from those: no request.
 */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, constants, createWriteStream, fchmodSync, fchownSync, fstatSync, futimesSync, lchownSync, lstatSync, openSync, promises as fs, renameSync, unlinkSync, utimesSync, writeSync } from "node:fs";
import { join } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parentOf } from "../../lib/layout/paths.js";
import { BATCH_MAX_FILE_BYTES, batchesOf } from "../../lib/sync/batch.js";
import type { SyncClient, SyncEntry } from "../../lib/sync/types.js";
import type { CarriedFile } from "../../lib/sync/carried-files.js";
import { mkdirs, pool, type Owner, type ReconcileStats, type Slot } from "./tree.js";
import { fingerprint, isExec } from "./file-marks.js";
import { spreadDirectories } from "./spread-dirs.js";

/** Timings for benchmarks (TOOLSHED_LOG_SYNC_STATS, as runner.ts). */
const log = (what: string) => void (process.env.TOOLSHED_LOG_SYNC_STATS && console.error(`sync-stats download ${what}`));

/** Batch requests in flight during a download. */
const FETCH_CONCURRENCY = 6;

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** The mtime (ns) of what is at abs, or null when nothing is. */
function mtimeAt(abs: string): bigint | null {
  return lstatSync(abs, { bigint: true, throwIfNoEntry: false })?.mtimeNs ?? null;
}

/**
 * The mtime (whole seconds) a file replacing one of mtime `replacedNs` must have when it was
 * written at `nowNs`, or null when its own will do. Tools that cache by mtime compare whole
 * seconds (Python's .pyc records the source's mtime in seconds and its size): an edit of the
 * same length landing in the second the old bytes were written would leave them valid, and the
 * next `python3` would run the old code. So a replacement is always at least a second newer.
 */
export function replacementMtime(replacedNs: bigint | null, nowNs: bigint): number | null {
  if (replacedNs === null) return null;
  const past = replacedNs / 1_000_000_000n + 1n;
  return nowNs / 1_000_000_000n >= past ? null : Number(past);
}

/** Opens a new file at abs, replacing a file (never a directory) that is there; `replaced` is its mtime. */
function create(abs: string, mode: number): { fd: number; replaced: bigint | null } {
  try {
    return { fd: openSync(abs, CREATE, mode), replaced: null };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    const replaced = mtimeAt(abs);
    unlinkSync(abs); // a directory refuses (EISDIR/EPERM): a path conflict
    return { fd: openSync(abs, CREATE, mode), replaced };
  }
}

/** Downloads `todo` into the slot, recording each file in slot.files and stats; a file `carried` holds at its listed etag is written from there. */
export async function download(slot: Slot, todo: SyncEntry[], sync: SyncClient, owner: Owner, stats: ReconcileStats, concurrency = 16, carried?: ReadonlyMap<string, CarriedFile>): Promise<void> {
  const known = new Set<string>();
  const exec = slot.modes?.exec ?? null;
  const staging = join(slot.dir, "incoming"); // spread: top-level directories are made there, then moved
  if (!slot.spread && todo.some((e) => e.path.includes("/"))) {
    // The slot's first directories: flag the tree and its staging first (one process, once per slot).
    await spreadDirectories(slot.tree, staging);
    slot.spread = true;
  }

  const record = (e: SyncEntry, etag: string, size: number, hash: string, st: { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint; mode: bigint }) => {
    slot.files.set(e.path, { etag: etag || e.etag, size, hash, fp: fingerprint(st), exec: isExec(st.mode) });
    stats.downloaded_files++;
    stats.downloaded_bytes += size;
  };
  const conflict = (e: SyncEntry, err: unknown): void => {
    stats.skipped.push({ path: e.path, reason: "path_conflict", detail: String((err as Error).message) });
  };

  const phases = { requests: 0, writeMs: 0, firstFrameMs: -1 };
  const t0 = performance.now();
  /** A file whose bytes are in hand: created in place, synchronously. */
  const write = (e: SyncEntry, etag: string, bytes: Uint8Array): void => {
    const tw = performance.now();
    if (phases.firstFrameMs < 0) phases.firstFrameMs = tw - t0;
    try {
      writeNow(e, etag, bytes);
    } finally {
      phases.writeMs += performance.now() - tw;
    }
  };
  const writeNow = (e: SyncEntry, etag: string, bytes: Uint8Array): void => {
    const abs = join(slot.tree, e.path);
    const mode = exec?.has(e.path) ? 0o755 : 0o644;
    let fd: number, replaced: bigint | null;
    try {
      mkdirs(slot.tree, parentOf(e.path), owner, known, staging);
      ({ fd, replaced } = create(abs, mode));
    } catch (err) {
      return conflict(e, err);
    }
    let st;
    try {
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
      if (owner) fchownSync(fd, owner.uid, owner.gid);
      st = fstatSync(fd, { bigint: true });
      const mtime = replacementMtime(replaced, st.mtimeNs);
      if (mtime !== null) {
        futimesSync(fd, mtime, mtime);
        st = fstatSync(fd, { bigint: true });
      }
      if ((Number(st.mode) & 0o777) !== mode) {
        fchmodSync(fd, mode); // the process's umask took bits off
        st = fstatSync(fd, { bigint: true });
      }
    } catch (err) {
      try {
        unlinkSync(abs); // never leave a partial file in the tree
      } catch {}
      throw err;
    } finally {
      closeSync(fd);
    }
    record(e, etag, bytes.length, createHash("sha256").update(bytes).digest("hex"), st);
  };

  /** A large file: streamed to a private temporary file, then moved into the tree. */
  const writeStream = async (e: SyncEntry, etag: string, data: ReadableStream<Uint8Array>): Promise<void> => {
    const abs = join(slot.tree, e.path);
    const tmp = join(slot.dir, "incoming", randomBytes(8).toString("hex"));
    const h = createHash("sha256");
    let size = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        h.update(chunk);
        size += chunk.length;
        cb(null, chunk);
      },
    });
    await pipeline(Readable.fromWeb(data as import("node:stream/web").ReadableStream<Uint8Array>), tap, createWriteStream(tmp, { mode: 0o644 }));
    let replaced: bigint | null;
    try {
      mkdirs(slot.tree, parentOf(e.path), owner, known, staging);
      replaced = mtimeAt(abs);
      renameSync(tmp, abs);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      return conflict(e, err);
    }
    if (owner) lchownSync(abs, owner.uid, owner.gid);
    if (exec?.has(e.path)) await fs.chmod(abs, 0o755);
    const mtime = replacementMtime(replaced, lstatSync(abs, { bigint: true }).mtimeNs);
    if (mtime !== null) utimesSync(abs, mtime, mtime);
    record(e, etag, size, h.digest("hex"), lstatSync(abs, { bigint: true }));
  };

  /** One file, one request (large files, and what a batch could not bring). */
  const fetchOne = async (e: SyncEntry): Promise<void> => {
    const file = await sync.fetch(e.path);
    if (!file) {
      await fs.rm(join(slot.tree, e.path), { force: true }); // deleted since the manifest was taken
      return;
    }
    if (file.size >= 0 && file.size <= BATCH_MAX_FILE_BYTES) write(e, file.etag, new Uint8Array(await new Response(file.body).arrayBuffer()));
    else await writeStream(e, file.etag, file.body);
  };

  if (carried?.size) {
    const fetched: SyncEntry[] = [];
    for (const e of todo) {
      const c = carried.get(e.path);
      if (c && c.etag === e.etag) {
        write(e, c.etag, c.bytes);
        stats.carried = (stats.carried ?? 0) + 1;
      } else fetched.push(e);
    }
    todo = fetched;
  }
  // Small files in batches, large ones alone, side by side. A file the server deferred (`later`)
  // goes into the next round of batches; one it could not bring (`missing`) is fetched alone after.
  const useBatches = todo.length > 1;
  let pending = useBatches ? todo.filter((e) => e.size <= BATCH_MAX_FILE_BYTES) : [];
  const alone = useBatches ? todo.filter((e) => e.size > BATCH_MAX_FILE_BYTES) : todo;
  const afterBatches: SyncEntry[] = [];
  let batching = true; // false once the API answered that it has no batches
  const batches = async () => {
    while (pending.length) {
      const later: SyncEntry[] = [];
      await pool(FETCH_CONCURRENCY, batchesOf(pending), async (batch) => {
        phases.requests++;
        const frames = batching ? await sync.fetchMany(batch.map((e) => e.path), batch.map((e) => e.etag)) : null;
        if (!frames) {
          batching = false;
          return void afterBatches.push(...batch);
        }
        const byPath = new Map(batch.map((e) => [e.path, e]));
        for await (const f of frames) {
          const e = byPath.get(f.path)!; // each asked path exactly once (checked by readFrames)
          if ("bytes" in f) write(e, f.etag, f.bytes);
          else if ("later" in f) later.push(e);
          else afterBatches.push(e);
        }
      });
      if (later.length === pending.length) return void afterBatches.push(...later); // no progress: alone
      pending = later;
    }
  };
  await Promise.all([batches(), pool(concurrency, alone, fetchOne)]);
  await pool(concurrency, afterBatches, fetchOne);
  log(JSON.stringify({ files: stats.downloaded_files, bytes: stats.downloaded_bytes, batch_requests: phases.requests, alone: alone.length + afterBatches.length, first_frame_ms: Math.round(phases.firstFrameMs), write_ms: Math.round(phases.writeMs), wall_ms: Math.round(performance.now() - t0) }));
}
