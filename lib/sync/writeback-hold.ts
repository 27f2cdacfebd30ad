/**
 * A file-by-file write-back's hold on the storage quotas (the object's side: lib/limits/held-room.ts).
 * A write-back of more than one request takes the whole charge of its plan once, when the plan is
 * checked, so a writer racing it (another call, an upload) cannot take the room between its
 * batches and cut it partway; its deletes count as room, applied first, each give-back moving into
 * the hold what it awaits. On the wire (the query of /v1/sync/put, /v1/sync/delete and PUT
 * /v1/sync/files/…; infra/container/writeback.ts sends them):
 *  - `reserve=1` with the plan: the write-back's first request (the runner's: a put batch of no
 *    file; a delete batch takes it too) checks the plan, its deletes credited, and takes the hold (one round trip
 *    to the limits object), before it writes anything; refused: 413 QUOTA_EXCEEDED, nothing of the
 *    write-back is written. The answer names the hold (`hold`).
 *  - `hold=<id>`: the request draws on the hold. A put batch says its own share in the plan's
 *    fields: charged at once from the hold before its first file (chargedAhead), the rest given back.
 *  - `fill=1` (with `hold`, a put batch of no file): sent after the deletes when one of them did not
 *    land (changed meanwhile: it freed nothing), before any write: what the hold still awaits of its
 *    deletes is taken from the free room (fillHold); refused, none of the write-back's files is written.
 *  - `release=1` (with `hold`): the hold is released once the request is done; unreleased (a runner
 *    that died), its lease ends with the run's sync token, at most HOLD_MAX_MS after it was taken.
 * A packed write-back holds its room the same way: its stage requests ask where the quotas stand
 * with its hold's room as theirs, and its commit draws on the hold (stage-server.ts).
 */
import { isToolError, ToolError } from "../shared/errors.js";
import { quotaExceeded } from "../limits/fields.js";
import type { StorageQuotaHandle } from "../limits/storage-quota.js";
import type { StorageQuota } from "../workspace/workspace-types.js";
import { chargedAhead, planQuery, WriteBackBound, type WriteBackPlan } from "./writeback-bound.js";

/** The longest a hold is kept unreleased (the run's sync token usually ends first). */
export const HOLD_MAX_MS = 10 * 60_000;

/** What a write-back request asks of its hold. */
export interface HoldTerms {
  reserve?: boolean;
  hold?: string;
  release?: boolean;
  fill?: boolean;
}

/** A write-back request's query: its plan (or share) and its terms ("" for neither). */
export function writeBackQuery(plan?: WriteBackPlan, t: HoldTerms = {}): string {
  const q = new URLSearchParams(plan ? planQuery(plan).slice(1) : "");
  if (t.reserve) q.set("reserve", "1");
  if (t.hold) q.set("hold", t.hold);
  if (t.release) q.set("release", "1");
  if (t.fill) q.set("fill", "1");
  const s = q.toString();
  return s ? `?${s}` : "";
}

export function readHoldTerms(q: URLSearchParams): HoldTerms {
  const hold = q.get("hold") ?? undefined;
  if (hold !== undefined && !/^[\w-]{1,64}$/.test(hold)) throw new ToolError("INVALID_ARGUMENT", "The write-back request's hold must be the id its first request was answered; nothing was written.");
  return { ...(q.get("reserve") === "1" ? { reserve: true } : {}), ...(hold ? { hold } : {}), ...(q.get("release") === "1" ? { release: true } : {}), ...(q.get("fill") === "1" ? { fill: true } : {}) };
}

/** The hold's lease: until the run's sync token ends (`exp`, seconds), at most HOLD_MAX_MS, at least a second. */
export const holdMs = (exp: number, now = Date.now()) => Math.max(1000, Math.min(HOLD_MAX_MS, exp * 1000 - now));

/**
 * Takes the write-back's hold: its id; null when nothing is counted (the object unreachable).
 * Refused: QUOTA_EXCEEDED with the plan's bound (where the quotas stand, asked once more), or as the object answered.
 */
export async function takeHold(quota: StorageQuotaHandle, plan: WriteBackPlan, ms: number): Promise<string | null> {
  const credit = plan.deletes ?? { bytes: 0, files: 0 };
  const got = await quota.hold({ want: { files: plan.files, bytes: Math.max(0, plan.bytes - plan.replaces) }, credit, ms });
  if (!got || "id" in got) return got?.id ?? null;
  const standing = await quota.standing();
  if (standing) new WriteBackBound(standing, plan, true).declared();
  const what = got.quota === "files_per_workspace" ? `${plan.files} new files (${credit.files} deleted)` : `${plan.bytes} bytes of files (replacing ${plan.replaces}, deleting ${credit.bytes})`;
  throw quotaExceeded(got.quota, got.usage, got.limit, `The write-back's ${what} do not fit beside what the tenant's other writes hold now`, true);
}

/**
 * The workspace's quota for a request drawing on hold `id`: each charge and give-back goes to the
 * limits object with it. `release` (the write-back's last request): the first charge (a put batch's
 * share, before its first file) releases what is left of the hold in the same round trip; `end`
 * releases it when no charge did (a request of no file, a refused charge).
 */
export function drawingOn(quota: StorageQuotaHandle, id: string, release = false): StorageQuota & { end(): Promise<void> } {
  let releasing = release;
  return {
    async charge(d) {
      const now = releasing;
      releasing = false;
      try {
        await quota.charge(d, { draw: id, ...(now ? { release: true } : {}) });
      } catch (e) {
        releasing = now; // refused: the object changed nothing, the hold is still there
        throw e;
      }
    },
    settle: (d) => quota.settle(d, { draw: id }),
    end: async () => (releasing ? quota.settle({ files: 0, bytes: 0 }, { draw: id, release: true }) : undefined),
  };
}

/**
 * How one write-back request is charged, from its plan and its hold terms (the one choice, for
 * /v1/sync/put and /v1/sync/delete):
 *  - `reserve` with a plan: the whole write-back's hold taken (takeHold), its deletes credited;
 *  - a plan and no hold (a write-back of one request): bounded whole against where the quotas stand
 *    (WriteBackBound), then its files charged at once before the first is written (`ahead`);
 *  - `fill` (with `hold`, after the deletes when one of them freed nothing): the room the hold still
 *    awaits taken from the free room before any write (fillHold; refused: none is written);
 *  - `hold` (a later request): each change drawn on the hold (`drawn`), a put batch's own share
 *    charged from it at once (`ahead`), the rest of the hold released by the last request;
 *  - neither (a single file's route, or no quota): each file charged as it is written.
 * Refused (QUOTA_EXCEEDED) before the request reads or writes anything.
 */
export async function writeBackCharge(quota: StorageQuotaHandle | undefined, plan: WriteBackPlan | null, terms: HoldTerms, exp: number): Promise<{ hold: string | null; ahead: ReturnType<typeof chargedAhead> | null; drawn: ReturnType<typeof drawingOn> | null }> {
  let hold = terms.hold ?? null;
  let ahead: ReturnType<typeof chargedAhead> | null = null;
  if (plan && quota && terms.reserve) hold = await takeHold(quota, plan, holdMs(exp));
  else if (plan && quota && !hold) {
    const standing = await quota.standing();
    if (standing) new WriteBackBound(standing, plan).declared();
    if (standing) ahead = chargedAhead(quota, plan);
  }
  if (quota && hold && terms.fill) await fillHold(quota, hold);
  const drawn = quota && hold ? drawingOn(quota, hold, terms.release) : null;
  if (plan && drawn && !terms.reserve) ahead = chargedAhead(drawn, plan);
  return { hold, ahead, drawn };
}

/**
 * Before any write drawn on hold `id` (`fill=1`): what the hold still awaits of its deletes (one that
 * turned out a conflict freed nothing into it) is taken from the free room, in one round trip.
 * Refused: QUOTA_EXCEEDED, and the runner writes none of the write-back's files (its deletes that landed stay).
 */
export async function fillHold(quota: StorageQuotaHandle, id: string): Promise<void> {
  try {
    await quota.charge({ files: 0, bytes: 0 }, { draw: id, fill: true });
  } catch (e) {
    if (!isToolError(e) || e.code !== "QUOTA_EXCEEDED") throw e;
    const d = e.details as { quota: "storage_bytes" | "files_per_workspace"; usage: number; limit: number };
    const what = "Some of the write-back's deletes did not land (the file changed or was deleted meanwhile), so the room they were to free is not there for its files";
    throw quotaExceeded(d.quota, d.usage, d.limit, what, true, {}, "None of its files was written; the deletes that landed stay.");
  }
}
