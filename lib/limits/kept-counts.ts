/**
 * The storage counts a tenant's limits object keeps (usage.ts): per workspace its files and bytes,
 * and the tenant's bytes, their sum. Each count says under which rule it was made (COUNT_VERSION);
 * one made under an older rule is kept (its bytes still count for the tenant) but is not current:
 * the workspace is counted again from storage at its first charge (usage.ts `unknown`, then `init`).
 */
import type { StorageUsage } from "./held-room.js";

/**
 * What a current count counts: 2, every object of the workspace's tree, explicit directories'
 * markers included (since 2026-12-02, issue #28). A count kept without a version was made before
 * and counted files only: deleting a marker it never counted would give back an entry it never took.
 */
export const COUNT_VERSION = 2;

/** A workspace's count as kept: `v`, the COUNT_VERSION it was made under (absent: before versions). */
export type KeptCount = StorageUsage & { v?: number };

export class KeptCounts {
  private readonly counts = new Map<string, KeptCount>();
  private tenantBytes = 0;

  /** The tenant's bytes: every workspace's kept count, current or not (bytes were counted right under every rule). */
  get bytes(): number {
    return this.tenantBytes;
  }

  /** The count as kept, current or not. */
  get(ws: string): KeptCount | undefined {
    return this.counts.get(ws);
  }

  /** The count when it is current (made under COUNT_VERSION); undefined: the workspace is to be counted. */
  current(ws: string): KeptCount | undefined {
    const u = this.counts.get(ws);
    return u?.v === COUNT_VERSION ? u : undefined;
  }

  /** Keeps `u` under rule `v` (a change applied to a kept count keeps its rule; a count from storage is COUNT_VERSION's). */
  keep(ws: string, u: StorageUsage, v: number | undefined): void {
    this.drop(ws);
    const clean: KeptCount = { files: Math.max(0, u.files), bytes: Math.max(0, u.bytes), ...(v !== undefined ? { v } : {}) };
    this.counts.set(ws, clean);
    this.tenantBytes += clean.bytes;
  }

  drop(ws: string): void {
    const old = this.counts.get(ws);
    if (old) this.tenantBytes -= old.bytes;
    this.counts.delete(ws);
  }

  [Symbol.iterator](): IterableIterator<[string, KeptCount]> {
    return this.counts.entries();
  }
}
