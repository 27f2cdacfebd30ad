/**
 * Room the tenant's limits object holds ahead of writes (usage.ts counts it as used until it is
 * settled, released or its lease ends):
 *  - an isolate's allowance (storage-allowance.ts): small, spent in the isolate without asking;
 *  - a write-back's hold (lib/sync/writeback-bound.ts): the whole charge of a file-by-file
 *    write-back's plan, taken once when the plan is checked, so that no writer racing it can take
 *    the room between its batches. Each batch then draws on it (`draw`), what is left is released
 *    at the end, or when its lease ends (a runner that died). Its deletes count as room, but only
 *    once they are applied: the plan's check credits them, the hold holds the rest, and each
 *    give-back drawn on the hold (a delete, a failed write) moves into its room what it awaits.
 */
/** A workspace's files and bytes, or a change of them (usage.ts counts them). */
export interface StorageUsage {
  files: number;
  bytes: number;
}

/** Room held for one isolate's writes to one workspace (storage-allowance.ts): spent there without asking, counted when settled. */
export interface Allowance {
  id: string;
  files: number;
  bytes: number;
}

/** Room the object holds: released when settled, or at `until`. A write-back's hold has `awaits`: the room its deletes still bring. */
export type HeldAllowance = Allowance & { ws: string; until: number; awaits?: StorageUsage };

/** How long the object holds an allowance unsettled (the isolate spends it within half of that: storage-allowance.ts). */
export const ALLOWANCE_MS = 30_000;

/** The most one allowance holds: 64 files and 4 MiB, and at most 1/64 of the quota (no files under 64 files, no bytes under 64 KiB of quota: every such write asks). */
export function allowanceCap(limits: { storage_bytes: number; files_per_workspace: number }): StorageUsage {
  const bytes = Math.min(4 * 1024 * 1024, Math.floor(limits.storage_bytes / 64));
  return { files: Math.min(64, Math.floor(limits.files_per_workspace / 64)), bytes: bytes < 1024 ? 0 : bytes };
}

/** A write-back's hold as asked: the plan's charge (`want`: its new files, its bytes less what they replace), its deletes (`credit`), the lease. */
export interface HoldAsk {
  want: StorageUsage;
  credit: StorageUsage;
  ms: number;
}

const clamp = (n: number) => Math.max(0, n);

/**
 * The room a hold takes now: its charge less its deletes (credited at most what the workspace holds),
 * and what its deletes must bring before the rest can be drawn.
 */
export function holdRoom(ask: HoldAsk, ws: StorageUsage): { room: StorageUsage; awaits: StorageUsage } {
  const credit = { files: Math.min(clamp(ask.credit.files), ws.files), bytes: Math.min(clamp(ask.credit.bytes), ws.bytes) };
  const want = { files: clamp(ask.want.files), bytes: clamp(ask.want.bytes) };
  const room = { files: clamp(want.files - credit.files), bytes: clamp(want.bytes - credit.bytes) };
  return { room, awaits: { files: want.files - room.files, bytes: want.bytes - room.bytes } };
}

/** What of a change's growth the hold's room covers (nothing of a give-back). */
export function covered(hold: HeldAllowance | undefined, delta: StorageUsage): StorageUsage {
  if (!hold) return { files: 0, bytes: 0 };
  return { files: Math.min(clamp(delta.files), hold.files), bytes: Math.min(clamp(delta.bytes), hold.bytes) };
}

/**
 * What a hold still awaits of its deletes, when the write-back asks it filled (`fill`, after its deletes were
 * sent): a delete that turned out a conflict (or whose file another writer deleted) freed nothing into
 * the hold, so that room is taken from the free room now, before any of its writes, or the fill is refused.
 */
export const unfilled = (hold: HeldAllowance | undefined, fill: boolean | undefined): StorageUsage => (hold && fill && hold.awaits ? { files: clamp(hold.awaits.files), bytes: clamp(hold.awaits.bytes) } : { files: 0, bytes: 0 });

/** Applies a change drawn on `hold` once it passed: its growth taken from the room, its give-back moved into the room up to what the hold awaits, `filled` (unfilled) moved from what it awaits into its room. */
export function drawOn(hold: HeldAllowance, delta: StorageUsage, took: StorageUsage, filled: StorageUsage = { files: 0, bytes: 0 }): void {
  for (const k of ["files", "bytes"] as const) {
    hold[k] += filled[k] - took[k];
    if (hold.awaits) hold.awaits[k] -= filled[k];
    const back = Math.min(clamp(-delta[k]), hold.awaits?.[k] ?? 0);
    if (back > 0) {
      hold[k] += back;
      hold.awaits![k] -= back;
    }
  }
}
