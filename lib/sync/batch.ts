/**
 * Batched download for the runner: many small files in one request, so a cold start costs
 * one round trip per batch instead of one per file. Both ends; bundles for Workers.
 *
 *   POST /v1/sync/fetch  {paths: [path], etags?: [listed etag], order?: "any"} (server: lib/sync/fetch.ts)
 *   →  application/vnd.toolshed.files: one frame per
 *   path, in the order asked (with order "any": in the order the server reads them): u32 (big-endian) length of a JSON header, the header
 *   {path, etag, size} (or {path, missing: true}: gone, or larger than BATCH_MAX_FILE_BYTES,
 *   fetch it alone; or {path, later: true}: not read in this answer, ask again in another
 *   batch), then `size` bytes.
 *
 * A batch holds at most FETCH_MAX_FILES paths and is meant for files up to BATCH_MAX_FILE_BYTES;
 * the runner sizes batches from the manifest to about FETCH_TARGET_BYTES. Both ends stream: the
 * server sends frames as its reads complete, the runner writes each file as its frame arrives.
 */
import { ToolError } from "../shared/errors.js";
import { MAX_PATH_BYTES, normalizeFilePath } from "../layout/paths.js";
import type { StorageDriver } from "../storage/types.js";

/** Paths in one fetch request. */
export const FETCH_MAX_FILES = 1000;
/** Files read one by one (not from packs) in one answer; the rest of those come back `later` (a Worker's storage calls per request are limited). */
export const FETCH_MAX_SINGLE = 64;
export const BATCH_MAX_FILE_BYTES = 1024 * 1024;
/** What the runner aims at per request. */
export const FETCH_TARGET_BYTES = 16 * 1024 * 1024;
export const BATCH_CONTENT_TYPE = "application/vnd.toolshed.files";
/** A request body: FETCH_MAX_FILES paths and etags as JSON (each at most twice its length once escaped). */
export const FETCH_MAX_QUERY_BYTES = FETCH_MAX_FILES * 2 * (MAX_PATH_BYTES + 256 + 8) + 64;

export type BatchFile =
  | { path: string; etag: string; size: number; bytes: Uint8Array }
  | { path: string; missing: true }
  | { path: string; later: true };

/** A batch request from the wire, checked: canonical paths, bounded. Throws INVALID_ARGUMENT. */
export function parseBatchRequest(body: unknown): string[] {
  const paths = (body as { paths?: unknown } | null)?.paths;
  if (!Array.isArray(paths) || paths.length < 1 || paths.length > FETCH_MAX_FILES) throw new ToolError("INVALID_ARGUMENT", `paths must be an array of 1 to ${FETCH_MAX_FILES} paths.`);
  return paths.map((p) => normalizeFilePath(p));
}

/** One file of a batch: its bytes, or missing (gone, too large for a batch, or unreadable: fetched alone, where a failure says why). */
export async function readBatchFile(driver: StorageDriver, key: string, path: string): Promise<BatchFile> {
  try {
    const got = await driver.get(key);
    if (!got) return { path, missing: true };
    if (got.size > BATCH_MAX_FILE_BYTES) {
      await got.body.cancel();
      return { path, missing: true };
    }
    const bytes = new Uint8Array(await new Response(got.body).arrayBuffer());
    return { path, etag: got.etag, size: bytes.length, bytes };
  } catch {
    return { path, missing: true };
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One frame: header length, header, bytes. */
export function encodeFrame(f: BatchFile): Uint8Array {
  const head = enc.encode(JSON.stringify("missing" in f ? { path: f.path, missing: true } : "later" in f ? { path: f.path, later: true } : { path: f.path, etag: f.etag, size: f.bytes.length }));
  const body = "bytes" in f ? f.bytes : new Uint8Array(0);
  const out = new Uint8Array(4 + head.length + body.length);
  new DataView(out.buffer).setUint32(0, head.length);
  out.set(head, 4);
  out.set(body, 4 + head.length);
  return out;
}

/** Bytes of a stream, taken n at a time (zero-copy when they lie in one chunk). */
class ByteQueue {
  private chunks: Uint8Array[] = [];
  private at = 0;
  private length = 0;
  done = false;
  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  /** Exactly n bytes; null when the stream ended before any of them (a clean end); throws when it ended inside. */
  async take(n: number): Promise<Uint8Array | null> {
    while (this.length < n) {
      const r = await this.reader.read();
      if (r.done) {
        this.done = true;
        if (this.length === 0) return null;
        throw new Error("truncated");
      }
      if (r.value.length) (this.chunks.push(r.value), (this.length += r.value.length));
    }
    const first = this.chunks[0];
    let out: Uint8Array;
    if (first && first.length - this.at >= n) {
      out = first.subarray(this.at, this.at + n);
      this.at += n;
    } else {
      out = new Uint8Array(n);
      let filled = 0;
      while (filled < n) {
        const c = this.chunks[0]!;
        const k = Math.min(n - filled, c.length - this.at);
        out.set(c.subarray(this.at, this.at + k), filled);
        filled += k;
        this.at += k;
        if (this.at === c.length) (this.chunks.shift(), (this.at = 0));
      }
    }
    if (first && this.at === first.length && this.chunks[0] === first) (this.chunks.shift(), (this.at = 0));
    this.length -= n;
    return out;
  }
}

/** Most bytes a frame header may have (a path of MAX_PATH_BYTES, escaped, and an etag). */
const MAX_HEADER_BYTES = 8 * MAX_PATH_BYTES + 1024;

/**
 * The frames of a response as they arrive, checked: one per asked path, in the order asked (in
 * any order with `anyOrder`, each path once), no file larger than BATCH_MAX_FILE_BYTES. Throws INTERNAL on anything else (and stops reading).
 */
export async function* readFrames(body: ReadableStream<Uint8Array>, asked: string[], anyOrder = false): AsyncGenerator<BatchFile> {
  const open = anyOrder ? new Set(asked) : null; // asked and not seen yet
  const bad = (why: string) => new ToolError("INTERNAL", `Workspace sync failed (batch fetch): ${why}.`);
  const reader = body.getReader();
  const q = new ByteQueue(reader);
  let n = 0;
  try {
    for (;;) {
      const len = await q.take(4).catch(() => {
        throw bad("truncated header length");
      });
      if (!len) break;
      const hl = new DataView(len.buffer, len.byteOffset, 4).getUint32(0);
      if (hl > MAX_HEADER_BYTES) throw bad("a header is too long");
      const raw = await q.take(hl).catch(() => null);
      if (!raw) throw bad("truncated header");
      let head: { path?: unknown; etag?: unknown; size?: unknown; missing?: unknown; later?: unknown };
      try {
        head = JSON.parse(dec.decode(raw));
      } catch {
        throw bad("a header is not JSON");
      }
      const path = open ? (typeof head.path === "string" && open.delete(head.path) ? head.path : undefined) : asked[n];
      if (path === undefined || head.path !== path) throw bad(`frame ${n} is not ${open ? "a path asked for (or it came twice)" : JSON.stringify(path ?? "asked for")}`);
      n++;
      if (head.missing === true || head.later === true) {
        yield head.missing === true ? { path, missing: true } : { path, later: true };
        continue;
      }
      const size = head.size;
      if (typeof size !== "number" || !Number.isInteger(size) || size < 0 || size > BATCH_MAX_FILE_BYTES || typeof head.etag !== "string") throw bad("a bad frame");
      const bytes = size === 0 ? new Uint8Array(0) : await q.take(size).catch(() => null);
      if (!bytes) throw bad("a bad frame");
      yield { path, etag: head.etag, size, bytes };
    }
    if (n !== asked.length) throw bad(`${n} frames for ${asked.length} paths`);
  } finally {
    if (!q.done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/** Every frame of an answer (tests, and callers that want them all at once). */
export async function allFrames(frames: AsyncIterable<BatchFile>): Promise<BatchFile[]> {
  const out: BatchFile[] = [];
  for await (const f of frames) out.push(f);
  return out;
}

/** Splits files, in their order, into batches of at most `maxFiles` and `targetBytes` in all (a file larger than that makes a batch of its own): the runner's fetches (default: FETCH_MAX_FILES, FETCH_TARGET_BYTES) and put batches. */
export function batchesOf<T extends { size: number }>(files: T[], maxFiles = FETCH_MAX_FILES, targetBytes = FETCH_TARGET_BYTES): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let bytes = 0;
  for (const f of files) {
    if (cur.length && (cur.length >= maxFiles || bytes + f.size > targetBytes)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(f);
    bytes += f.size;
  }
  if (cur.length) out.push(cur);
  return out;
}
