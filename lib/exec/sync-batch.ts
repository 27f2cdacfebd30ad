/**
 * Batched download for the runner: many small files in one request, so a cold start costs
 * one round trip per batch instead of one per file. Both ends; bundles for Workers.
 *
 *   POST /v1/sync/fetch  {paths: [path], etags?: [listed etag]} (server: sync-fetch.ts)
 *   →  application/vnd.toolshed.files: one frame per
 *   path, in the order asked: u32 (big-endian) length of a JSON header, the header
 *   {path, etag, size} (or {path, missing: true}: gone, or larger than BATCH_MAX_FILE_BYTES,
 *   fetch it alone), then `size` bytes.
 *
 * A batch holds at most BATCH_MAX_FILES paths (a Worker's storage calls per request are
 * limited) and is meant for files up to BATCH_MAX_FILE_BYTES; the runner sizes batches from
 * the manifest to about BATCH_TARGET_BYTES.
 */
import { ToolError } from "../errors.js";
import { normalizeFilePath } from "../paths.js";
import type { StorageDriver } from "../storage/types.js";

export const BATCH_MAX_FILES = 64;
export const BATCH_MAX_FILE_BYTES = 1024 * 1024;
export const BATCH_TARGET_BYTES = 4 * 1024 * 1024;
export const BATCH_CONTENT_TYPE = "application/vnd.toolshed.files";

export type BatchFile = { path: string; etag: string; size: number; bytes: Uint8Array } | { path: string; missing: true };

/** A batch request from the wire, checked: canonical paths, bounded. Throws INVALID_ARGUMENT. */
export function parseBatchRequest(body: unknown): string[] {
  const paths = (body as { paths?: unknown } | null)?.paths;
  if (!Array.isArray(paths) || paths.length < 1 || paths.length > BATCH_MAX_FILES) throw new ToolError("INVALID_ARGUMENT", `paths must be an array of 1 to ${BATCH_MAX_FILES} paths.`);
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

/** The response body of a batch: frames in the order of `paths`, at most `parallel` files read at once. */
export function batchStream(paths: string[], read: (path: string, index: number) => Promise<BatchFile>, parallel = 6): ReadableStream<Uint8Array> {
  const pending: Promise<BatchFile>[] = [];
  let started = 0;
  let sent = 0;
  const top = () => {
    while (started < paths.length && started - sent < parallel) pending[started] = read(paths[started]!, started++);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      top();
      if (sent === paths.length) return controller.close();
      const f = await pending[sent]!;
      delete pending[sent++];
      controller.enqueue(encodeFrame(f));
      top();
    },
  });
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One frame: header length, header, bytes. */
export function encodeFrame(f: BatchFile): Uint8Array {
  const head = enc.encode(JSON.stringify("missing" in f ? { path: f.path, missing: true } : { path: f.path, etag: f.etag, size: f.bytes.length }));
  const body = "missing" in f ? new Uint8Array(0) : f.bytes;
  const out = new Uint8Array(4 + head.length + body.length);
  new DataView(out.buffer).setUint32(0, head.length);
  out.set(head, 4);
  out.set(body, 4 + head.length);
  return out;
}

/** The frames of a whole response; throws INTERNAL on anything malformed or other paths than asked. */
export function decodeFrames(buf: Uint8Array, asked: string[]): BatchFile[] {
  const bad = (why: string) => new ToolError("INTERNAL", `Workspace sync failed (batch fetch): ${why}.`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: BatchFile[] = [];
  let at = 0;
  while (at < buf.length) {
    if (at + 4 > buf.length) throw bad("truncated header length");
    const n = view.getUint32(at);
    if (at + 4 + n > buf.length) throw bad("truncated header");
    let head: { path?: unknown; etag?: unknown; size?: unknown; missing?: unknown };
    try {
      head = JSON.parse(dec.decode(buf.subarray(at + 4, at + 4 + n)));
    } catch {
      throw bad("a header is not JSON");
    }
    at += 4 + n;
    const path = asked[out.length];
    if (path === undefined || head.path !== path) throw bad(`frame ${out.length} is not ${JSON.stringify(path ?? "asked for")}`);
    if (head.missing === true) {
      out.push({ path, missing: true });
      continue;
    }
    const size = head.size;
    if (typeof size !== "number" || !Number.isInteger(size) || size < 0 || at + size > buf.length || typeof head.etag !== "string") throw bad("a bad frame");
    out.push({ path, etag: head.etag, size, bytes: buf.subarray(at, at + size) });
    at += size;
  }
  if (out.length !== asked.length) throw bad(`${out.length} frames for ${asked.length} paths`);
  return out;
}

/** Splits files into batches of at most BATCH_MAX_FILES and about BATCH_TARGET_BYTES. */
export function batchesOf<T extends { size: number }>(files: T[]): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let bytes = 0;
  for (const f of files) {
    if (cur.length && (cur.length >= BATCH_MAX_FILES || bytes + f.size > BATCH_TARGET_BYTES)) {
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
