/**
 * The bytes of a few small changed files, carried with a live command (lib/sync/live-types.ts,
 * LiveCommand.files): after a tool's edit between two commands, the runner's sync-in then writes
 * them from the poll's answer and makes no download request for them. Both ends; bundles for Workers.
 *
 *   the poll:    manifest: {…the conditional manifest query, held: base64 of one u32 per entry of the view}
 *   the answer:  command: {…, manifest: {…}, files: [[path, etag, base64 of the bytes]]}
 *
 * `held` marks each [path, etag] pair of the runner's view (FNV-1a, 32 bits: heldMark). With the
 * manifest's answer (lib/sync/manifest.ts) the API knows every entry of the buckets that differ;
 * those whose mark is not held are what the view lacks: the runner's `changed` list but its
 * deletions (ManifestView.apply). When they are few and small (CARRY_MAX_FILES, CARRY_MAX_BYTES)
 * the API reads them itself, through the token's workspace only (the merged view the batch route
 * reads), each kept only when storage gives exactly the listed version (etag and size). A mark that
 * collides only leaves a file to be fetched as before; a carried file is written only where its etag
 * is the one the manifest lists (infra/container/download.ts). A view of more than CARRY_VIEW_MAX
 * entries sends no marks, and nothing is carried.
 */
import type { ManifestAnswer, ManifestQuery } from "./manifest.js";
import type { SyncEntry } from "./types.js";
import type { StorageDriver } from "../storage/types.js";
import { fileKey, isDirMarker } from "../layout/paths.js";
import { decodeBase64, encodeBase64 } from "../shared/text.js";

/**
 * Files one command may carry, and their bytes in all. Sized for what a tool edits between two
 * commands (a few source files of some KB each), and small enough to hold: the answer is built in
 * the memory of the request holding the runner's poll (a Worker's 128 MB, an API Lambda's), read by
 * at most 16 storage GETs beside the manifest's reads (the batch route reads up to 64 one by one),
 * and base64 makes 256 KiB about 342 KB of JSON, which the runner parses in a few ms. Past either
 * bound nothing is carried: the runner's one batch request brings them, as before, and that request
 * is then a small part of moving that many bytes.
 */
export const CARRY_MAX_FILES = 16;
export const CARRY_MAX_BYTES = 256 * 1024;
/** A view up to this many entries sends its marks with the poll (4 bytes each: 64 KiB, 87 KB of base64 at most). */
export const CARRY_VIEW_MAX = 16_384;

/** A file's bytes at one version, as carried. */
export interface CarriedFile {
  etag: string;
  bytes: Uint8Array;
}

/** The mark of one [path, etag] pair: FNV-1a over the path's and etag's UTF-16 code units, a 0 between. */
export function heldMark(path: string, etag: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) h = Math.imul(h ^ path.charCodeAt(i), 0x01000193);
  h = Math.imul(h, 0x01000193); // the separator (0)
  for (let i = 0; i < etag.length; i++) h = Math.imul(h ^ etag.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The marks of a view's entries as a poll sends them; undefined past CARRY_VIEW_MAX entries. */
export function heldMarks(entries: Iterable<SyncEntry>, size: number): string | undefined {
  if (size > CARRY_VIEW_MAX) return undefined;
  const out = new Uint8Array(size * 4);
  const dv = new DataView(out.buffer);
  let i = 0;
  for (const e of entries) {
    if (i === size) break;
    dv.setUint32(4 * i++, heldMark(e.path, e.etag));
  }
  return encodeBase64(out.subarray(0, 4 * i));
}

/** The marks a poll sent (its manifest query's `held`); null when absent or not marks (nothing is carried then). */
export function parseHeld(query: unknown): Set<number> | null {
  const held = (query as { held?: unknown } | null)?.held;
  if (typeof held !== "string" || held.length > 4 * Math.ceil((CARRY_VIEW_MAX * 4) / 3)) return null;
  const bytes = decodeBase64(held);
  if (!bytes || bytes.length % 4) return null;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const out = new Set<number>();
  for (let i = 0; i < bytes.length; i += 4) out.add(dv.getUint32(i));
  return out;
}

/**
 * The files of `answer` (to `query`) whose [path, etag] the view does not hold (what it lacks), when
 * they are at most CARRY_MAX_FILES and CARRY_MAX_BYTES in all and nothing sends the runner's sync-in
 * the whole way (the execute bits or symlinks changed: another etag than the query's; a directory's
 * marker changed); else null.
 */
export function carryable(query: ManifestQuery, answer: ManifestAnswer, held: Set<number>): SyncEntry[] | null {
  if (typeof answer.modes === "object" && answer.modes.etag !== query.modes) return null;
  const want: SyncEntry[] = [];
  let bytes = 0;
  for (const e of answer.files) {
    if (held.has(heldMark(e.path, e.etag))) continue;
    if (isDirMarker(e.path) || want.length === CARRY_MAX_FILES || (bytes += e.size) > CARRY_MAX_BYTES) return null;
    want.push(e);
  }
  return want.length ? want : null;
}

/**
 * The bytes of `want` (entries of the token's workspace tenant/ws, as listed) read through `driver`
 * (that workspace's merged view), side by side. A file is kept only when storage gives the listed
 * version (etag and size: never more than the listed bytes are read); any other (changed or deleted
 * since the listing, unreadable) is left out, and the runner fetches it as before.
 */
export async function readCarried(driver: StorageDriver, tenant: string, ws: string, want: readonly SyncEntry[]): Promise<[string, CarriedFile][]> {
  const read = async (e: SyncEntry): Promise<[string, CarriedFile] | null> => {
    try {
      const got = await driver.get(fileKey(tenant, ws, e.path));
      if (!got) return null;
      if (got.etag !== e.etag || got.size !== e.size) {
        await got.body.cancel();
        return null;
      }
      const bytes = new Uint8Array(await new Response(got.body).arrayBuffer());
      return bytes.length === e.size ? [e.path, { etag: e.etag, bytes }] : null;
    } catch {
      return null;
    }
  };
  return (await Promise.all(want.map(read))).filter((f) => f !== null);
}

/** Carried files as the answer's JSON: [path, etag, base64]. */
export const carriedBody = (files: readonly [string, CarriedFile][]): [string, string, string][] => files.map(([path, f]) => [path, f.etag, encodeBase64(f.bytes)]);

/**
 * Carried files from the wire (LiveCommand.files), by path; empty when there are none, or when they
 * are not what an API sends (malformed, or past the bounds): the runner then fetches as before.
 */
export function carriedFilesOf(body: unknown): Map<string, CarriedFile> {
  const out = new Map<string, CarriedFile>();
  if (!Array.isArray(body) || body.length > CARRY_MAX_FILES) return out;
  let bytes = 0;
  for (const f of body) {
    if (!Array.isArray(f) || typeof f[0] !== "string" || typeof f[1] !== "string" || typeof f[2] !== "string" || f[2].length > Math.ceil(CARRY_MAX_BYTES / 3) * 4) return new Map();
    const data = decodeBase64(f[2]);
    if (!data || (bytes += data.length) > CARRY_MAX_BYTES || out.has(f[0])) return new Map();
    out.set(f[0], { etag: f[1], bytes: data });
  }
  return out;
}
