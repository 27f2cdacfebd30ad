/**
 * concurrent_runs: an Executor that holds a slot of the tenant's limits object (lib/limits/)
 * while a foreground command runs. The slot is leased for the command's timeout plus its
 * write-back and margin, and released as soon as the run answers: an isolate that dies
 * mid-run frees its slot when the lease ends. Over the limit: RATE_LIMITED naming
 * concurrent_runs, before the runner is invoked.
 *
 * A streamed command (SSE, MCP progress) reaches the runner through start, and holds its slot the same
 * way while it is followed to its result (foreground: lib/exec/stream-run.ts). Background tasks (start
 * alone) are not counted here: they have background_tasks (lib/exec/task-places.ts).
 *
 * Every slot, a fresh run's and a live sandbox's, is taken through acquireSlot (issue #29): a live
 * sandbox's lease names its holder (session and runner generation); past the limit, the acquirer asks
 * each holder's coordinator whether that generation is still the session's current one, frees the
 * leases of those that are not (a restart or redeploy forgot them; a runner that stopped polling is
 * found lost by that same question, stale_ms after its last poll, or, under a command whose caller died
 * too, once the command's timeout and stale_ms and the caller's turn have passed: session-generation.ts
 * checkStale) and tries once more.
 *
 * A fresh run's lease names its run (its record x/runs/<run>/, lib/sync/run-records.ts) when the
 * executor is given the storage: past the limit, the acquirer HEADs each such run's result.json, and a
 * run whose runner stored its result is over (its sandbox is gone; the API instance that ran it died
 * before it released the slot, or is about to release it): its lease is released. No result proves
 * nothing (a runner still running, or one not yet started, has none): that slot is kept until its lease
 * ends. Nothing of this is on a run's path while the limit is not full (the holder's fields ride on the
 * lease's own write; its run id is a hash of the request's idempotency key).
 */
import type { WaitUntil } from "../shared/after-answer.js";
import { ToolError } from "../shared/errors.js";
import type { Caller, LimitsStore } from "../limits/store.js";
import type { LeaseHolder, LiveHolder, RunDecision, RunHolder } from "../limits/limiter.js";
import type { StorageDriver } from "../storage/types.js";
import { runPrefix } from "../layout/paths.js";
import { keysOf, runIdFor } from "../sync/run-records.js";
import type { Executor, RunRequest } from "./types.js";
import { accountEnds, type LiveService } from "./live/service.js";
import { accountForgottenEnd } from "./live/forgotten-end.js";
import { LIVE_POLL_MS, LIVE_STALE_MS } from "../sync/live-types.js";

/** How long a run's slot is leased: its timeout, the write-back after it (at least max(10 s, timeout / 4)), and a minute's margin. */
export const runLeaseMs = (req: RunRequest): number => req.timeout_ms + Math.max(10_000, req.timeout_ms / 4) + 60_000;

/** What a refused run is told to wait, at most (seconds). */
const RETRY_RUN_S = 5;

/**
 * The one answer past concurrent_runs, for a fresh run and for a live sandbox's start alike: the slots are
 * shared, and an idle live sandbox holds one for its life, so waiting alone may never free one.
 */
export function concurrentRunsRefused(d: { running: number; limit: number; retry_after: number; by?: "key" | "tenant" }): ToolError {
  // A run usually ends long before its lease: a few seconds is the better guess of when a slot is free.
  const retry = Math.min(d.retry_after, RETRY_RUN_S);
  const what = d.running === 1 ? "command or live sandbox" : "commands or live sandboxes";
  const who = d.by === "key" ? "This API key" : "This tenant";
  const limit = d.by === "key" ? `the key's own concurrent_runs: ${d.limit}` : `concurrent_runs: ${d.limit}`;
  return new ToolError("RATE_LIMITED", `${who} already runs ${d.running} ${what} at once (${limit}; a live sandbox holds one for its life, idle or not). Retry in ${retry} s, when one has finished, or end an idle live sandbox (DELETE /v1/workspaces/{ws}/sessions/{session}/sandbox). A live sandbox's slot frees when it ends: its idle timeout, that DELETE, or its runner gone (a restart, a crash), found by the next call past the limit at most ${LOST_AFTER_S} s after the runner's last poll.`, { limit: "concurrent_runs", running: d.running, quota: d.limit, retry_after: retry, ...(d.by ? { by: d.by } : {}) });
}

/** A runner not heard from this long is lost (a poll held LIVE_POLL_MS, then LIVE_STALE_MS): the next acquirer past the limit frees its slot. */
const LOST_AFTER_S = Math.round((LIVE_POLL_MS + LIVE_STALE_MS) / 1000);

/** The most holders one refusal asks about (the oldest leases first: a stale one is old); so a tenant of thousands of slots costs a refused call at most this many coordinator requests. */
const HOLDERS_ASKED = 32;

/**
 * The one way a concurrent_runs slot is taken. `holder`: the live sandbox or fresh run that will hold
 * it. Refused with holders counted: each live holder's session is asked for its current generation
 * (`live`: its coordinator's status, whose ends are accounted as a call's), each run holder's result is
 * looked for (`storage`: one HEAD); a lease whose holder is provably over is released, and when any
 * was, the slot is asked for once more. A coordinator or storage that does not answer keeps its
 * holder's slot (never freed on a guess).
 */
export async function acquireSlot(limits: LimitsStore, tenant: string, caller: Caller, leaseMs: number, opts: { holder?: LeaseHolder; live?: LiveService; storage?: StorageDriver; later?: WaitUntil } = {}): Promise<RunDecision> {
  const d = await limits.acquireRun(tenant, caller, leaseMs, opts.holder);
  if (d.ok || !d.holders || (!opts.live && !opts.storage)) return d;
  const freed = await Promise.all(d.holders.slice(0, HOLDERS_ASKED).map(({ lease, holder }) => ("run" in holder ? runOver(tenant, lease, holder, limits, opts.storage) : liveGone(tenant, lease, holder, limits, opts.live, opts.later))));
  return freed.some(Boolean) ? limits.acquireRun(tenant, caller, leaseMs, opts.holder) : d;
}

/** Whether a live holder is gone (no longer its session's current generation): its lease released, unless its end released it. */
async function liveGone(tenant: string, lease: string, holder: LiveHolder, limits: LimitsStore, live: LiveService | undefined, later: WaitUntil | undefined): Promise<boolean> {
  if (!live) return false;
  const key = { tenant, workspace: holder.workspace, session: holder.session };
  const seen = await live.coordinator.status(key).catch(() => null);
  if (!seen) return false;
  await accountEnds(live, key, seen.ends, later); // a generation found lost just now: its slot released (and its usage and audit written) here
  if (seen.sandbox?.generation === holder.generation) return false;
  // Neither its coordinator's nor ended there just now: an end nobody reported is billed from its marker, once.
  if (!seen.ends.some((e) => e.generation === holder.generation)) await accountForgottenEnd(live, key, holder.generation, later);
  if (!seen.ends.some((e) => e.lease === lease)) await limits.releaseRun(tenant, lease).catch(() => {});
  return true;
}

/** Whether a fresh run is over (its runner stored its result): its lease released. */
async function runOver(tenant: string, lease: string, holder: RunHolder, limits: LimitsStore, storage: StorageDriver | undefined): Promise<boolean> {
  if (!storage) return false;
  const result = await storage.head(keysOf(runPrefix(tenant, holder.workspace, holder.run)).result).catch(() => null);
  if (!result) return false;
  await limits.releaseRun(tenant, lease).catch(() => {});
  return true;
}

/** The holder a fresh run's lease names: its run (the id its runner's record is kept under). */
export const runHolder = async (req: RunRequest): Promise<RunHolder> => ({ workspace: req.workspace, run: await runIdFor(req.tenant, req.workspace, req.idempotency_key) });

/**
 * `live`: the live service whose sandboxes' stale slots a run past the limit frees; `storage`: where the
 * runs' records are, for a run's lease to name its run and a run past the limit to free the slots of
 * runs that are over (acquireSlot).
 */
export function limitedExecutor(executor: Executor, limits: LimitsStore, live?: LiveService, storage?: StorageDriver): Executor {
  /** `work` under a slot of the tenant's concurrent_runs (and of the caller's key's own), released once it ended. */
  async function holding<T>(req: RunRequest, work: () => Promise<T>, caller: Caller = { key_id: "" }): Promise<T> {
    let d;
    try {
      d = await acquireSlot(limits, req.tenant, caller, runLeaseMs(req), { ...(live ? { live } : {}), ...(storage ? { storage, holder: await runHolder(req) } : {}) });
    } catch (e) {
      console.error("limits: the tenant's limits object did not answer; the run goes on uncounted", e instanceof Error ? e.message : String(e));
      return work();
    }
    if (!d.ok) throw concurrentRunsRefused(d);
    try {
      return await work();
    } finally {
      // Before the answer, not after it (#31 §4 weighed it): released later, the slot would still be held when
      // the agent's next command arrives, and on another isolate (nothing orders its acquireRun after this
      // release) a tenant running concurrent_runs commands with this one just ended would be refused.
      await limits.releaseRun(req.tenant, d.lease).catch(() => {}); // missed: the lease ends on its own
    }
  }
  return {
    run: (req, caller) => holding(req, () => executor.run(req), caller),
    start: (req) => executor.start(req),
    foreground: holding,
  };
}
