/**
 * How much a run's packed write-back may stage before the storage quotas could no longer accept
 * its commit (issue #28: a write-back past a quota is refused before it writes, not after; the
 * import's twin is lib/archive/import-bound.ts). The stage route (stage-server.ts) asks where the
 * quotas stand (one round trip to the tenant's limits object per stage request) and, with the
 * runner's plan (StagePlan, lib/sync/stage.ts), bounds the run's
 *   bytes staged       ≤ (storage_bytes − usage) + the bytes of the versions the run replaces
 *   new paths staged   ≤ files_per_workspace − usage
 * The plan's totals are checked before the request's body is read (a write-back that cannot fit
 * writes no pack at all); then each file as it comes, by the run's running count (the plan's
 * `before`, plus this request's files so far), whatever the totals said: a runner that
 * under-declares is stopped by the count. What the run replaces is the plan's word, capped at what
 * the tenant holds, so the bound is never above the limit; without a plan (an older runner) the
 * cap itself, and the count starts at this request. No state is kept between requests: the count
 * is the runner's (a runner that lies about it is bounded per request only, and the commit's
 * charge still refuses what it staged). Refused: QUOTA_EXCEEDED naming quota, usage, limit and how
 * far the write-back got, before this request's pack is written. This bounds what is written, it
 * is not the accounting: the commit charges exactly what it switches (stage-server.ts).
 */
import { quotaExceeded, type QuotaStanding } from "../limits/fields.js";
import type { StagePlan } from "./stage.js";

export class StageBound {
  /** The run's bytes and new paths staged so far (its requests before this one, then this one's files). */
  private bytes: number;
  private files: number;
  private readonly replaces: number;
  readonly maxBytes: number;
  readonly maxFiles: number;

  constructor(private readonly standing: QuotaStanding, private readonly plan: StagePlan | null) {
    const { storage_bytes: b, files_per_workspace: f } = standing;
    this.replaces = Math.min(plan ? plan.replaces : b.usage, b.usage);
    this.maxBytes = Math.max(0, b.limit - b.usage) + this.replaces;
    this.maxFiles = Math.max(0, f.limit - f.usage);
    this.bytes = plan?.before.bytes ?? 0;
    this.files = plan?.before.files ?? 0;
  }

  /** Before the request's body is read: QUOTA_EXCEEDED when the plan's totals pass the bound. */
  declared(): void {
    const p = this.plan;
    if (!p) return;
    const at = { declared_bytes: p.bytes, declared_files: p.files };
    if (p.files > this.maxFiles) throw this.refusal("files_per_workspace", `The write-back's ${p.files} new files are more than the ${this.maxFiles} this workspace has room for`, at);
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
    return `${Math.max(0, limit - usage)} bytes free, plus the ${this.replaces} bytes of the files it replaces`;
  }

  private refusal(quota: keyof QuotaStanding, what: string, at: Record<string, unknown>) {
    const { usage, limit } = this.standing[quota];
    const max = quota === "storage_bytes" ? { bytes_allowed: this.maxBytes } : { files_allowed: this.maxFiles };
    return quotaExceeded(quota, usage, limit, what, true, { ...at, ...max });
  }
}
