/**
 * One tenant's quota counters, beside its rate limiter (limiter.ts), in the same place (the
 * tenant's Durable Object on Workers, memory in tests): every decision is made here, atomically.
 *
 * - Storage: per workspace, its files and bytes (the merged tree: what a listing shows, each
 *   explicit directory's marker one file; checkpoints, undo history and the search index are not
 *   counted); the tenant's bytes are their sum. A write charges its change (new size − replaced size, +1 file for a new path)
 *   BEFORE it writes: the charge is refused when it would cross storage_bytes (tenant) or
 *   files_per_workspace (the workspace), else applied at once, so concurrent writers each see the
 *   others' charges (a reservation). A write that then fails, and every delete, gives back. A
 *   workspace never counted (made before counting began), or whose kept count is of an older
 *   rule (COUNT_VERSION: one kept before markers counted lacks its markers), is counted once by the
 *   caller (`unknown`, then `init`): its first charge, give-backs included, waits for that count.
 * - Workspace slots: a create holds a pending slot while it lists and writes, so two creates racing
 *   for the last slot never both pass (docs/limits-and-quotas.md: the argument). The count a create
 *   listed is kept (memory only) when no other create ran beside it, and the creates told since are
 *   added: a create within WORKSPACE_COUNT_MS of it needs no listing (`known`).
 * - Checkpoint slots: a checkpoint holds one, named by its id, while it is made (before the seal until
 *   its record is written or it failed), so checkpoints of one workspace racing for the last place
 *   never both pass: each sees the others' ids, beside the records it lists (lib/api/routes/quotas.ts reserveCheckpointSlot).
 * - Background tasks: leases, like concurrent runs (a crashed task frees its place when its lease ends).
 */
import type { QuotaStanding } from "./fields.js";
import { COUNT_VERSION, KeptCounts, type KeptCount } from "./kept-counts.js";
import { ALLOWANCE_MS, allowanceCap, covered, drawOn, holdRoom, unfilled, type Allowance, type HeldAllowance, type HoldAsk, type StorageUsage } from "./held-room.js";
export type { StorageUsage } from "./held-room.js";
export type StorageDecision =
  | { ok: true; files: number; bytes: number; tenant_bytes: number; allowance?: Allowance; hold?: Allowance; standing?: QuotaStanding }
  | { ok: false; quota: "storage_bytes" | "files_per_workspace"; usage: number; limit: number }
  | { ok: false; unknown: true };

export interface ChargeOptions {
  /** The workspace's count, when it has none yet (the caller counted it). `force`: applied even past a limit (what was already written: a stream whose size was known only after). */
  init?: StorageUsage;
  force?: boolean;
  /**
   * Room to hold for the asking isolate besides this change (storage-allowance.ts), when the change
   * passes: given what fits under the quotas, at most allowanceCap; the answer's `allowance`.
   */
  reserve?: StorageUsage;
  /**
   * The asker's allowance `id`: what it wrote under it since it last said (`spent`, the net change) is
   * counted, and `used` (the growth it took of the allowance's room) is taken off it; its room does not
   * count against this change. With `reserve` it is held on (topped up); without, or when the change is refused, released.
   */
  settle?: { id: string; spent: StorageUsage; used: StorageUsage };
  /** Answer where the quotas stand after the change (the decision's `standing`: what a bulk writer bounds itself by). */
  standing?: boolean;
  /** A write-back's hold (held-room.ts): refused unless its charge less its deletes fits besides the change; the answer's `hold`. */
  hold?: HoldAsk;
  /** The write-back's hold this change draws on: its growth taken from the hold's room first (only the rest is checked), a give-back refilling what it awaits. */
  draw?: string;
  /** With `draw`: the hold is released after the change (the write-back's end); `fill`: what it still awaits of its deletes is taken from the free room now (held-room.ts unfilled), or the change is refused. With `standing`: its own room is not counted as used. */
  release?: boolean;
  fill?: boolean;
}

/** How long a workspace count learned from a listing is trusted (then a create lists again): what a release lost or a delete not told can skew, at most. */
export const WORKSPACE_COUNT_MS = 60_000;

/** How a create that held a slot ended: whether it made the workspace, and what its listing counted before (absent: it did not list). Absent outcome: unknown (a fork, an archive). */
export interface SlotOutcome {
  created: boolean;
  listed?: number;
}

export interface SlotDecision {
  slot: string;
  /** The tenant's workspaces, counted by an earlier create's listing and the creates since, while that count is trusted: no listing needed. */
  known?: number;
  /** Other creates holding a slot when this one was taken. */
  pending: number;
  /** The workspaces limit that applies to the caller. */
  limit: number;
}

export interface CheckpointSlotDecision {
  /** The ids of the other checkpoints of the workspace being made. */
  pending: string[];
  /** The checkpoints_per_workspace limit that applies to the caller. */
  limit: number;
}

export type TaskLease = { id: string; until: number };

export type TaskDecision = { ok: true; running: number; limit: number } | { ok: false; running: number; limit: number; tasks: string[]; retry_after: number };

/** A tenant's counters whole, as a store without memory of its own keeps them (lib/limits/dynamodb.ts). */
export interface UsageState {
  storage: [string, KeptCount][];
  slots: [string, number][];
  tasks: TaskLease[];
  seq: number;
  allowances?: HeldAllowance[];
  /** Checkpoints being made: checkpoint id → its workspace and lease end. */
  checkpoints?: [string, CheckpointSlot][];
}

export interface CheckpointSlot {
  ws: string;
  until: number;
}

export class TenantUsage {
  /** Per workspace its count, and the tenant's bytes (kept-counts.ts). */
  readonly storage = new KeptCounts();
  /** Workspace creates in flight: slot id → lease end. */
  readonly slots = new Map<string, number>();
  readonly tasks = new Map<string, TaskLease>();
  /** Room held for isolates (storage-allowance.ts), by id: counted against the quotas until settled or ended. */
  readonly allowances = new Map<string, HeldAllowance>();
  /** Checkpoints being made, by checkpoint id. */
  readonly checkpoints = new Map<string, CheckpointSlot>();
  private seq = 0;
  /** The tenant's workspaces as a lone create listed them plus the creates told since, trusted until `until` (memory only). */
  private workspaces: { count: number; until: number } | null = null;
  /** Per slot taken here: whether it was alone when taken, and how many slots had been taken then (memory only). */
  private readonly slotMarks = new Map<string, { alone: boolean; taken: number }>();
  private slotsTaken = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** Loads what a restarted object kept (each count as kept: one of an older COUNT_VERSION is counted again at its first charge). */
  load(storage: Iterable<[string, KeptCount]>, tasks: Iterable<TaskLease> = [], allowances: Iterable<HeldAllowance> = []): void {
    for (const [ws, u] of storage) this.storage.keep(ws, u, u.v);
    for (const t of tasks) this.tasks.set(t.id, t);
    for (const a of allowances) this.allowances.set(a.id, a);
  }

  snapshot(): UsageState {
    return { storage: [...this.storage], slots: [...this.slots], tasks: [...this.tasks.values()], seq: this.seq, allowances: [...this.allowances.values()], checkpoints: [...this.checkpoints] };
  }

  /** Takes up a kept state (a fresh object's, before any charge). */
  restore(state: UsageState): void {
    this.load(state.storage, state.tasks, state.allowances ?? []);
    for (const [slot, until] of state.slots) this.slots.set(slot, until);
    for (const [id, slot] of state.checkpoints ?? []) this.checkpoints.set(id, slot);
    this.seq = state.seq;
  }

  get bytes(): number {
    return this.storage.bytes;
  }

  /**
   * Charges `delta` to workspace `ws` (negative: gives back). A growth that would cross a limit is
   * refused and nothing is charged (unless `force`: what was written already). `init`: the workspace's count, when it had none (the caller counted it).
   * Room held in allowances and write-backs' holds counts as used; `settle`, `reserve`, `hold`, `draw`: ChargeOptions.
   */
  chargeStorage(ws: string, delta: StorageUsage, limits: { storage_bytes: number; files_per_workspace: number }, opts: ChargeOptions = {}): StorageDecision {
    const now = this.now();
    for (const [id, a] of this.allowances) if (a.until <= now) this.allowances.delete(id);
    // The asker's own allowance: what it spent is counted (even when the allowance ended meanwhile: it was written), and its room is its own.
    const own = opts.settle ? this.allowances.get(opts.settle.id) : undefined;
    if (opts.settle) {
      const into = own?.ws ?? ws;
      const was = this.storage.get(into);
      if (was) this.storage.keep(into, { files: was.files + opts.settle.spent.files, bytes: was.bytes + opts.settle.spent.bytes }, was.v);
      if (own) this.allowances.delete(own.id);
    }
    if (opts.init && !this.storage.current(ws)) this.setStorage(ws, opts.init);
    const cur = this.storage.current(ws);
    // A give-back to a workspace never counted, or counted under an older rule, changes nothing: its first count (a listing, after the change) sees it.
    if (!cur) return { ok: false, unknown: true };
    let [heldBytes, heldFiles] = [0, 0];
    for (const a of this.allowances.values()) {
      heldBytes += a.bytes;
      if (a.ws === ws) heldFiles += a.files;
    }
    // A write-back's hold this change draws on (held-room.ts) covers its growth first; a new hold must fit besides the change.
    const hold = opts.draw ? this.allowances.get(opts.draw) : undefined;
    const drawn = hold?.ws === ws ? hold : undefined;
    const took = covered(drawn, delta);
    const filled = unfilled(drawn, opts.fill);
    const asked = opts.hold ? holdRoom(opts.hold, cur) : undefined;
    const up = { files: delta.files - took.files + filled.files + (asked?.room.files ?? 0), bytes: delta.bytes - took.bytes + filled.bytes + (asked?.room.bytes ?? 0) };
    if (!opts.force && up.bytes > 0 && this.storage.bytes + heldBytes + up.bytes > limits.storage_bytes) return { ok: false, quota: "storage_bytes", usage: this.storage.bytes + heldBytes, limit: limits.storage_bytes };
    if (!opts.force && up.files > 0 && cur.files + heldFiles + up.files > limits.files_per_workspace) return { ok: false, quota: "files_per_workspace", usage: cur.files + heldFiles, limit: limits.files_per_workspace };
    this.storage.keep(ws, { files: cur.files + delta.files, bytes: cur.bytes + delta.bytes }, COUNT_VERSION);
    const mine = { files: drawn?.files ?? 0, bytes: drawn?.bytes ?? 0 };
    if (drawn) drawOn(drawn, delta, took, filled);
    if (drawn && opts.release) this.allowances.delete(drawn.id);
    const after = this.storage.get(ws)!;
    const decision: Extract<StorageDecision, { ok: true }> = { ok: true, files: after.files, bytes: after.bytes, tenant_bytes: this.storage.bytes };
    // Asked by a write-back drawing on its hold (its stage requests), the hold's own room is room it may use: not counted as used.
    if (opts.standing) decision.standing = { storage_bytes: { usage: this.storage.bytes + heldBytes - mine.bytes, limit: limits.storage_bytes }, files_per_workspace: { usage: after.files + heldFiles - mine.files, limit: limits.files_per_workspace } };
    if (opts.reserve) {
      // Held again: what is left of the asker's own (less what it used), topped up to what it asks, within the cap and what fits.
      const left = own ? { files: Math.max(0, own.files - opts.settle!.used.files), bytes: Math.max(0, own.bytes - opts.settle!.used.bytes) } : { files: 0, bytes: 0 };
      const cap = allowanceCap(limits);
      const files = Math.max(0, Math.min(opts.reserve.files, cap.files, limits.files_per_workspace - after.files - heldFiles));
      const bytes = Math.max(0, Math.min(opts.reserve.bytes, cap.bytes, limits.storage_bytes - this.storage.bytes - heldBytes));
      const held = { files: Math.max(files, Math.min(left.files, limits.files_per_workspace - after.files - heldFiles)), bytes: Math.max(bytes, Math.min(left.bytes, limits.storage_bytes - this.storage.bytes - heldBytes)) };
      if (held.files > 0 || held.bytes > 0) {
        const id = own?.id ?? `a${now.toString(36)}-${(this.seq++).toString(36)}`;
        this.allowances.set(id, { id, ws, ...held, until: now + ALLOWANCE_MS });
        decision.allowance = { id, ...held };
      }
    }
    if (asked) {
      const id = `h${now.toString(36)}-${(this.seq++).toString(36)}-${crypto.randomUUID().slice(0, 8)}`;
      this.allowances.set(id, { id, ws, ...asked.room, awaits: asked.awaits, until: now + opts.hold!.ms });
      decision.hold = { id, ...asked.room };
    }
    return decision;
  }

  /** Sets a workspace's count (a recount after a bulk change, countStored: current by COUNT_VERSION; null: the workspace is gone, and the room held for its writes). */
  setStorage(ws: string, u: StorageUsage | null): void {
    if (u) return this.storage.keep(ws, u, COUNT_VERSION);
    this.storage.drop(ws);
    this.workspaces = null; // a workspace gone (or a fork undone): the next create counts again; the room held for its writes goes too
    for (const [id, a] of this.allowances) if (a.ws === ws) this.allowances.delete(id);
  }

  /**
   * A pending workspace slot, taken BEFORE the create counts the workspaces in storage: `pending` is
   * how many other creates hold one now. The create passes when its count + pending stays under the
   * limit (docs/limits-and-quotas.md: why two creates racing for the last slot never both pass).
   */
  reserveSlot(leaseMs: number): { slot: string; pending: number; known?: number } {
    const now = this.now();
    for (const [id, until] of this.slots) if (until <= now) (this.slots.delete(id), this.slotMarks.delete(id));
    const pending = this.slots.size;
    const slot = `${now.toString(36)}-${(this.seq++).toString(36)}`;
    this.slots.set(slot, now + leaseMs);
    this.slotMarks.set(slot, { alone: pending === 0, taken: ++this.slotsTaken });
    const known = this.workspaces && this.workspaces.until > now ? this.workspaces.count : undefined;
    return { slot, pending, ...(known !== undefined ? { known } : {}) };
  }

  /**
   * Frees a slot. A create that made its workspace adds it to a trusted count. A count it listed becomes
   * the trusted one only when it was exact: no other create held a slot when it took its own or took
   * one since (none could have landed unseen beside the listing). An unknown outcome forgets the count.
   */
  releaseSlot(slot: string, outcome?: SlotOutcome): void {
    const mark = this.slotMarks.get(slot);
    this.slots.delete(slot);
    this.slotMarks.delete(slot);
    const now = this.now();
    if (!outcome) return void (this.workspaces = null);
    if (this.workspaces && this.workspaces.until > now) {
      if (outcome.created) this.workspaces.count++;
      return;
    }
    this.workspaces = null;
    if (outcome.listed !== undefined && mark?.alone && mark.taken === this.slotsTaken) this.workspaces = { count: outcome.listed + (outcome.created ? 1 : 0), until: now + WORKSPACE_COUNT_MS };
  }

  /**
   * A slot for checkpoint `id` of workspace `ws`, held until released or `leaseMs` ended: answers the
   * ids of the other checkpoints of `ws` being made, which the asker counts beside the records it lists.
   */
  reserveCheckpoint(ws: string, id: string, leaseMs: number): { pending: string[] } {
    const now = this.now();
    const pending: string[] = [];
    for (const [other, s] of this.checkpoints) {
      if (s.until <= now) this.checkpoints.delete(other);
      else if (s.ws === ws && other !== id) pending.push(other);
    }
    this.checkpoints.set(id, { ws, until: now + leaseMs });
    return { pending };
  }

  releaseCheckpoint(id: string): boolean {
    return this.checkpoints.delete(id);
  }

  /** A background task's place, leased for leaseMs; `id` names it (its workspace and run) so it can be released by name. */
  acquireTask(id: string, limit: number, leaseMs: number): TaskDecision {
    const now = this.now();
    this.expireTasks(now);
    if (this.tasks.has(id)) return { ok: true, running: this.tasks.size, limit };
    if (this.tasks.size >= limit) {
      const held = [...this.tasks.values()];
      const soonest = Math.min(...held.map((t) => t.until), now + 60_000);
      return { ok: false, running: held.length, limit, tasks: held.map((t) => t.id), retry_after: Math.max(1, Math.min(60, Math.ceil((soonest - now) / 1000))) };
    }
    this.tasks.set(id, { id, until: now + leaseMs });
    return { ok: true, running: this.tasks.size, limit };
  }

  /** Releases tasks by id; returns whether any was held. */
  releaseTasks(ids: readonly string[]): boolean {
    let any = false;
    for (const id of ids) any = this.tasks.delete(id) || any;
    return any;
  }

  expireTasks(now = this.now()): boolean {
    let dropped = false;
    for (const [id, t] of this.tasks) if (t.until <= now) dropped = this.tasks.delete(id) || dropped;
    return dropped;
  }
}
