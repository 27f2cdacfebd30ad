/**
 * Per-session file records: "this session has read this file, at this version".
 * Records are hints for the agent (NOT_READ, FILE_MODIFIED before any write is tried);
 * the real lost-update guard is the conditional write. KV is eventually consistent.
 */
import { afterAnswer, type WaitUntil } from "../shared/after-answer.js";
import { ToolError } from "../shared/errors.js";
import { sha256Hex } from "../shared/hash.js";
import type { IsolateCache } from "../shared/isolate-cache.js";
import type { KeyValueStore } from "../storage/types.js";

export interface FileRecord {
  etag: string;
  /** Epoch ms of the read (or of our own write). */
  at: number;
  /**
   * The instance of the workspace the read was made in (meta.json `created_at`, as a run's sync token
   * names it): a workspace deleted and made again with the same id is another instance, and never
   * takes the records of the one before (they stay in KV until their TTL, unread). Absent on records
   * written before it, and by stores that were not told their workspace's instance (any instance).
   */
  i?: string;
}

/** Records expire after a week without use. */
const RECORD_TTL_SECONDS = 7 * 24 * 3600;

/**
 * What this isolate last saw a record hold in KV (it read it, or wrote it), for a few seconds
 * (createApp's, AppDeps.records; keyed by tenant/workspace, session and path). It is only ever used
 * to CONFIRM: "this session read this version" is a fact once seen, so a known record equal to the
 * file's current etag answers without a KV read (a re-read writes nothing; write and edit pass the
 * read-before-write check). Anything else (no entry, another etag) asks KV as before: a stale entry
 * can never refuse a call. What it can do: a re-read in this isolate skips the record's write while
 * another isolate of the same session wrote another version of it meanwhile; that session's next
 * write elsewhere may get FILE_MODIFIED until the entry expires (KV's own caching at the edge, up to
 * 60 s, allows the same); the conditional write stays the guard (DESIGN invariant 2).
 */
export type KnownRecords = IsolateCache<FileRecord>;
/** How long a seen record is known (createApp's cache). */
export const KNOWN_RECORDS_TTL_MS = 10_000;

export class RecordStore {
  /** The workspace instance calls through this store act on (bindInstance); absent: records of any instance count. */
  private instance: string | undefined;

  constructor(
    private readonly kv: KeyValueStore,
    private readonly scope: string,
    readonly session: string,
    private readonly knownRecords?: KnownRecords,
  ) {}

  private knownKey(path: string): string {
    return `${this.scope}/${this.session}/${path}`;
  }

  /**
   * The workspace's instance, once its record is read (Workspace's constructor): records of another
   * instance (the workspace was deleted and made again with this id) read as none from then on, and
   * records written carry it. Costs no operation: the record is read beside the call's reads anyway.
   */
  bindInstance(instance: string): void {
    this.instance = instance;
  }

  /** `rec` if it is of this store's workspace instance (or of any, see FileRecord.i), else null. */
  private ofInstance(rec: FileRecord | null | undefined): FileRecord | null {
    return rec && (rec.i === undefined || this.instance === undefined || rec.i === this.instance) ? rec : null;
  }

  /** The record as this isolate last saw it in KV within the cache's TTL (see KnownRecords), or undefined. */
  known(path: string): FileRecord | undefined {
    return this.ofInstance(this.knownRecords?.peek(this.knownKey(path))) ?? undefined;
  }

  private async key(path: string): Promise<string> {
    // KV keys stop at 512 bytes; paths may be longer, so they are hashed.
    return `rec/${this.scope}/${this.session}/${(await sha256Hex(path)).slice(0, 40)}`;
  }

  private ownKey(path: string): string {
    return `${this.knownKey(path)}\u0000own`;
  }

  /**
   * The session wrote `path` at `etag` through this isolate: its next change of the file will most
   * likely find that version, whose writer is the session, and need no record (prefetch skips it).
   * Kept apart from the known records, which say only what KV holds.
   */
  notedOwnWrite(path: string, etag: string): void {
    this.knownRecords?.set(this.ownKey(path), { etag, at: Date.now() });
  }

  /** Reads started early (prefetch), each taken by the next get of its path. */
  private readonly early = new Map<string, Promise<FileRecord | null>>();

  /**
   * Starts reading the record of `path` now, so the KV read runs beside the call's storage
   * reads instead of after them; the next get(path) takes it. A set(path) drops it.
   */
  prefetch(path: string): void {
    // A known record answers a re-read of the same version; a changed file writes without reading.
    // A version this session just wrote here needs none either (the object names its writer);
    // should the file have changed since, the check reads the record then (get), one step later.
    if (this.early.has(path) || this.known(path) || this.knownRecords?.peek(this.ownKey(path))) return;
    const p = this.load(path);
    p.catch(() => {}); // a failure surfaces in the get that takes it
    this.early.set(path, p);
  }

  async get(path: string): Promise<FileRecord | null> {
    const early = this.early.get(path);
    if (early) {
      this.early.delete(path);
      return this.ofInstance(await early);
    }
    return this.ofInstance(await this.load(path));
  }

  private async load(path: string, learn = true): Promise<FileRecord | null> {
    const raw = await this.kv.get(await this.key(path));
    const rec = raw ? (JSON.parse(raw) as FileRecord) : null;
    if (rec && learn) this.knownRecords?.set(this.knownKey(path), rec);
    return rec;
  }

  /** Whether this store has an isolate's known records (recordSoon needs them). */
  get knowsRecords(): boolean {
    return this.knownRecords !== undefined;
  }

  /**
   * Records that the session read `path` at `etag` with nothing left on the call's path (Workers'
   * waitUntil): this isolate knows the record at once (as `set` with `later`: the read it records has
   * been answered), and after the answer KV is read (the prefetched read, when one was started) and
   * written only if it holds another version or one older than `refreshMs`. The read of KV does not
   * teach the known records (they already hold this version). A failed write forgets it again.
   */
  recordSoon(path: string, etag: string, later: WaitUntil, refreshMs: number): void {
    const rec = this.newRecord(etag);
    const early = this.early.get(path);
    this.early.delete(path);
    this.knowNowWriteLater(path, rec, later, async () => {
      const held = this.ofInstance(early ? await early : await this.load(path, false));
      if (held?.etag === etag && Date.now() - held.at < refreshMs) return;
      await this.write(path, rec);
    });
  }

  /** `rec` is known here at once; `write` (its KV write, after any check) runs after the answer, and a failure forgets it again. */
  private knowNowWriteLater(path: string, rec: FileRecord, later: WaitUntil, write: () => Promise<void>): void {
    const known = this.knownKey(path);
    this.knownRecords?.set(known, rec); // now: a later call in this isolate relies on it
    const written = () =>
      write().catch((e) => {
        if (this.knownRecords?.peek(known) === rec) this.knownRecords.forget(known);
        console.warn("session record write failed", e);
      });
    void afterAnswer(later, "session record", written, "skip");
  }

  private newRecord(etag: string): FileRecord {
    return { etag, at: Date.now(), ...(this.instance !== undefined ? { i: this.instance } : {}) };
  }

  private async write(path: string, rec: FileRecord): Promise<void> {
    await this.kv.put(await this.key(path), JSON.stringify(rec), { expirationTtl: RECORD_TTL_SECONDS });
  }

  /**
   * Records that the session read `path` at `etag`. With `later` (Workers' waitUntil) the KV write
   * goes after the answer and this isolate knows the record at once: the read it records has been
   * answered, so "this session read this version" is already a fact here; another isolate sees it
   * once KV has it (it would wait for KV's propagation anyway). A failed write forgets it again.
   * Without `later`: unknown while the write is under way, known once KV took it.
   */
  async set(path: string, etag: string, later?: WaitUntil): Promise<void> {
    this.early.delete(path);
    const rec = this.newRecord(etag);
    if (later && this.knownRecords) return this.knowNowWriteLater(path, rec, later, () => this.write(path, rec));
    const known = this.knownKey(path);
    this.knownRecords?.forget(known);
    await this.write(path, rec);
    this.knownRecords?.set(known, rec);
  }
}

/** The records of `session` in a tenant's workspace (the scope tool calls use). */
export const sessionRecords = (kv: KeyValueStore, tenant: string, wsId: string, session: string, known?: KnownRecords): RecordStore => new RecordStore(kv, `${tenant}/${wsId}`, session, known);

/**
 * The sessions of the doors that are no agent's session: the raw file routes and the routes beside
 * them (uploads, import, export, diff), and the runner's sync door (write-back). Their names hold
 * parentheses, which no X-Session-Id may (checkSessionId, lib/layout/paths.ts): an agent session,
 * whatever it is called (`raw`, `sync`), never shares their records, nor they its. Before, they were
 * "raw" and "sync", names a caller could send (test/lib/workspace/records/door-sessions.node.test.ts).
 */
export const DOOR_SESSIONS = { raw: "(raw)", sync: "(sync)" } as const;
/** The records of a door's own session (DOOR_SESSIONS) in a tenant's workspace: the one way those doors get theirs. */
export const doorRecords = (kv: KeyValueStore, tenant: string, wsId: string, door: keyof typeof DOOR_SESSIONS): RecordStore => new RecordStore(kv, `${tenant}/${wsId}`, DOOR_SESSIONS[door]);
