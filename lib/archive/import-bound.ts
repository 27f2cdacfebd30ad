/**
 * How much an import may write before the tenant's storage quotas could no longer accept it
 * (issue #28: an import past a quota is refused before it writes it all, not after). From the
 * quotas' standing (one round trip to the tenant's limits object, beside the target's listing:
 * lib/layers/import.ts) and the files the import could replace (its target: every file under its
 * prefix, whatever the mode; a replace frees them all, a merge at most those it overwrites):
 *   bytes written      ≤ (storage_bytes − usage) + the target's bytes
 *   new paths written  ≤ (files_per_workspace − usage) + the target's files
 * An entry that would pass either is not written: the import stops reading, deletes what it wrote
 * and answers QUOTA_EXCEEDED (quota, usage, limit, and how far it got). A zip's central directory
 * declares every size up front: their total is checked before any entry is written (`declared`),
 * and each entry is checked again as it comes (the zip reader holds each to its declared size).
 * Bytes are counted as written: each file entry's, an earlier entry of the same path included
 * (each is written to a pack); a hard link writes no bytes but is a file. This bounds what is
 * written, it is not a second accounting: the exact charge stays before the layer switch, where an
 * import within the bound can still be refused (writes that landed meanwhile, a merge that
 * overwrites less than its target holds).
 */
import { quotaExceeded, type QuotaStanding } from "../limits/fields.js";
import type { ArchiveLimits } from "./limits.js";
import type { EntryPolicy } from "./policy.js";
import type { DeclaredEntry } from "./zip-reader.js";

export class ImportBound {
  /** Bytes of the file entries let through so far. */
  private bytes = 0;
  /** Paths written that the target does not hold (new files). */
  private readonly fresh = new Set<string>();
  private readonly targetBytes: number;
  readonly maxBytes: number;
  readonly maxFiles: number;

  /** `target`: path → size of the files under the prefix; `prefix`: where the archive lands ("" = the root). */
  constructor(private readonly standing: QuotaStanding, private readonly target: ReadonlyMap<string, number>, private readonly prefix: string) {
    let sum = 0;
    for (const size of target.values()) sum += size;
    this.targetBytes = sum;
    const { storage_bytes: b, files_per_workspace: f } = standing;
    this.maxBytes = Math.max(0, b.limit - b.usage) + sum;
    this.maxFiles = Math.max(0, f.limit - f.usage) + target.size;
  }

  /** Whether the bound is below what the archive limits already stop at (else the declared total's extra read would refuse nothing). */
  binds(limits: Pick<ArchiveLimits, "maxTotalBytes" | "maxEntries">): boolean {
    return this.maxBytes < limits.maxTotalBytes || this.maxFiles < limits.maxEntries;
  }

  /** Before file entry `name` (at `path`, `size` bytes to write) is written: QUOTA_EXCEEDED when it would take the import past the bound. */
  file(name: string, path: string, size: number): void {
    const isNew = !this.target.has(path) && !this.fresh.has(path);
    const at = { entry: name.slice(0, 300), bytes_seen: this.bytes, files_seen: this.fresh.size };
    if (isNew && this.fresh.size + 1 > this.maxFiles) throw this.refusal("files_per_workspace", `The import stopped before ${JSON.stringify(name.slice(0, 200))}: with it the archive would add more than ${this.maxFiles} new files`, at);
    if (this.bytes + size > this.maxBytes) throw this.refusal("storage_bytes", `The import stopped before ${JSON.stringify(name.slice(0, 200))} (${size} bytes): with the ${this.bytes} bytes of the files before it the archive would write more than ${this.maxBytes} bytes`, at);
    if (isNew) this.fresh.add(path);
    this.bytes += size;
  }

  /** What a zip's central directory declares, before any entry is written: QUOTA_EXCEEDED as soon as the files it declares pass the bound. */
  async declared(entries: AsyncIterable<DeclaredEntry>, policy: Pick<EntryPolicy, "pathOf">): Promise<void> {
    let bytes = 0;
    const fresh = new Set<string>();
    for await (const e of entries) {
      if (e.kind !== "file" || e.unreadable) continue;
      const path = policy.pathOf(e.name);
      if (path === null) continue;
      bytes += e.size;
      if (!this.target.has(path)) fresh.add(path);
      const at = { declared_bytes: bytes, declared_files: fresh.size };
      if (bytes > this.maxBytes) throw this.refusal("storage_bytes", `The zip's central directory declares at least ${bytes} bytes of files, more than the ${this.maxBytes} this import could write; no entry was read`, at);
      if (fresh.size > this.maxFiles) throw this.refusal("files_per_workspace", `The zip's central directory declares at least ${fresh.size} new files, more than the ${this.maxFiles} this import could add; no entry was read`, at);
    }
  }

  private refusal(quota: keyof QuotaStanding, what: string, at: Record<string, unknown>) {
    const { usage, limit } = this.standing[quota];
    const where = this.prefix ? `under ${this.prefix}/` : "in the workspace";
    const room = quota === "storage_bytes" ? `${Math.max(0, limit - usage)} bytes free, plus the ${this.targetBytes} bytes of the files ${where} it could replace` : `${Math.max(0, limit - usage)} more files, plus the ${this.target.size} files ${where} it could replace`;
    const max = quota === "storage_bytes" ? { bytes_allowed: this.maxBytes } : { files_allowed: this.maxFiles };
    return quotaExceeded(quota, usage, limit, `${what} (${room}). Import a smaller archive, or split it`, true, { ...at, ...max });
  }
}
