/**
 * The undo journal of one call (applied by lib/run/undo/apply.ts): the Workspace asks it, before every file write or
 * delete, to keep the version about to be replaced, and tells it the version left after. It is
 * the one place before-images are taken, so no tool (and no bash write-back) can forget.
 *
 * Before-bytes: a version that is the lower layer's (same etag) is referenced in its pack (free);
 * an upper version of at most INLINE_BYTES is kept in the record itself, base64 (+1 GET, 0 when
 * the call read the bytes through Workspace.readBytes / openForChange); a larger one is copied to
 * an undo blob under the call's prefix (the same GET, +1 PUT beside the call's write); a file that
 * did not exist costs nothing.
 * Link changes (a symlink made, removed, repointed: docs/symlinks.md) are kept as targets, before
 * and after, and execute-bit changes as the bit before and after, told by the one place the modes
 * table is written (lib/layout/modes.ts updateModes).
 * commit() writes one record object per call (per sync request for bash), create-only, under a
 * unique key: no hot key. A call whose last change is a write of known etag (writeBeside) has its
 * record written beside that write instead of after it. Layout:
 * x/undo/<session>/<stamp>/r-<id>.json, b-<id> (blobs), undone.
 */
import { sessionUndoPrefix, undoPrefix } from "../layout/paths.js";
import { hasLowerRef } from "../layers/layered-driver.js";
import type { StorageDriver } from "../storage/types.js";
import { afterAnswer, type WaitUntil } from "../shared/after-answer.js";
import { encodeBase64 } from "../shared/text.js";
import { PRUNE_EVERY, pruneDue, pruneUndoPrefix, UNDO_RETENTION, type UndoRetention } from "./undo-retention.js";
import { callIdOf, newStamp, recordedLinks, recordedDirs, recordedModes, recordedOf, stampTime, type UndoChange, type UndoDirChange, type UndoLinkChange, type UndoModeChange, type UndoRecord } from "./undo-record.js";

const rid = () => [...crypto.getRandomValues(new Uint8Array(6))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** Bytes a call read through readBytes, kept so a capture needs no second GET (bounded per call). */
const READ_CACHE_BYTES = 16 * 1024 * 1024;
/** Before-image bytes a call holds while their blobs are written beside its writes; past this a blob is streamed first. */
const INFLIGHT_BYTES = 16 * 1024 * 1024;
/** A before-image this size or smaller goes into the record (base64), not a blob; one record holds at most INLINE_RECORD_BYTES of them. */
export const INLINE_BYTES = 64 * 1024;
const INLINE_RECORD_BYTES = 256 * 1024;

const recordKey = (prefix: string) => `${prefix}r-${Date.now().toString(36)}-${rid()}.json`;
/** What a record says, for comparing the one written beside a write with the one the call ends with. */
const changesJson = (changes: readonly UndoChange[], links: readonly UndoLinkChange[], modes: readonly UndoModeChange[], dirs: readonly UndoDirChange[]) => JSON.stringify([changes, links, modes, dirs]);

export class UndoJournal {
  readonly callId: string;
  readonly prefix: string;
  /** The workspace's undo prefix, every session's (retention prunes under it: lib/workspace/undo-retention.ts). */
  readonly workspacePrefix: string;
  /** The workspace's 1st commit in this isolate, then every this-many-th, prunes its undo; 0: never (AppDeps.undoPruneEvery). */
  pruneEvery = PRUNE_EVERY;
  /** What the prune keeps (AppDeps.undoRetention). */
  retention: UndoRetention = UNDO_RETENTION;
  /** The runtime's waitUntil (Workers): pruning runs after the response; without it, before. */
  background: WaitUntil | undefined;
  /** The tool this call runs (set by the door). */
  tool = "call";
  private readonly changes = new Map<string, UndoChange>();
  private readonly links = new Map<string, UndoLinkChange>();
  private readonly modes = new Map<string, UndoModeChange>();
  private readonly dirs = new Map<string, UndoDirChange>();
  private readonly blobs: string[] = [];
  private readonly landedPaths = new Set<string>();
  private readonly read = new Map<string, { etag: string; bytes: Uint8Array }>();
  private readBytes = 0;
  /** Blob writes under way (capture), by blob key: their outcome (null = written) and the bytes. */
  private readonly inflight = new Map<string, { done: Promise<unknown>; bytes: Uint8Array }>();
  private inflightBytes = 0;
  private inlineBytes = 0;
  /** The record written beside the call's last write (writeBeside): its key, what it says, its PUT's outcome (null = written). */
  private beside: { key: string; path: string; json: string; done: Promise<unknown> } | null = null;
  /** The paths (files and links) the last commit() named: the audit entry's files (lib/run/audit/). */
  committed: string[] = [];

  constructor(private readonly storage: StorageDriver, tenant: string, ws: string, readonly session: string, readonly stamp: string = newStamp()) {
    this.callId = callIdOf(session, stamp);
    this.workspacePrefix = undoPrefix(tenant, ws);
    this.prefix = `${sessionUndoPrefix(tenant, ws, session)}${stamp}/`;
  }

  get size(): number {
    return this.changes.size + this.links.size + this.modes.size + this.dirs.size;
  }

  /** Links the call changed (lib/layout/modes.ts, after the table's write landed): a path's first before is kept, its last after. */
  linked(changes: readonly UndoLinkChange[]): void {
    for (const l of changes) this.links.set(l.path, { path: l.path, before: this.links.get(l.path)?.before ?? l.before, after: l.after });
  }

  /** Execute bits the call changed (lib/layout/modes.ts, after the table's write landed): a path's first before is kept, its last after. */
  moded(changes: readonly UndoModeChange[]): void {
    for (const m of changes) this.modes.set(m.path, { path: m.path, before: this.modes.get(m.path)?.before ?? m.before, after: m.after });
  }

  /** A directory marker the call made or removed (the sync server's directory routes): a path's first before is kept, its last after. */
  marked(d: UndoDirChange): void {
    this.dirs.set(d.path, { path: d.path, before: this.dirs.has(d.path) ? this.dirs.get(d.path)!.before : d.before, after: d.after });
  }

  /** Workspace.readBytes saw these bytes of `path` at `etag`. */
  noteRead(path: string, etag: string, bytes: Uint8Array): void {
    if (this.readBytes + bytes.length > READ_CACHE_BYTES) return;
    this.read.set(path, { etag, bytes });
    this.readBytes += bytes.length;
  }

  /**
   * Before a write or delete of `key` (path `path`) over version `etag` (null: no file). The first
   * change of a path in a call keeps its before-image; later ones keep the first. Returns false when
   * the version is no longer there (the write's own condition will refuse it).
   */
  async capture(driver: StorageDriver, key: string, path: string, etag: string | null): Promise<boolean> {
    if (this.changes.has(path)) return true;
    if (etag === null) {
      this.changes.set(path, { path, before: null, after: null });
      return true;
    }
    const lower = hasLowerRef(driver) ? driver.lowerRef(key) : null;
    if (lower && lower.etag === etag) {
      this.changes.set(path, { path, before: { etag, size: lower.size, lower }, after: null });
      return true;
    }
    const blob = `${this.prefix}b-${rid()}`;
    const cached = this.read.get(path);
    let bytes = cached && cached.etag === etag ? cached.bytes : null;
    if (!bytes) {
      const r = await driver.get(key);
      if (!r || r.etag !== etag) {
        await r?.body.cancel().catch(() => {});
        return false;
      }
      if (!this.inlines(r.size) && this.inflightBytes + r.size > INFLIGHT_BYTES) {
        // Too large to hold: streamed into the blob before the call's write goes ahead.
        const size = (await this.storage.put(blob, r.size === 0 ? new Uint8Array(0) : r.body, { length: r.size })).size;
        this.blobs.push(blob);
        this.changes.set(path, { path, before: { etag, size, blob }, after: null });
        return true;
      }
      bytes = new Uint8Array(await new Response(r.body).arrayBuffer());
    }
    if (this.inlines(bytes.length)) {
      this.inlineBytes += bytes.length;
      this.changes.set(path, { path, before: { etag, size: bytes.length, inline: encodeBase64(bytes) }, after: null });
      return true;
    }
    // Bytes in hand: the blob is written BESIDE the call's own write (one round trip less);
    // commit() waits for it before the record names it, refused() before deleting it.
    const held = bytes;
    this.inflightBytes += held.length;
    const done = this.storage.put(blob, held, { length: held.length }).then(
      () => null,
      (e: unknown) => e,
    );
    this.inflight.set(blob, { done, bytes: held });
    this.blobs.push(blob);
    this.changes.set(path, { path, before: { etag, size: held.length, blob }, after: null });
    return true;
  }

  /** Whether a before-image of `size` bytes goes into the record. */
  private inlines(size: number): boolean {
    return size <= INLINE_BYTES && this.inlineBytes + size <= INLINE_RECORD_BYTES;
  }

  /** Waits for the blob writes started by capture; one that failed is tried once more (its bytes are held), then throws. */
  private async settleBlobs(): Promise<void> {
    const all = [...this.inflight.entries()];
    this.inflight.clear();
    this.inflightBytes = 0;
    await Promise.all(all.map(async ([blob, { done, bytes }]) => {
      if ((await done) !== null) await this.storage.put(blob, bytes, { length: bytes.length });
    }));
  }

  /** After the write or delete of `path` landed: the version it left (null: deleted). */
  landed(path: string, etag: string | null): void {
    const c = this.changes.get(path);
    if (!c) return;
    c.after = etag;
    this.landedPaths.add(path);
  }

  /**
   * The write of `path` was refused: forget its capture (and its blob) when nothing of the call
   * landed there. A record written beside it no longer names what the call did: commit() deletes it.
   */
  async refused(path: string): Promise<void> {
    const c = this.changes.get(path);
    if (!c || this.landedPaths.has(path)) return;
    this.changes.delete(path);
    if (c.before && "inline" in c.before) this.inlineBytes -= c.before.size;
    if (c.before && "blob" in c.before) {
      const blob = c.before.blob;
      await this.inflight.get(blob)?.done;
      this.inflight.delete(blob);
      await this.storage.delete(blob).catch(() => {});
    }
  }

  /** The changes a record names. */
  private recorded(): UndoChange[] {
    return recordedOf([...this.changes.values()]);
  }

  private putRecord(key: string, changes: UndoChange[], links: UndoLinkChange[], modes: UndoModeChange[], dirs: UndoDirChange[]): Promise<unknown> {
    const rec: UndoRecord = { v: 1, call_id: this.callId, tool: this.tool, session: this.session, at: new Date().toISOString(), changes, ...(links.length ? { links } : {}), ...(modes.length ? { modes } : {}), ...(dirs.length ? { dirs } : {}) };
    return this.storage.put(key, JSON.stringify(rec), { ifNoneMatch: "*", contentType: "application/json" });
  }

  /**
   * The call's last change is the write of `path` (captured), about to leave version `etag` (known in
   * advance: StorageDriver.contentEtags): its record is written now, BESIDE that write (one round
   * trip less). Until the write is known to have landed at `etag` the record is provisional: refused()
   * deletes it, and commit() replaces it when the call ended with other changes than it names.
   */
  writeBeside(path: string, etag: string): void {
    const c = this.changes.get(path);
    if (!c || this.beside) return;
    const changes = recordedOf([...this.changes.values()].map((x) => (x === c ? { ...c, after: etag } : x)));
    const links = recordedLinks(this.links.values());
    const modes = recordedModes(this.modes.values());
    const dirs = recordedDirs(this.dirs.values());
    if (changes.length === 0 && links.length === 0 && modes.length === 0 && dirs.length === 0) return;
    const key = recordKey(this.prefix);
    const done = this.putRecord(key, changes, links, modes, dirs).then(() => null, (e: unknown) => e);
    this.beside = { key, path, json: changesJson(changes, links, modes, dirs), done };
  }

  /** Deletes the record written beside a write (whatever its PUT's outcome); a failed delete is left to retention. */
  private async dropBeside(): Promise<void> {
    const b = this.beside;
    if (!b) return;
    this.beside = null;
    await b.done;
    await this.storage.delete(b.key).catch(() => {});
  }

  /**
   * Writes the record (create-only) when the call changed something; returns the call id, or null.
   * A record already written beside the last write (writeBeside) is kept when it names exactly what
   * the call did; else (the write was refused, landed at another etag, or more followed) it is
   * deleted, so it is never listed nor applied, and the right one (if any) written. Every call that
   * has a journal ends here, failed or not (executeTool, the sync requests).
   */
  async commit(): Promise<string | null> {
    try {
      await this.settleBlobs();
    } catch (e) {
      await this.dropBeside(); // it would name a blob that is not there
      throw e;
    }
    const changes = this.recorded();
    const links = recordedLinks(this.links.values());
    const modes = recordedModes(this.modes.values());
    const dirs = recordedDirs(this.dirs.values());
    this.committed = [...new Set([...changes.map((c) => c.path), ...links.map((l) => l.path), ...modes.map((m) => m.path), ...dirs.map((d) => `${d.path}/`)])];
    this.changes.clear();
    this.links.clear();
    this.modes.clear();
    this.dirs.clear();
    const beside = this.beside;
    if (beside && (await beside.done) === null && beside.json === changesJson(changes, links, modes, dirs)) {
      this.beside = null;
    } else {
      await this.dropBeside();
      if (changes.length === 0 && links.length === 0 && modes.length === 0 && dirs.length === 0) return null;
      await this.putRecord(recordKey(this.prefix), changes, links, modes, dirs);
    }
    // Retention (per session and per workspace, over every session of it); never fails the call.
    const policy = { ...this.retention, now: Date.now() };
    if (pruneDue(this.workspacePrefix, this.pruneEvery)) await afterAnswer(this.background, "undo retention", () => pruneUndoPrefix(this.storage, this.workspacePrefix, stampTime, policy).catch(() => {}), "await");
    return this.callId;
  }
}
