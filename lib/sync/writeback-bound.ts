/**
 * How much a run's write-back may write before the storage quotas could no longer accept it whole
 * (issue #28 §2: a write-back past a quota is refused before it writes, not after; the import's
 * twin is lib/archive/import-bound.ts). One rule for both ways a write-back goes:
 *  - packed (stage-server.ts): every stage request carries the plan and the run's running count;
 *  - file by file (put-server.ts): the plan rides on the write-back's first put batch (or a put
 *    batch of no file, sent before anything else), and each file is then charged exactly as it is
 *    written (lib/workspace/file-writes.ts), so a runner that under-declares is bounded per file.
 * The route asks where the quotas stand (one round trip to the tenant's limits object) and, with
 * the runner's plan (WriteBackPlan), bounds the run's
 *   bytes written      ≤ (storage_bytes − usage) + the bytes of the versions the run replaces
 *   new paths written  ≤ files_per_workspace − usage
 * The plan's totals are checked before the request's body is read (a write-back that cannot fit
 * writes nothing at all); on a stage request then each file as it comes, by the run's running count
 * (the plan's `before`, plus this request's files so far), whatever the totals said: a runner that
 * under-declares is stopped by the count. What the run replaces is the plan's word, capped at what
 * the tenant holds, so the bound is never above the limit; without a plan (an older runner) the
 * cap itself, and the count starts at this request. No state is kept between requests: the count
 * is the runner's (a runner that lies about it is bounded per request only, and the commit's
 * charge still refuses what it staged). Deletes are counted as room only in a write-back's hold
 * (writeback-hold.ts: applied before its writes); a write-back holding its room asks the standing
 * with its hold's room as its own. Refused: QUOTA_EXCEEDED naming quota, usage, limit and how far the write-back got,
 * before this request writes. This bounds what is written, it is not the accounting: every write
 * is still charged exactly (the commit, or each file).
 */
import { ToolError } from "../shared/errors.js";
import type { StorageDelta, StorageQuota } from "../workspace/workspace-types.js";
import { quotaExceeded, type QuotaStanding } from "../limits/fields.js";

/**
 * What the runner declares about its whole write-back (the walk's sizes of the files it writes, how
 * many of them are new paths, the bytes of the versions the modified ones replace) and the run's
 * running count (bytes and new files of the stage requests it sent before this one; 0 on a put
 * batch). Absent (an older runner): the request is bounded on its own.
 */
export interface WriteBackPlan {
  bytes: number;
  files: number;
  replaces: number;
  before: { bytes: number; files: number };
  /** The write-back's deletes (their files and the bytes of the versions they delete): room once applied, counted only by a file-by-file write-back that holds its room (writeback-hold.ts). */
  deletes?: { bytes: number; files: number };
}

const PLAN_FIELDS = { bytes: "total_bytes", files: "new_files", replaces: "replaced_bytes" } as const;
const BEFORE_FIELDS = { bytes: "staged_bytes", files: "staged_files" } as const;
const DELETE_FIELDS = { bytes: "deleted_bytes", files: "deleted_files" } as const;

/** The plan as a request's query string ("?total_bytes=…"). */
export function planQuery(plan: WriteBackPlan): string {
  const q = new URLSearchParams();
  for (const [k, name] of Object.entries(PLAN_FIELDS)) q.set(name, String(plan[k as keyof typeof PLAN_FIELDS]));
  for (const [k, name] of Object.entries(BEFORE_FIELDS)) q.set(name, String(plan.before[k as keyof typeof BEFORE_FIELDS]));
  if (plan.deletes) for (const [k, name] of Object.entries(DELETE_FIELDS)) q.set(name, String(plan.deletes[k as keyof typeof DELETE_FIELDS]));
  return `?${q}`;
}

/** The plan of a request's query; null when it has none (an older runner); INVALID_ARGUMENT when it is malformed. */
export function readPlan(query: URLSearchParams): WriteBackPlan | null {
  if (!query.has(PLAN_FIELDS.bytes)) return null;
  const num = (name: string) => {
    const v = Number(query.get(name));
    if (!query.has(name) || !Number.isSafeInteger(v) || v < 0) throw new ToolError("INVALID_ARGUMENT", `The write-back request's ${name} must be a whole number from 0 (the write-back's plan: ${[...Object.values(PLAN_FIELDS), ...Object.values(BEFORE_FIELDS), ...Object.values(DELETE_FIELDS)].join(", ")}); nothing was written.`);
    return v;
  };
  const plan: WriteBackPlan = { bytes: num(PLAN_FIELDS.bytes), files: num(PLAN_FIELDS.files), replaces: num(PLAN_FIELDS.replaces), before: { bytes: num(BEFORE_FIELDS.bytes), files: num(BEFORE_FIELDS.files) } };
  if (query.has(DELETE_FIELDS.bytes)) plan.deletes = { bytes: num(DELETE_FIELDS.bytes), files: num(DELETE_FIELDS.files) };
  return plan;
}

export class WriteBackBound {
  /** The run's bytes and new paths staged so far (its requests before this one, then this one's files). */
  private bytes: number;
  private files: number;
  private readonly replaces: number;
  /** The plan's deletes credited as room (`creditDeletes`: a write-back that holds its room applies them before its writes). */
  private readonly deletes: { bytes: number; files: number };
  readonly maxBytes: number;
  readonly maxFiles: number;

  constructor(private readonly standing: QuotaStanding, private readonly plan: WriteBackPlan | null, creditDeletes = false) {
    const { storage_bytes: b, files_per_workspace: f } = standing;
    this.replaces = Math.min(plan ? plan.replaces : b.usage, b.usage);
    const d = creditDeletes && plan?.deletes ? plan.deletes : { bytes: 0, files: 0 };
    this.deletes = { bytes: Math.min(d.bytes, Math.max(0, b.usage - this.replaces)), files: Math.min(d.files, f.usage) };
    this.maxBytes = Math.max(0, b.limit - b.usage) + this.replaces + this.deletes.bytes;
    this.maxFiles = Math.max(0, f.limit - f.usage) + this.deletes.files;
    this.bytes = plan?.before.bytes ?? 0;
    this.files = plan?.before.files ?? 0;
  }

  /** Before the request's body is read: QUOTA_EXCEEDED when the plan's totals pass the bound. */
  declared(): void {
    const p = this.plan;
    if (!p) return;
    const at = { declared_bytes: p.bytes, declared_files: p.files };
    const deleted = this.deletes.files ? ` (with the ${this.deletes.files} it deletes)` : "";
    if (p.files > this.maxFiles) throw this.refusal("files_per_workspace", `The write-back's ${p.files} new entries (files, and empty directories: each counts as a file) are more than the ${this.maxFiles} this workspace has room for${deleted}`, at);
    if (p.bytes > this.maxBytes) throw this.refusal("storage_bytes", `The write-back's ${p.bytes} bytes of files are more than the ${this.maxBytes} the storage quota could take (${this.room()})`, at);
  }

  /** Before `path` (`size` bytes; a new path when `create`) is staged: QUOTA_EXCEEDED when it would take the run past the bound. */
  file(path: string, size: number, create: boolean): void {
    const at = { path: path.slice(0, 300), staged_bytes: this.bytes, staged_files: this.files };
    const before = `The write-back stopped before ${JSON.stringify(path.slice(0, 200))} (${size} bytes)`;
    if (create && this.files + 1 > this.maxFiles) throw this.refusal("files_per_workspace", `${before}: with the ${this.files} new files staged before it, it would add more than the ${this.maxFiles} this workspace has room for`, at);
    if (this.bytes + size > this.maxBytes) throw this.refusal("storage_bytes", `${before}: with the ${this.bytes} bytes staged before it, it would write more than the ${this.maxBytes} the storage quota could take (${this.room()})`, at);
    if (create) this.files++;
    this.bytes += size;
  }

  private room(): string {
    const { usage, limit } = this.standing.storage_bytes;
    const deleted = this.deletes.bytes ? ` and the ${this.deletes.bytes} bytes of the files it deletes` : "";
    return `${Math.max(0, limit - usage)} bytes free, plus the ${this.replaces} bytes of the files it replaces${deleted}`;
  }

  private refusal(quota: keyof QuotaStanding, what: string, at: Record<string, unknown>) {
    const { usage, limit } = this.standing[quota];
    const max = quota === "storage_bytes" ? { bytes_allowed: this.maxBytes } : { files_allowed: this.maxFiles };
    return quotaExceeded(quota, usage, limit, what, true, { ...at, ...max });
  }
}

/**
 * The plan's change charged ahead, in one round trip, for a put batch that carries the plan and so
 * holds the whole write-back (put-server.ts): `open` before its first file is written charges the
 * plan's new files and its bytes less what it replaces (refused: QUOTA_EXCEEDED, nothing of it is
 * written; a write-back racing for the same room since the standing was asked is caught here).
 * Then each file's charge is taken from what is left, with no round trip; one that does not fit in
 * it goes to the limits object as before (a runner that under-declares is charged exactly), and
 * `close` gives back what is left (a give-back of a failed write adds to it) when the request ends.
 * A write-back that holds its room (writeback-hold.ts) passes a quota drawing on the hold: the charge ahead is its batch's share.
 */
export function chargedAhead(quota: StorageQuota, plan: WriteBackPlan): { quota: StorageQuota; open(): Promise<void>; close(): Promise<void> } {
  const ahead = { files: plan.files, bytes: Math.max(0, plan.bytes - plan.replaces) };
  const left = { files: 0, bytes: 0 };
  let opened: Promise<void> | null = null;
  const take = (d: StorageDelta) => void ((left.files -= d.files), (left.bytes -= d.bytes));
  return {
    quota: {
      ...quota,
      async charge(d) {
        if (d.files <= left.files && d.bytes <= left.bytes) return take(d);
        await quota.charge(d);
      },
      async settle(d) {
        take(d); // a give-back (negative) adds to what is left: close gives it back
      },
    },
    open: () =>
      (opened ??= quota.charge(ahead).then(() => {
        left.files = ahead.files;
        left.bytes = ahead.bytes;
      })),
    async close() {
      if (!opened || !(await opened.then(() => true, () => false))) return;
      await quota.settle({ files: -left.files, bytes: -left.bytes });
    },
  };
}
