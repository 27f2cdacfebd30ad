/**
 * The asker's side of the conditional manifest (lib/sync/manifest.ts): what a runner believes
 * storage holds, and the one call that makes it equal to storage again. Bundles for Workers.
 */
import { ToolError } from "../shared/errors.js";
import { bucketCountFor, hasManifestSince, type LayerState, type ManifestAnswer, type ManifestQuery } from "./manifest.js";
import { bucketOf, digestOf } from "./buckets.js";
import type { ClaimRider, SyncClient, SyncEntry } from "./types.js";
import type { ExecModes } from "../layout/modes.js";

/**
 * What a runner believes storage holds (path → etag, size), kept in buckets with each
 * bucket's digest cached: a change recomputes one bucket's digest, not all of them. Holds the
 * state of the listing it equals (LayerState) until it is changed by anything but an answer.
 */
export class ManifestView {
  private readonly map = new Map<string, SyncEntry>();
  private buckets = 1;
  private groups: Map<string, SyncEntry>[] = [new Map()];
  private digests: (string | null)[] = [null];
  /** The listing this view equals, as the last applied answer named it; null once changed since (or never named). */
  private layer: LayerState | null = null;
  /** Counts the changes of the view: an answer made for a query is applied only to the view the query was made of. */
  private changes = 0;

  constructor(entries: Iterable<SyncEntry> = []) {
    this.reset(entries);
  }

  get size(): number {
    return this.map.size;
  }
  /** Changes with every change of the view (entries, bucket layout, layer state). */
  get version(): number {
    return this.changes;
  }
  get(path: string): SyncEntry | undefined {
    return this.map.get(path);
  }
  values(): IterableIterator<SyncEntry> {
    return this.map.values();
  }

  set(e: SyncEntry): void {
    this.changes++;
    this.layer = null;
    this.map.set(e.path, e);
    const i = bucketOf(e.path, this.buckets);
    this.groups[i]!.set(e.path, e);
    this.digests[i] = null;
  }

  delete(path: string): void {
    this.changes++;
    this.layer = null;
    if (!this.map.delete(path)) return;
    const i = bucketOf(path, this.buckets);
    this.groups[i]!.delete(path);
    this.digests[i] = null;
  }

  /** Replaces everything (a plain manifest). */
  reset(entries: Iterable<SyncEntry>): void {
    this.changes++;
    this.layer = null;
    this.map.clear();
    for (const e of entries) this.map.set(e.path, e);
    this.rebucket(bucketCountFor(this.map.size));
  }

  private rebucket(buckets: number): void {
    this.changes++;
    this.buckets = buckets;
    this.groups = Array.from({ length: buckets }, () => new Map());
    this.digests = new Array<string | null>(buckets).fill(null);
    for (const e of this.map.values()) this.groups[bucketOf(e.path, buckets)]!.set(e.path, e);
  }

  /** The query for this view (only buckets changed since the last query are hashed again). */
  async query(): Promise<ManifestQuery> {
    const b = bucketCountFor(this.map.size);
    if (b !== this.buckets) this.rebucket(b);
    const layer = this.layer ? { layer: this.layer } : {};
    // Digests even of an empty view (one bucket, no entries): an answer may then vouch for it.
    if (this.map.size === 0 && !this.layer) return { buckets: b };
    await Promise.all(this.digests.map(async (d, i) => (d === null ? (this.digests[i] = await digestOf(this.groups[i]!.values())) : d)));
    return { buckets: b, digests: [...(this.digests as string[])], ...layer };
  }

  /**
   * Makes the view equal to storage from an answer to query(): the buckets not in `same` take
   * the answer's entries. Checks the answer first (a bad one changes nothing). Returns the paths
   * whose entry changed (added, removed, another etag), sorted: exact, since a bucket in `same`
   * holds the view's very [path, etag] pairs (its SHA-256 digest) and every other bucket is
   * compared entry by entry. Empty: every bucket was the same.
   */
  apply(q: ManifestQuery, a: ManifestAnswer): string[] {
    const bad = (why: string) => new ToolError("INTERNAL", `Workspace sync failed (manifest): bad answer: ${why}.`);
    if (a.buckets !== q.buckets || q.buckets !== this.buckets) throw bad("bucket count");
    const same = new Set(a.same);
    if (same.size !== a.same.length || a.same.some((i) => !Number.isInteger(i) || i < 0 || i >= q.buckets) || (!q.digests && same.size)) throw bad("bucket list");
    const fresh = new Map<string, SyncEntry>();
    for (const e of a.files) {
      if (same.has(bucketOf(e.path, q.buckets)) || fresh.has(e.path)) throw bad("an entry of an unchanged bucket, or twice");
      fresh.set(e.path, e);
    }
    let kept = 0;
    for (const i of same) kept += this.groups[i]!.size;
    if (kept + fresh.size !== a.count) throw bad("count");
    this.changes++;
    if (same.size === q.buckets) {
      this.layer = a.layer ?? null;
      return [];
    }
    const changed: string[] = [];
    const before = new Set<string>(); // the paths of the buckets that differ, as the view held them
    for (let i = 0; i < q.buckets; i++) {
      if (same.has(i)) continue;
      for (const [p, e] of this.groups[i]!) {
        before.add(p);
        if (fresh.get(p)?.etag !== e.etag) changed.push(p);
        this.map.delete(p);
      }
      this.groups[i] = new Map();
      this.digests[i] = null;
    }
    for (const e of fresh.values()) {
      if (!before.has(e.path)) changed.push(e.path);
      this.set(e);
    }
    this.layer = a.layer ?? null;
    return changed.sort();
  }
}

export interface ManifestResult {
  /** Storage held exactly what the view held (nothing changed). */
  unchanged: boolean;
  /**
   * When the view changed and the answer proves exactly where: the paths whose entry was added,
   * removed or given another etag (sorted). Absent when unchanged, or when every entry came
   * anew (the plain manifest: the view was replaced whole).
   */
  changed?: string[];
  /** Entries that crossed the wire. */
  received: number;
  /** The execute bits ("same": `knownModes` is current; null: the other end keeps none). */
  modes: ExecModes | "same" | null;
  /** The answer came with the command (CarriedManifest): no manifest request was made. */
  carried?: true;
}

/**
 * A conditional manifest answered ahead of the command that needs it (lib/sync/live-types.ts,
 * LiveCommand.manifest): the query the runner sent (with its poll), the version of the view it was
 * made of, and the API's answer to it.
 */
export interface CarriedManifest {
  query: ManifestQuery;
  version: number;
  answer: ManifestAnswer;
}

/** The query of `view` as it stands, with the execute bits' etag: what a poll carries (lib/sync/live-types.ts LivePoll). */
export async function viewQuery(view: ManifestView, knownModes: string | null): Promise<{ query: ManifestQuery; version: number }> {
  const query = { ...(await view.query()), modes: knownModes };
  return { query, version: view.version };
}

/**
 * Makes `view` equal to what storage lists now: conditionally when the client can (only
 * buckets that differ from the view cross the wire), from the plain manifest otherwise.
 * Exact either way: every entry is storage's, either sent or vouched for by a SHA-256 digest.
 * With the conditional manifest come the execute bits; the plain one has none (modes: null).
 * `carried`: an answer that came with the command, used (no request) when the view is still the
 * one its query was made of, with the same execute bits; any other: the request, as without one.
 * `claim`: the run's claim, carried by the manifest request when the client can (manifestWithClaim),
 * else sent alone beside it.
 */
export async function conditionalManifest(sync: SyncClient, view: ManifestView, knownModes: string | null = null, carried?: CarriedManifest, claim?: ClaimRider): Promise<ManifestResult> {
  const plain = async (): Promise<ManifestResult> => {
    const entries = await sync.manifest();
    const unchanged = entries.length === view.size && entries.every((e) => view.get(e.path)?.etag === e.etag);
    if (!unchanged) view.reset(entries);
    return { unchanged, received: entries.length, modes: null };
  };
  const result = (q: ManifestQuery, a: ManifestAnswer, how: { carried?: true }): ManifestResult => {
    const changed = view.apply(q, a);
    return { unchanged: changed.length === 0, ...(changed.length ? { changed } : {}), received: a.files.length, modes: a.modes ?? null, ...how };
  };
  if (carried && carried.version === view.version && carried.query.modes === knownModes) {
    try {
      return result(carried.query, carried.answer, { carried: true });
    } catch {
      // An answer the view cannot take (apply checks before it changes anything): asked below.
    }
  }
  const carrying = hasManifestSince(sync) && sync.manifestWithClaim ? (claim?.carry() ?? null) : null;
  if (!carrying) claim?.alone(); // nothing here carries it: it goes beside this request, as its own
  if (!hasManifestSince(sync)) return plain();
  const { query: q } = await viewQuery(view, knownModes);
  if (carrying && sync.manifestWithClaim) {
    let got: Awaited<ReturnType<NonNullable<typeof sync.manifestWithClaim>>>;
    try {
      got = await sync.manifestWithClaim(q, carrying);
    } catch (e) {
      claim!.answered(null); // the claim goes alone (the same attempt: told `claimed` if this request took it)
      throw e;
    }
    claim!.answered(got?.claim ?? null);
    if (!got?.answer) return plain();
    return result(q, got.answer, {});
  }
  const a = await sync.manifestSince(q);
  if (!a) return plain();
  return result(q, a, {});
}
