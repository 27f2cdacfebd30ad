/**
 * Write-back of a finished run. Rule: PER FILE, each file whole or not at all, each write
 * conditional on the version the run started from (If-Match; If-None-Match: * for files
 * the command created; deletes with If-Match). A file a tool changed meanwhile is not
 * overwritten: it is listed under `conflicts` and the command's version is saved at
 * `.toolshed/conflicts/<run>/<path>`, so neither change is lost. A run that timed out or
 * was killed writes back nothing (its changes are listed under `discarded`).
 *
 * Bounded: at most `maxFiles` changes, and no change is started after `deadline` (the requests
 * in flight then finish: cutting one off would leave unknown whether it was written). What is
 * left is returned as `unsynced`: those changes are not in the workspace.
 */
import { createHash } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import { join } from "node:path";
import { Readable, Transform } from "node:stream";
import type { Conflict, Skipped, SyncClient, UnsyncedReason } from "../../lib/exec/types.js";
import { fingerprint, isExec, pool, type Change, type FileState } from "./tree.js";

/** Files up to this size are read whole; larger ones are streamed. */
const INLINE_BYTES = 4 * 1024 * 1024;

export interface WriteBackOutcome {
  written: Map<string, FileState>;
  created: string[];
  modified: string[];
  deleted: string[];
  conflicts: Conflict[];
  skipped: Skipped[];
  uploaded_bytes: number;
  /** Changes not written back (path order): over maxFiles, or not started before the deadline. */
  unsynced: { paths: string[]; reasons: UnsyncedReason[] };
}

interface Body {
  body: Uint8Array | ReadableStream<Uint8Array>;
  size: number;
  hash: () => string;
}

async function openBody(abs: string): Promise<{ body: Body; close: () => Promise<void> }> {
  const fh = await fs.open(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
  const st = await fh.stat();
  if (!st.isFile()) {
    await fh.close();
    throw new Error("not a regular file");
  }
  const h = createHash("sha256");
  if (st.size <= INLINE_BYTES) {
    const buf = await fh.readFile();
    await fh.close();
    h.update(buf);
    const digest = h.digest("hex");
    return { body: { body: new Uint8Array(buf.buffer, buf.byteOffset, buf.length), size: buf.length, hash: () => digest }, close: async () => {} };
  }
  const tap = new Transform({
    transform(chunk: Buffer, _e, cb) {
      h.update(chunk);
      cb(null, chunk);
    },
  });
  const stream = fh.createReadStream({ autoClose: true }).pipe(tap);
  const web = Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array>;
  let digest: string | null = null;
  return { body: { body: web, size: st.size, hash: () => (digest ??= h.digest("hex")) }, close: () => fh.close().catch(() => {}) };
}

export async function writeBack(opts: {
  tree: string;
  changes: Change[];
  sync: SyncClient;
  runId: string;
  maxFiles: number;
  /** Epoch ms after which no further change is started. */
  deadline: number;
  concurrency?: number;
  now?: () => number;
}): Promise<WriteBackOutcome> {
  const now = opts.now ?? Date.now;
  const out: WriteBackOutcome = { written: new Map(), created: [], modified: [], deleted: [], conflicts: [], skipped: [], uploaded_bytes: 0, unsynced: { paths: [], reasons: [] } };
  const accepted = opts.changes.slice(0, opts.maxFiles);
  const overLimit = opts.changes.slice(opts.maxFiles).map((c) => c.path);
  const late: string[] = [];

  const saveCopy = async (path: string): Promise<string | undefined> => {
    const saved = `.toolshed/conflicts/${opts.runId}/${path}`;
    try {
      const { body, close } = await openBody(join(opts.tree, path));
      try {
        const r = await opts.sync.put(saved, body.body, { ifNoneMatch: "*", size: body.size });
        return r.ok ? saved : undefined;
      } finally {
        await close();
      }
    } catch {
      return undefined;
    }
  };

  await pool(opts.concurrency ?? 16, accepted, async (c) => {
    if (now() >= opts.deadline) {
      late.push(c.path);
      return;
    }
    try {
      if (c.kind === "deleted") {
        const r = await opts.sync.delete(c.path, { ifMatch: c.base!.etag });
        if (r.ok) out.deleted.push(c.path);
        else out.conflicts.push({ path: c.path, change: "deleted", reason: "changed_meanwhile" });
        return;
      }
      const abs = join(opts.tree, c.path);
      const { body, close } = await openBody(abs);
      let r;
      try {
        r = await opts.sync.put(c.path, body.body, { ...(c.base ? { ifMatch: c.base.etag } : { ifNoneMatch: "*" as const }), size: body.size });
      } finally {
        await close();
      }
      if (!r.ok) {
        const saved_as = await saveCopy(c.path);
        out.conflicts.push({ path: c.path, change: c.kind, reason: "changed_meanwhile", ...(saved_as ? { saved_as } : {}) });
        return;
      }
      const st = await fs.lstat(abs, { bigint: true });
      out.written.set(c.path, { etag: r.etag, size: body.size, hash: body.hash(), fp: fingerprint(st), exec: isExec(st.mode) });
      out.uploaded_bytes += body.size;
      (c.kind === "created" ? out.created : out.modified).push(c.path);
    } catch (e) {
      out.skipped.push({ path: c.path, reason: "error", detail: String((e as Error).message ?? e).slice(0, 300) });
    }
  });
  for (const list of [out.created, out.modified, out.deleted]) list.sort();
  if (overLimit.length) out.unsynced.reasons.push("limit");
  if (late.length) out.unsynced.reasons.push("deadline");
  out.unsynced.paths = [...late, ...overLimit].sort();
  out.conflicts.sort((a, b) => (a.path < b.path ? -1 : 1));
  return out;
}
