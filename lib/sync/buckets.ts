/**
 * The buckets of the conditional manifest (lib/sync/manifest.ts): which bucket a path falls in (the
 * same on both ends), a bucket's digest, and a layered workspace's merged view by bucket: the lower
 * manifest's buckets and digests made once per manifest and bucket count, only the buckets the upper
 * layer touches merged and hashed again. Bundles for Workers and runs in the runner.
 */
import { bytesToBase64Url } from "../shared/text.js";
import { compareKeys } from "../layout/key-order.js";
import type { ObjectInfo } from "../storage/types.js";
import type { Manifest, ManifestEntry } from "../layers/manifest.js";
import type { Whiteouts } from "../layers/whiteout.js";
import type { SyncEntry } from "./types.js";

/** FNV-1a over the UTF-16 code units: the same bucket on both ends. */
export function bucketOf(path: string, buckets: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) h = Math.imul(h ^ path.charCodeAt(i), 0x01000193);
  return (h >>> 0) % buckets;
}

const enc = new TextEncoder();
const byPath = (a: [string, string], b: [string, string]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * SHA-256 of one bucket's [path, etag] pairs, sorted by path, as JSON (unambiguous for any
 * string). Size is left out: reconcile goes by etag alone.
 */
export async function digestOf(entries: Iterable<{ path: string; etag: string }>): Promise<string> {
  const pairs: [string, string][] = [];
  for (const e of entries) pairs.push([e.path, e.etag]);
  pairs.sort(byPath);
  return bytesToBase64Url(new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(JSON.stringify(pairs)))));
}

/** The digest of every bucket of `entries`. */
export async function bucketDigests(entries: Iterable<{ path: string; etag: string }>, buckets: number): Promise<string[]> {
  const groups: { path: string; etag: string }[][] = Array.from({ length: buckets }, () => []);
  for (const e of entries) groups[bucketOf(e.path, buckets)]!.push(e);
  return Promise.all(groups.map(digestOf));
}

/*
 * The bucket digests of a layered workspace's merged view without hashing every entry on every
 * answer. A bucket no upper object falls in (no file, no whiteout) holds exactly the lower
 * manifest's entries of that bucket, whose digest never changes: the lower manifest's buckets
 * and digests are made once per manifest and bucket count (Manifest.derive, kept in the
 * isolate's ManifestCache), and only the buckets the upper layer touches are hashed again, from
 * the lower bucket with the upper objects over it (the rule of mergeAll: an upper file replaces
 * the lower entry of its path, a whiteout hides it). A workspace after an import or a
 * checkpoint, with a few files written since, hashes a few buckets instead of all of them
 * (10,000 files: every bucket was ~20 ms of CPU per answer).
 */

interface LowerBuckets {
  /** The manifest's entries by bucket. */
  groups: ManifestEntry[][];
  /**
   * Each bucket's digest, once a request has hashed them. A value, never a promise: a promise kept
   * per isolate would make later requests wait on the request that started it (Manifest.derive).
   */
  digests?: string[];
}

/** The lower manifest's entries by bucket (and, once known, their digests): made once per manifest and bucket count. */
const lowerBuckets = (m: Manifest, buckets: number): LowerBuckets =>
  m.derive(`bucket-digests:${buckets}`, () => {
    const groups: ManifestEntry[][] = Array.from({ length: buckets }, () => []);
    for (const e of m.entries) groups[bucketOf(e.path, buckets)]!.push(e);
    return { groups };
  });

/**
 * The digest of every bucket of the view `upper` (the upper layer's listing, whiteouts included,
 * resolved, keys under `prefix`) makes over manifest `m`: equal to bucketDigests(mergeAll(upper, m, prefix, whiteouts)).
 */
export async function mergedDigests(upper: readonly ObjectInfo[], m: Manifest, prefix: string, buckets: number, whiteouts: Whiteouts): Promise<string[]> {
  return (await mergedBuckets(upper, m, prefix, buckets, whiteouts)).digests;
}

/** The merged view of a layered workspace by bucket (mergedBuckets). */
export interface MergedBuckets {
  /** Each bucket's digest: bucketDigests of the whole merged view. */
  digests: string[];
  /** The view's entries in bucket `b`, in storage order: the lower manifest's own where the upper layer touches none of its paths. */
  entriesOf(b: number): readonly SyncEntry[];
  /** How many entries the whole view holds (mergeAll's length). */
  count: number;
}

/**
 * The view `upper` makes over manifest `m` (see mergedDigests), bucket by bucket: only the buckets
 * the upper layer touches are merged (an upper file replaces the lower entry of its path, a whiteout
 * hides it), and the count follows from theirs.
 */
export async function mergedBuckets(upper: readonly ObjectInfo[], m: Manifest, prefix: string, buckets: number, whiteouts: Whiteouts): Promise<MergedBuckets> {
  const lower = lowerBuckets(m, buckets);
  // Per touched bucket: the upper layer's word on each of its paths (null: a whiteout hides it).
  const touched = new Map<number, Map<string, SyncEntry | null>>();
  for (const o of upper) {
    const path = o.key.slice(prefix.length);
    const b = bucketOf(path, buckets);
    let over = touched.get(b);
    if (!over) touched.set(b, (over = new Map()));
    over.set(path, whiteouts.is(o) ? null : { path, etag: o.etag, size: o.size });
  }
  // Hashed by each request that finds them missing (the first few at once may each hash them; the same result).
  lower.digests ??= await Promise.all(lower.groups.map((g) => digestOf(g)));
  const digests = lower.digests.slice();
  const merged = new Map<number, SyncEntry[]>();
  let count = m.entries.length;
  await Promise.all(
    [...touched].map(async ([b, over]) => {
      const view: SyncEntry[] = [];
      for (const e of lower.groups[b]!) if (!over.has(e.path)) view.push(e);
      for (const e of over.values()) if (e) view.push(e);
      view.sort((x, y) => compareKeys(x.path, y.path));
      merged.set(b, view);
      count += view.length - lower.groups[b]!.length;
      digests[b] = await digestOf(view);
    }),
  );
  return { digests, entriesOf: (b) => merged.get(b) ?? lower.groups[b]!, count };
}
