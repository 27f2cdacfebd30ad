/**
 * A session's file records (read before write): which version of each file this session read
 * (KV through RecordStore: session → path → etag, read time). Records are hints; the conditional
 * write is the guard (DESIGN invariant 2).
 */
import { ToolError } from "../errors.js";
import type { RecordStore } from "../records/store.js";
import type { FileInfo } from "./workspace.js";

export class SessionFiles {
  /** Record writes under way (recordWrite), awaited by settle. */
  private readonly writes: Promise<void>[] = [];

  constructor(private readonly records: RecordStore) {}

  async recordRead(path: string, etag: string): Promise<void> {
    // Re-reading an unchanged file writes nothing (Workers KV takes one write per second per
    // key), unless the record is a day old (its TTL is refreshed by writing it again). A record
    // this isolate saw (RecordStore.known) saves the KV read: the same version writes nothing,
    // another is written at once.
    const rec = this.records.known(path) ?? (await this.records.get(path));
    if (rec?.etag === etag && Date.now() - rec.at < 24 * 3600 * 1000) return;
    await this.records.set(path, etag);
  }

  /**
   * After this session's own write: the new version is the one it knows (no read of the old
   * record: it always differs). The KV write starts now and runs beside the rest of the call;
   * executeTool waits for it (settle) with the undo record, before the call answers.
   */
  recordWrite(path: string, etag: string): void {
    const p = this.records.set(path, etag);
    p.catch(() => {}); // its failure surfaces in settle
    this.writes.push(p);
  }

  /** Waits for the record writes recordWrite started; throws the first failure. */
  async settle(): Promise<void> {
    await Promise.all(this.writes.splice(0));
  }

  /**
   * Before changing an existing file: the session must have read it, and it must not
   * have changed since (its current etag guards the write).
   */
  async requireReadUnchanged(path: string, current: FileInfo): Promise<void> {
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
