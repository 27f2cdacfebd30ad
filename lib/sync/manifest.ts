/**
 * The conditional manifest, shared by both ends (the asker's side: lib/sync/view.ts): the runner
 * sends what it believes storage holds as digests of B buckets (path → bucket by hash); the server lists storage,
 * which stays the source of truth, and sends back only the entries of buckets whose digest
 * differs. A warm call on an unchanged workspace ships B "same" flags instead of every entry.
 * The same request carries the workspace's execute bits (lib/layout/modes.ts), "same" when the
 * asker's version is current: one round trip per run.
 *
 * Every answer also names the listing it was made from (LayerState: the lower layer's manifest id
 * and pointer seq, a SHA-256 of the upper layer's listing, the count). A manifest id never
 * changes what it holds, so base + upper listing fix the merged listing exactly: an asker whose
 * view is still that listing sends the state back, and when the pointer and the upper listing
 * are unchanged the server answers "all the same" from ONE listing of the upper layer, without
 * merging the lower layer or hashing buckets (DESIGN.md §5). Anything else: the full answer.
 * Bundles for Workers.
 */
import { ToolError } from "../shared/errors.js";
import { bytesToBase64Url } from "../shared/text.js";
import type { ListResult, ObjectInfo, StorageDriver } from "../storage/types.js";
import type { LowerLayer } from "../layers/open.js";
import { mergeAll } from "../layers/merge-list.js";
import type { Whiteouts } from "../layers/whiteout.js";
import type { ClaimOutcome, ClaimRequest, SyncClient, SyncEntry } from "./types.js";
import type { ExecModes } from "../layout/modes.js";
import { compareKeys } from "../layout/key-order.js";
import { bucketDigests, bucketOf, mergedBuckets } from "./buckets.js";

/** What the runner believes storage holds, as digests of `buckets` buckets (none: send everything). */
export interface ManifestQuery {
  buckets: number;
  digests?: string[];
  /** Ask for the execute bits too: the etag of the list the asker holds (null: none). */
  modes?: string | null;
  /** The listing the asker's view still equals (the `layer` of the answer it last applied, unchanged since). */
  layer?: LayerState;
}

/** Names one listing of a workspace's files exactly (see the top of this file). */
export interface LayerState {
  /** The lower layer's manifest id; null for a workspace without one. */
  base: string | null;
  seq: number;
  /** SHA-256 of the upper layer's listing (every file of a workspace without a lower layer), whiteouts included. */
  upper: string;
  /** Files in the merged listing. */
  count: number;
}

export interface ManifestAnswer {
  /** Files in storage. */
  count: number;
  buckets: number;
  /** Buckets whose digest equals the query's: storage holds exactly the asker's entries there. */
  same: number[];
  /** Every entry of every other bucket. */
  files: SyncEntry[];
  /** The execute bits when asked for; "same" when the asker's etag is current. */
  modes?: ExecModes | "same";
  /** The listing this answer was made from (absent: an older server). */
  layer?: LayerState;
}

/** What a conditional manifest is answered from: one workspace's files. */
export interface ManifestSource {
  /** Storage without the merged view: listing `prefix` there gives the upper layer (whiteouts too), or every file without a lower layer. */
  storage: StorageDriver;
  /** The workspace's files prefix. */
  prefix: string;
  /** The lower layer the workspace record points at (null: none). */
  layer: LowerLayer | null;
  /** How the workspace's whiteouts are told apart (from its record: lib/layers/whiteout.ts). */
  whiteouts: Whiteouts;
  /** The workspace's execute bits (read only when the query asks). */
  modes(): Promise<ExecModes>;
  /**
   * The first page of `storage`'s listing of `prefix`, already under way (started beside the read of
   * the workspace record: one round trip less per run). Used once, by the first listing.
   */
  firstPage?: Promise<ListResult>;
  /**
   * Given the upper listing, seals it when it is large (lib/layers/auto-seal.ts): the lower layer
   * to answer from then (null: no seal was called for; the listing stands).
   */
  seal?(listed: readonly ObjectInfo[]): Promise<{ layer: LowerLayer | null } | null>;
}

/** A SyncClient that can answer a ManifestQuery (null: the other end cannot; use manifest()). */
export interface ConditionalSync {
  manifestSince(q: ManifestQuery): Promise<ManifestAnswer | null>;
  /**
   * manifestSince with the run's claim carried in the same request (lib/sync/types.ts ClaimRider):
   * the answer (null: paged, or none this client can use) and the claim's outcome (null: the API took
   * no claim). null when the other end has no conditional manifest. Absent: this client carries no claim.
   */
  manifestWithClaim?(q: ManifestQuery, claim: ClaimRequest): Promise<{ answer: ManifestAnswer | null; claim: ClaimOutcome | null } | null>;
}

export const hasManifestSince = (c: SyncClient): c is SyncClient & ConditionalSync => typeof (c as Partial<ConditionalSync>).manifestSince === "function";

/** Most buckets a query may have, and most list pages one conditional manifest reads (then: paged manifest). */
export const MAX_BUCKETS = 4096;
export const MANIFEST_MAX_PAGES = 500;

/** About 128 entries per bucket, in powers of two (stable while a workspace grows or shrinks a little). */
export function bucketCountFor(entries: number): number {
  let b = 1;
  while (b < MAX_BUCKETS && b * 128 < entries) b *= 2;
  return b;
}

/** A LayerState from the wire (either end), copied; null when it is not one. */
export function layerStateOf(x: unknown): LayerState | null {
  const l = x as Partial<LayerState> | null;
  if (typeof l !== "object" || l === null) return null;
  if (!(l.base === null || (typeof l.base === "string" && l.base.length <= 200))) return null;
  if (!Number.isSafeInteger(l.seq) || l.seq! < 0 || typeof l.upper !== "string" || l.upper.length > 100 || !Number.isSafeInteger(l.count) || l.count! < 0) return null;
  return { base: l.base, seq: l.seq!, upper: l.upper, count: l.count! };
}

/** A query from the wire, checked; throws INVALID_ARGUMENT. */
export function parseManifestQuery(body: unknown): ManifestQuery {
  const q = body as Partial<ManifestQuery> | null;
  const b = q?.buckets;
  if (typeof b !== "number" || !Number.isInteger(b) || b < 1 || b > MAX_BUCKETS) throw new ToolError("INVALID_ARGUMENT", `buckets must be an integer from 1 to ${MAX_BUCKETS}.`);
  const modes = q!.modes;
  if (modes !== undefined && modes !== null && (typeof modes !== "string" || modes.length > 200)) throw new ToolError("INVALID_ARGUMENT", "modes must be an etag or null.");
  const l = q!.layer === undefined ? undefined : layerStateOf(q!.layer);
  if (l === null) throw new ToolError("INVALID_ARGUMENT", "layer must be the layer of an earlier answer: {base, seq, upper, count}.");
  const extra = { ...(modes !== undefined ? { modes } : {}), ...(l !== undefined ? { layer: l } : {}) };
  if (q!.digests === undefined) return { buckets: b, ...extra };
  if (!Array.isArray(q!.digests) || q!.digests.length !== b || q!.digests.some((d) => typeof d !== "string" || d.length > 100)) throw new ToolError("INVALID_ARGUMENT", "digests must be one string per bucket.");
  return { buckets: b, digests: q!.digests, ...extra };
}

/**
 * Answers the query from storage (the source of truth); null past maxPages. The prefix is listed
 * once: that listing is the upper layer the answer's state names, and, unless the asker's state
 * is current, what the merged listing is made of.
 */
export async function answerManifest(src: ManifestSource, q: ManifestQuery, maxPages = MANIFEST_MAX_PAGES): Promise<ManifestAnswer | null> {
  const modes = q.modes === undefined ? Promise.resolve(undefined) : src.modes().then((m) => (q.modes !== null && m.etag === q.modes ? ("same" as const) : m));
  const [m, a] = await Promise.all([modes, answerFiles(src, q, maxPages)]);
  return a && (m === undefined ? a : { ...a, modes: m });
}

/** The upper layer (every file of a workspace without a lower layer), whiteouts included and resolved (Whiteouts.resolve); null past maxPages. `first`: its first page, already started. */
async function listUpperPages(src: ManifestSource, maxPages: number, first?: Promise<ListResult>): Promise<ObjectInfo[] | null> {
  const listed: ObjectInfo[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    if (++pages > maxPages) return null;
    const page = await (pages === 1 && first ? first : src.storage.list({ prefix: src.prefix, ...(cursor ? { cursor } : {}) }));
    for (const o of await src.whiteouts.resolve(src.storage, page.objects)) listed.push(o);
    cursor = page.cursor;
  } while (cursor);
  return listed;
}

async function answerFiles(src: ManifestSource, q: ManifestQuery, maxPages: number): Promise<ManifestAnswer | null> {
  let listed = await listUpperPages(src, maxPages, src.firstPage);
  if (!listed) return null;
  // A large upper layer is sealed first (then listed again: what stayed, or was written meanwhile).
  const sealed = src.seal ? await src.seal(listed) : null;
  if (sealed) {
    src = { ...src, layer: sealed.layer };
    listed = await listUpperPages(src, maxPages);
    if (!listed) return null;
  }
  const upper = await listingDigest(listed, src.prefix, src.whiteouts);
  const base = src.layer?.base ?? null;
  const seq = src.layer?.seq ?? 0;
  const all = Array.from({ length: q.buckets }, (_, i) => i);
  const l = q.layer;
  if (l && l.base === base && l.seq === seq && l.upper === upper) return { count: l.count, buckets: q.buckets, same: all, files: [], layer: l };
  const files = (e: SyncEntry): SyncEntry => ({ path: e.path, etag: e.etag, size: e.size });
  if (src.layer && q.digests) {
    // Layered, against the asker's digests (every live command after a change): the view by bucket, only the
    // buckets that differ gathered (the lower manifest's buckets are kept per isolate): neither the whole merged
    // view (10,000 entries merged) nor the bucket of each of its paths is made.
    const view = await mergedBuckets(listed, src.layer.manifest, src.prefix, q.buckets, src.whiteouts);
    if (view.count > maxPages * 1000) return null;
    const layer: LayerState = { base, seq, upper, count: view.count };
    const same = all.filter((i) => view.digests[i] === q.digests![i]);
    const differ = all.filter((i) => view.digests[i] !== q.digests![i]);
    const sent = differ.flatMap((b) => view.entriesOf(b)).sort((a, b) => compareKeys(a.path, b.path)); // storage order, as the whole view's
    return { count: view.count, buckets: q.buckets, same, files: sent.map(files), layer };
  }
  const entries: SyncEntry[] = src.layer ? mergeAll(listed, src.layer.manifest, src.prefix, src.whiteouts) : listed.map((o) => ({ path: o.key.slice(src.prefix.length), etag: o.etag, size: o.size }));
  if (entries.length > maxPages * 1000) return null;
  const layer: LayerState = { base, seq, upper, count: entries.length };
  if (!q.digests) return { count: entries.length, buckets: q.buckets, same: [], files: entries.map(files), layer };
  const theirs = q.digests;
  const ours = await bucketDigests(entries, q.buckets);
  const same: number[] = [];
  for (let i = 0; i < q.buckets; i++) if (ours[i] === theirs[i]) same.push(i);
  const sameSet = new Set(same);
  return { count: entries.length, buckets: q.buckets, same, files: (same.length ? entries.filter((e) => !sameSet.has(bucketOf(e.path, q.buckets))) : entries).map(files), layer };
}

const enc = new TextEncoder();

/** SHA-256 of a listing of the files prefix: [path, etag, size, whiteout] per object, in storage order. */
async function listingDigest(objects: readonly ObjectInfo[], prefix: string, whiteouts: Whiteouts): Promise<string> {
  const rows = objects.map((o) => [o.key.slice(prefix.length), o.etag, o.size, whiteouts.is(o) ? 1 : 0]);
  return bytesToBase64Url(new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(JSON.stringify(rows)))));
}
