/**
 * A session's file records (read before write): which version of each file this session read
 * (KV through RecordStore: session → path → etag, read time), and the versions it wrote itself
 * (the object's `writer`). Records are hints; the conditional write is the guard (DESIGN invariant 2).
 */
import { ToolError } from "../shared/errors.js";
import type { RecordStore } from "./records.js";
import type { FileInfo } from "../layout/files.js";

/** A record this old is written again when its version is read (its KV TTL is refreshed). */
const REFRESH_MS = 24 * 3600 * 1000;

/**
 * Whether recording a read needs the session's record on the call's path. With waitUntil
 * (`background`) and the isolate's known records it does not: recordRead answers at once, and KV
 * is read (then written, if it holds another version) after the answer (RecordStore.recordSoon).
 * Only without them is the record's read worth starting beside the file's GET (prefetch): a KV
 * read on the path of every first read costs the call time and CPU for nothing.
 */
export function readRecordOnPath(background: unknown, knowsRecords: boolean): boolean {
  return !background || !knowsRecords;
}

export class SessionFiles {
  /** `later`: the runtime's waitUntil (Workers): a read's record goes to KV after the answer (RecordStore.set). */
  constructor(
    private readonly records: RecordStore,
    private readonly later?: (p: Promise<unknown>) => void,
  ) {}

  /** The session this is (versions it wrote carry it: PutOptions.writer). */
  get id(): string {
    return this.records.session;
  }

  /** Starts reading the record of `path` beside the file's GET when recordRead will need it on the call's path. */
  prefetchForRead(path: string): void {
    if (readRecordOnPath(this.later, this.records.knowsRecords)) this.records.prefetch(path);
  }

  /** The session read `path` at `etag` (`writer`: who wrote that version; the session's own needs no record). */
  async recordRead(path: string, etag: string, writer?: string): Promise<void> {
    if (writer === this.id) return;
    // Re-reading an unchanged file writes nothing (Workers KV takes one write per second per
    // key), unless the record is a day old (its TTL is refreshed by writing it again). A record
    // this isolate saw (RecordStore.known) saves the KV read: the same version writes nothing,
    // another is written at once.
    const known = this.records.known(path);
    if (known?.etag === etag && Date.now() - known.at < REFRESH_MS) return;
    // With waitUntil the whole of it (KV's read, and its write when needed) goes after the answer.
    if (this.later && !known && this.records.knowsRecords) return this.records.recordSoon(path, etag, this.later, REFRESH_MS);
    const rec = known ?? (await this.records.get(path));
    if (rec?.etag === etag && Date.now() - rec.at < REFRESH_MS) return;
    await this.records.set(path, etag, this.later);
  }

  /**
   * Before changing an existing file: the session must have read it, and it must not have changed
   * since (its current etag guards the write). A version this session wrote itself (its `writer`,
   * kept with the object by Workspace.put's `record`) counts as read: no KV record is written for
   * the session's own writes.
   */
  async requireReadUnchanged(path: string, current: FileInfo): Promise<void> {
    if (current.writer === this.id) return;
    // A record this isolate saw confirms at once; it never refuses (KV decides that).
    if (this.records.known(path)?.etag === current.etag) return;
    const rec = await this.records.get(path);
    if (!rec) {
      throw new ToolError("NOT_READ", `${path} has not been read in this session. Read it with the read tool first, then retry.`, { path });
    }
    if (rec.etag !== current.etag) {
      throw new ToolError("FILE_MODIFIED", `${path} was modified since you last read it. Read it again, then retry.`, { path, current_etag: current.etag, read_etag: rec.etag });
    }
  }
}
