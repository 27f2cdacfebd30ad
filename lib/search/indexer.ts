/**
 * Keeps a workspace's search index up to date: a WorkspaceListener told about every
 * change made through a Workspace (tools and the raw files route).
 *
 * On a write it re-reads the file and stores it as a new one-file segment (a unique key:
 * concurrent writers never contend), then merges small segments of one size tier into a
 * bigger one when the tier holds `fanIn` of them (size-tiered compaction, as in an LSM
 * tree: each byte is rewritten about log_fanIn(files) times over its life). Deletions need
 * no work: readers check every segment entry against the file listing.
 *
 * Index upkeep never fails a write: errors are logged (our refusals in one line; none for a workspace deleted meanwhile,
 * NOT_FOUND) and the affected files are simply not covered by the index (readers then read them directly).
 */
import { filesPrefix } from "../layout/paths.js";
import type { StorageDriver } from "../storage/types.js";
import { looksBinary } from "../shared/text.js";
import { ToolError } from "../shared/errors.js";
import { HeldBatches, type HoldOptions } from "../shared/held-batches.js";
import type { IndexedWorkspace } from "./workspace-view.js";
import type { FileChange, FileInfo, StagedUpkeep } from "../layout/files.js";
import { buildSegment, FLAG_BINARY, FLAG_LARGE, SegmentHead, type SegmentInput } from "./segment.js";
import { isReached, liveFiles, segmentsBefore } from "./reachability.js";
import { IndexStore, type SegmentRef } from "./store.js";
import { TrigramCollector } from "./trigrams.js";

/** Text files up to this size are packed into segments; bigger ones are read directly by grep. */
export const MAX_PACKED_FILE = 1024 * 1024;
/** A segment holding this much content is full: no longer merged. */
export const FULL_SEGMENT = 4 * 1024 * 1024;
/** No merge produces more content than this. */
export const MAX_SEGMENT = 8 * 1024 * 1024;
const SNIFF = 8192;
const LOCK_TTL_MS = 60_000;

export interface IndexerOptions {
  /** Segments of one tier merged at once (default 8). */
  fanIn?: number;
  /** Chance that a change also runs a vacuum (default 1/64); at most one per request. */
  vacuumChance?: number;
  /** Called with errors of index upkeep (default: console.warn). */
  onError?: (e: unknown, what: string) => void;
  /** How changes told after the response are held and batched (changedSoon; default: 1 s, 64 changes, 1 MiB of text). */
  hold?: HoldOptions;
}

/** Reads one file for indexing: its bytes when small text, else its flags. */
export async function readForIndex(driver: StorageDriver, key: string, path: string, info: { size: number }): Promise<SegmentInput | null> {
  if (info.size > MAX_PACKED_FILE) {
    const r = await driver.get(key, { range: { offset: 0, length: SNIFF } });
    if (!r) return null;
    const head = new Uint8Array(await new Response(r.body).arrayBuffer());
    return { path, etag: r.etag, size: r.size, modified: r.modified.getTime(), flags: FLAG_LARGE | (looksBinary(head, false) ? FLAG_BINARY : 0) };
  }
  const r = await driver.get(key);
  if (!r) return null;
  const bytes = new Uint8Array(await new Response(r.body).arrayBuffer());
  return inputFromBytes(path, r.etag, r.modified.getTime(), bytes);
}

/** A segment input from a whole file's bytes. */
export function inputFromBytes(path: string, etag: string, modified: number, bytes: Uint8Array): SegmentInput {
  const base = { path, etag, size: bytes.length, modified };
  if (bytes.length > MAX_PACKED_FILE) return { ...base, flags: FLAG_LARGE | (looksBinary(bytes.subarray(0, SNIFF), false) ? FLAG_BINARY : 0) };
  if (looksBinary(bytes.subarray(0, SNIFF), bytes.length <= SNIFF)) return { ...base, flags: FLAG_BINARY };
  return { ...base, flags: 0, content: bytes };
}

/** Size tier of a segment: 0, 1, 2, or -1 when full. */
export function tierOf(ref: Pick<SegmentRef, "contentBytes" | "files">): number {
  const c = Math.max(ref.contentBytes, ref.files * 512);
  if (c >= FULL_SEGMENT) return -1;
  if (c < 64 * 1024) return 0;
  if (c < 512 * 1024) return 1;
  return 2;
}

/** Most segments one merge reads. */
const MAX_MERGE_INPUTS = 64;
/** Merge slots per tier: segments are split between slots by id, so merges can run side by side. */
const SLOTS = [4, 2, 1];

function slotOf(id: string, slots: number): number {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
  return h % slots;
}

/**
 * Merges the oldest segments of one slot of the first tier where a slot holds at least
 * `fanIn` of them (one merge per call; a lease per slot keeps two writers from doing the
 * same merge). Files present in several inputs keep their newest version. Returns whether it merged.
 */
export async function mergeOnce(store: IndexStore, collector: TrigramCollector, fanIn: number, refs?: SegmentRef[], mine?: SegmentRef): Promise<boolean> {
  const all = refs ?? (await store.listSegments());
  for (const tier of [0, 1, 2]) {
    const slots = SLOTS[tier]!;
    const inTier = all.filter((r) => tierOf(r) === tier);
    if (inTier.length < fanIn) continue;
    for (let k = 0; k < slots; k++) {
      // A writer tries only the slot of the segment it just wrote: fewer lease collisions.
      if (mine && tierOf(mine) === tier && slotOf(mine.id, slots) !== k) continue;
      const inSlot = inTier.filter((r) => slotOf(r.id, slots) === k);
      if (inSlot.length < fanIn) continue;
      const inputs = pickInputs(inSlot);
      const lock = `merge-${tier}-${k}`;
      if (!(await store.tryLock(lock, LOCK_TTL_MS))) continue;
      try {
        await mergeSegments(store, collector, inputs);
      } finally {
        await store.unlock(lock);
      }
      return true;
    }
  }
  return false;
}

/** The oldest segments whose merged content stays within MAX_SEGMENT (at least two). */
function pickInputs(refs: SegmentRef[]): SegmentRef[] {
  const inputs: SegmentRef[] = [];
  let bytes = 0;
  for (const r of refs) {
    if (inputs.length >= 2 && bytes + r.contentBytes > MAX_SEGMENT) break;
    inputs.push(r);
    bytes += r.contentBytes;
    if (inputs.length >= MAX_MERGE_INPUTS) break;
  }
  return inputs;
}

/** Reads (unless given), merges, writes one segment, deletes the inputs. */
export async function mergeSegments(store: IndexStore, collector: TrigramCollector, inputs: SegmentRef[], heads?: (SegmentHead | null)[]): Promise<void> {
  const read = heads ?? (await Promise.all(inputs.map(async (r) => {
    const b = await store.read(r);
    return b ? new SegmentHead(b, true) : null;
  })));
  const merged = mergeHeads(read.filter((h): h is SegmentHead => h !== null));
  if (merged.length > 0) await store.putSegment(buildSegment(merged, collector));
  await store.deleteSegments(inputs);
}

/** The files of several whole segments; one entry per path, the newest version. */
export function mergeHeads(heads: SegmentHead[], keep: (path: string, etag: string) => boolean = () => true): SegmentInput[] {
  const byPath = new Map<string, SegmentInput>();
  for (const h of heads) {
    for (const f of h.files) {
      if (!keep(f.path, f.etag)) continue;
      const prev = byPath.get(f.path);
      if (prev && prev.modified > f.modified) continue;
      const content = f.flags & (FLAG_BINARY | FLAG_LARGE) ? undefined : h.content(f) ?? undefined;
      byPath.set(f.path, { path: f.path, etag: f.etag, size: f.size, modified: f.modified, flags: f.flags, ...(content ? { content } : {}) });
    }
  }
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The listener that keeps search indexes current. One instance serves every workspace. */
/** A WorkspaceListener (lib/workspace/workspace-types.ts): the app puts it in every Workspace's listeners. */
export class SearchIndexer {
  readonly fanIn: number;
  readonly vacuumChance: number;
  private readonly onError: (e: unknown, what: string) => void;
  /** Workspace objects live for one request: at most one vacuum per request. */
  private readonly vacuumed = new WeakSet<IndexedWorkspace>();
  /**
   * The segments' trigram collector (its 2 MB bitset), made on the first segment and kept: one per
   * indexer, so per isolate, where a new one per segment allocated and zeroed 2 MB after every
   * burst of calls. Its collect() runs to the end without awaiting, so concurrent upkeep shares it.
   */
  private collectorKept?: TrigramCollector;
  /** Changes told after the response, held per workspace to become one segment per burst (lib/shared/held-batches.ts). */
  readonly held: HeldBatches<{ ws: IndexedWorkspace; change: FileChange }>;
  constructor(opts: IndexerOptions = {}) {
    // The batch is handed over in the request of its last item (held-batches.ts): that request's Workspace does the I/O.
    this.held = new HeldBatches((items) => this.changedBatch(items.at(-1)!.ws, items.map((i) => i.change)), opts.hold, (i) => i.change.content?.length ?? 0);
    this.fanIn = opts.fanIn ?? 8;
    this.vacuumChance = opts.vacuumChance ?? 1 / 64;
    this.onError = opts.onError ?? ((e, what) => e instanceof ToolError ? void (e.code !== "NOT_FOUND" && console.warn(`search index: ${what}: ${e.code}: ${e.message}`)) : console.warn(`search index: ${what}:`, e));
  }

  /**
   * `content`, when the writer has the bytes it just wrote in hand, saves re-reading the
   * file (Workspace does not pass it yet: an optional 4th argument of the listener hook).
   */
  async changed(ws: IndexedWorkspace, path: string, info: FileInfo | null, content?: Uint8Array): Promise<void> {
    try {
      // Deletions need no upkeep for correctness: readers drop entries whose file is gone.
      if (info) {
        const known = content && content.length === info.size ? { etag: info.etag, modified: info.modified.getTime(), bytes: content } : {};
        await this.index(await ws.upkeepDriver(), ws.tenant, ws.id, [{ path, size: info.size, ...known }]);
      }
      if (!this.vacuumed.has(ws) && Math.random() < this.vacuumChance) {
        this.vacuumed.add(ws);
        await vacuum(await ws.upkeepDriver(), ws.tenant, ws.id);
      }
    } catch (e) {
      this.onError(e, `indexing ${path}`);
    }
  }

  /**
   * After the response (Workers): held up to a second with the workspace's next changes, then
   * indexed as one segment (changedBatch: the last change of a path wins). Before, each call wrote
   * its own one-file segment after its answer (a LIST and a PUT, a merge every 8), and that work
   * ran into the next call: npm run bench (100 files) write 19.9 -> 13.8 ms p50, edit 20.1 -> 13.7.
   * A grep meanwhile is still exact: a file no segment covers is read directly.
   */
  changedSoon(ws: IndexedWorkspace, change: FileChange): Promise<void> {
    return this.held.add(`${ws.tenant}/${ws.id}`, { ws, change });
  }

  /**
   * A batch of changes (a Workspace with deferChanges, e.g. an archive import): the files
   * written become one new segment, not one per file. The caller sizes the batch (about one
   * full segment, FULL_SEGMENT bytes of text). Never fails the writes it follows. `staged` (an
   * all-or-nothing writer): the segment's key is added to it and the segment is not merged.
   */
  async changedBatch(ws: IndexedWorkspace, changes: FileChange[], staged?: StagedUpkeep): Promise<void> {
    try {
      // The last change of a path wins; deletions need no upkeep.
      const last = new Map<string, FileChange>();
      for (const c of changes) last.set(c.path, c);
      const files = [...last.values()].flatMap((c) => {
        if (!c.info) return [];
        const known = c.content && c.content.length === c.info.size ? { etag: c.info.etag, modified: c.info.modified.getTime(), bytes: c.content } : {};
        return [{ path: c.path, size: c.info.size, ...known }];
      });
      if (files.length) await this.index(await ws.upkeepDriver(), ws.tenant, ws.id, files, staged);
      if (!staged && !this.vacuumed.has(ws) && Math.random() < this.vacuumChance) {
        this.vacuumed.add(ws);
        await vacuum(await ws.upkeepDriver(), ws.tenant, ws.id);
      }
    } catch (e) {
      this.onError(e, `indexing a batch of ${changes.length} changes`);
    }
  }

  /**
   * Indexes files of a workspace as one new segment, then runs one merge if a tier is
   * full. Usable by any writer that bypasses Workspace (e.g. a bulk import or a sync).
   * `staged`: the segment's key is added to it, and no merge runs (the writer may still remove it).
   */
  async index(driver: StorageDriver, tenant: string, workspace: string, files: { path: string; size: number; etag?: string; modified?: number; bytes?: Uint8Array }[], staged?: StagedUpkeep): Promise<void> {
    const store = new IndexStore(driver, tenant, workspace);
    const prefix = filesPrefix(tenant, workspace);
    const [inputs, refs] = await Promise.all([
      Promise.all(files.map((f) => (f.bytes && f.etag !== undefined && f.modified !== undefined ? inputFromBytes(f.path, f.etag, f.modified, f.bytes) : readForIndex(driver, prefix + f.path, f.path, f)))),
      staged ? [] : store.listSegments(),
    ]);
    const present = inputs.filter((x): x is SegmentInput => x !== null);
    if (present.length === 0) return;
    const collector = (this.collectorKept ??= new TrigramCollector());
    const built = buildSegment(present, collector);
    if (staged) {
      // The key is known before the PUT: a PUT that fails after storing still gets it removed.
      const key = store.segmentKey(built);
      staged.keys.push(key);
      await store.putSegment(built, key);
      return;
    }
    const ref = await store.putSegment(built);
    await mergeOnce(store, collector, this.fanIn, [...refs, ref], ref);
  }
}

/**
 * Drops dead entries (files deleted or changed since they were indexed) from segments
 * where they make up at least half: lists every file of the workspace, reads the segments'
 * file tables, rewrites (or deletes) up to `maxRewrites` segments. Returns what it did.
 */
export async function vacuum(driver: StorageDriver, tenant: string, workspace: string, opts: { maxRewrites?: number } = {}): Promise<{ rewritten: number; deleted: number }> {
  const store = new IndexStore(driver, tenant, workspace);
  const live = await liveFiles(driver, tenant, workspace);
  // Segments written after the listing began may hold files it did not see: leave them alone.
  const segments = await segmentsBefore(store, Date.now() - 60_000);
  const isLive = (path: string, etag: string) => live.get(path) === etag;
  let rewritten = 0;
  const dead: SegmentRef[] = [];
  const collector = new TrigramCollector();
  for (const { ref, files } of segments) {
    if (!isReached(files, live)) {
      dead.push(ref);
      continue;
    }
    const liveCount = files.filter((f) => isLive(f.path, f.etag)).length;
    const deadBytes = files.reduce((n, f) => n + (isLive(f.path, f.etag) ? 0 : f.len), 0);
    const half = deadBytes * 2 >= Math.max(1, ref.contentBytes) && (files.length - liveCount) * 2 >= files.length;
    if (!half || rewritten >= (opts.maxRewrites ?? 2)) continue;
    const bytes = await store.read(ref);
    if (!bytes) continue;
    await store.putSegment(buildSegment(mergeHeads([new SegmentHead(bytes, true)], isLive), collector));
    await store.deleteSegments([ref]);
    rewritten++;
  }
  await store.deleteSegments(dead);
  return { rewritten, deleted: dead.length };
}

export const searchIndexer = (opts?: IndexerOptions): SearchIndexer => new SearchIndexer(opts);
