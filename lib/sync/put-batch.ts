/**
 * Batched write-back, the wire format of both ends (bundles for Workers):
 *
 *   POST /v1/sync/put[?<plan>] application/vnd.toolshed.files: one frame per file, the framing of
 *                         the batch fetch (lib/sync/batch.ts): u32 (big-endian) length of a JSON
 *                         header {path, size, if_match?: etag | create?: true}, then `size` bytes.
 *                         → { files: [{path, etag} | {path, conflict: true} | {path, error}] }
 *   POST /v1/sync/delete  { files: [{path, etag}] } → { files: [{path, deleted: true} | {path, conflict: true} | {path, error}] }
 *
 * Answers list every file in the order sent. A batch holds at most PUT_BATCH_MAX_FILES files of
 * at most BATCH_MAX_FILE_BYTES each (larger ones keep the single PUT), PUT_BATCH_MAX_BYTES in
 * all; a delete batch at most DELETE_BATCH_MAX_FILES. Refusals are per file (a bad path, a
 * missing condition): the batch's other files are written. A malformed or oversized body stops
 * the batch where it is: the answer (HTTP 400) still lists what happened to the files before.
 * A batch may carry the write-back's plan in its query (lib/sync/writeback-bound.ts): the API then
 * refuses the whole write-back (413 QUOTA_EXCEEDED, no file written) when the storage quotas could
 * not accept it; such a batch may hold no file (the plan alone, sent before the write-back starts).
 */
import { ToolError } from "../shared/errors.js";
import { BATCH_CONTENT_TYPE, BATCH_MAX_FILE_BYTES } from "./batch.js";

export const PUT_BATCH_MAX_FILES = 64;
/** What the server takes in one put batch; the runner aims at PUT_BATCH_TARGET_BYTES. */
export const PUT_BATCH_MAX_BYTES = 8 * 1024 * 1024;
export const PUT_BATCH_TARGET_BYTES = 4 * 1024 * 1024;
export const DELETE_BATCH_MAX_FILES = 256;
export { BATCH_CONTENT_TYPE, BATCH_MAX_FILE_BYTES };

/** Longest frame header: a path of up to 768 bytes, JSON-escaped, an etag and a size. */
const MAX_HEADER_BYTES = 8 * 1024;

export interface PutManyItem {
  path: string;
  bytes: Uint8Array;
  ifMatch?: string;
  ifNoneMatch?: "*";
}

export type PutManyResult = { path: string; ok: true; etag: string } | { path: string; ok: false; conflict: true } | { path: string; ok: false; error: string };
/** `gone`: deleted by another writer before this request (the room it frees was not this write-back's to hold). */
export type DeleteManyResult = { path: string; ok: true; gone?: true } | { path: string; ok: false; conflict: true } | { path: string; ok: false; error: string };

/** One frame as the server reads it: the header's fields unchecked but for the size. */
export interface PutFrame {
  path: unknown;
  ifMatch: unknown;
  create: unknown;
  bytes: Uint8Array;
}

/** What the server answers for one file (the JSON of the wire). */
export type PutAnswer = { path: string; etag: string } | { path: string; conflict: true } | { path: string; error: { code: string; message: string } };
export type DeleteAnswer = { path: string; deleted: true; gone?: true } | { path: string; conflict: true } | { path: string; error: { code: string; message: string } };

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The request body of a put batch, one frame per pull (the bytes are the caller's; nothing is copied twice). */
export function putBatchBody(items: PutManyItem[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const f = items[i++];
      if (!f) return controller.close();
      const head = enc.encode(JSON.stringify({ path: f.path, size: f.bytes.length, ...(f.ifMatch !== undefined ? { if_match: f.ifMatch } : {}), ...(f.ifNoneMatch ? { create: true } : {}) }));
      const len = new Uint8Array(4);
      new DataView(len.buffer).setUint32(0, head.length);
      controller.enqueue(len);
      controller.enqueue(head);
      if (f.bytes.length) controller.enqueue(f.bytes);
    },
  });
}

/** Reads exactly n bytes at a time from a stream; holds at most one file's bytes beyond what was asked. */
class ByteReader {
  private chunks: Uint8Array[] = [];
  private have = 0;
  private done = false;
  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  /** Exactly n bytes, or null at the end of the stream before any of them (a truncated frame throws). */
  async take(n: number): Promise<Uint8Array | null> {
    while (this.have < n && !this.done) {
      const r = await this.reader.read();
      if (r.done) this.done = true;
      else if (r.value.length) {
        this.chunks.push(r.value);
        this.have += r.value.length;
      }
    }
    if (this.have === 0 && n > 0) return null;
    if (this.have < n) throw new ToolError("INVALID_ARGUMENT", "The put batch ends inside a frame; send the batch again.");
    const out = new Uint8Array(n);
    let at = 0;
    let used = 0; // chunks consumed whole: dropped once at the end (no shift per chunk: tiny chunks stay linear)
    while (at < n) {
      const c = this.chunks[used]!;
      const k = Math.min(c.length, n - at);
      out.set(c.subarray(0, k), at);
      at += k;
      if (k === c.length) used++;
      else this.chunks[used] = c.subarray(k);
    }
    this.chunks = this.chunks.slice(used);
    this.have -= n;
    return out;
  }
}

/**
 * The frames of a put batch as they arrive (the body is never read whole). Throws
 * INVALID_ARGUMENT / PAYLOAD_TOO_LARGE when the framing is broken or over the limits, at the
 * frame where it happens: frames yielded before are the caller's to finish. `empty`: a body of no
 * frame is allowed (a batch that only carries the write-back's plan).
 */
export async function* readPutFrames(body: ReadableStream<Uint8Array> | null, limits: { files: number; bytes: number; empty?: boolean } = { files: PUT_BATCH_MAX_FILES, bytes: PUT_BATCH_MAX_BYTES }): AsyncGenerator<PutFrame> {
  if (!body && limits.empty) return;
  if (!body) throw new ToolError("INVALID_ARGUMENT", "A put batch needs a body of frames.");
  const reader = body.getReader();
  const bytes = new ByteReader(reader);
  let files = 0;
  let total = 0;
  try {
    for (;;) {
      const len = await bytes.take(4);
      if (!len) break;
      const n = new DataView(len.buffer).getUint32(0);
      if (n < 2 || n > MAX_HEADER_BYTES) throw new ToolError("INVALID_ARGUMENT", `Frame ${files}: a header of ${n} bytes; at most ${MAX_HEADER_BYTES}.`);
      const raw = await bytes.take(n);
      if (!raw) throw new ToolError("INVALID_ARGUMENT", "The put batch ends inside a frame; send the batch again.");
      let head: { path?: unknown; size?: unknown; if_match?: unknown; create?: unknown };
      try {
        head = JSON.parse(dec.decode(raw));
      } catch {
        throw new ToolError("INVALID_ARGUMENT", `Frame ${files}: the header is not JSON.`);
      }
      const size = head?.size;
      if (typeof size !== "number" || !Number.isInteger(size) || size < 0) throw new ToolError("INVALID_ARGUMENT", `Frame ${files}: size must be a non-negative integer.`);
      if (size > BATCH_MAX_FILE_BYTES) throw new ToolError("PAYLOAD_TOO_LARGE", `Frame ${files}: ${size} bytes; files over ${BATCH_MAX_FILE_BYTES} bytes go alone (PUT /v1/sync/files/<path>).`);
      if (++files > limits.files) throw new ToolError("PAYLOAD_TOO_LARGE", `A put batch holds at most ${limits.files} files; send the rest in another batch.`);
      total += size;
      if (total > limits.bytes) throw new ToolError("PAYLOAD_TOO_LARGE", `A put batch holds at most ${limits.bytes} bytes; send the rest in another batch.`);
      const content = size === 0 ? new Uint8Array(0) : await bytes.take(size);
      if (!content) throw new ToolError("INVALID_ARGUMENT", "The put batch ends inside a frame; send the batch again.");
      yield { path: head.path, ifMatch: head.if_match, create: head.create, bytes: content };
    }
    if (files === 0 && !limits.empty) throw new ToolError("INVALID_ARGUMENT", "A put batch needs at least one frame.");
  } finally {
    await reader.cancel().catch(() => {});
  }
}

const errorText = (e: { code: string; message: string }) => `${e.code}: ${e.message}`;

function answersOf<A extends { path: string }>(body: unknown, paths: string[], what: string): (A | undefined)[] {
  const files = (body as { files?: unknown } | null)?.files;
  if (!Array.isArray(files) || files.length > paths.length) throw new ToolError("INTERNAL", `Workspace sync failed (${what}): malformed answer.`);
  return paths.map((p, i) => {
    const a = files[i] as A | null | undefined;
    if (a == null) return undefined;
    if (a.path !== p) throw new ToolError("INTERNAL", `Workspace sync failed (${what}): answer ${i} is not ${JSON.stringify(p)}.`);
    return a;
  });
}

/** Per-file results of a put batch's answer, in the order sent; a file the answer does not reach is an error with `why`. */
export function putResults(body: unknown, paths: string[], why: string): PutManyResult[] {
  return answersOf<PutAnswer>(body, paths, "put batch").map((a, i): PutManyResult => {
    const path = paths[i]!;
    if (!a) return { path, ok: false, error: why };
    if ("etag" in a && typeof a.etag === "string") return { path, ok: true, etag: a.etag };
    if ("conflict" in a && a.conflict === true) return { path, ok: false, conflict: true };
    return { path, ok: false, error: "error" in a && a.error ? errorText(a.error) : "malformed answer" };
  });
}

/** Per-file results of a delete batch's answer, in the order sent. */
export function deleteResults(body: unknown, paths: string[], why: string): DeleteManyResult[] {
  return answersOf<DeleteAnswer>(body, paths, "delete batch").map((a, i): DeleteManyResult => {
    const path = paths[i]!;
    if (!a) return { path, ok: false, error: why };
    if ("deleted" in a && a.deleted === true) return { path, ok: true, ...(a.gone === true ? { gone: true as const } : {}) };
    if ("conflict" in a && a.conflict === true) return { path, ok: false, conflict: true };
    return { path, ok: false, error: "error" in a && a.error ? errorText(a.error) : "malformed answer" };
  });
}
