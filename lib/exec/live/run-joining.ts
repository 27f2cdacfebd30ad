/**
 * A bash or run_code call of a session without keep_alive: true (docs/live-sessions.md, "Later
 * calls"), one sequence for both tools. keep_alive omitted: in the session's live sandbox when it
 * holds one (asked at once when this isolate ran a command of it lately, else when the saved
 * shell's hint says so), never starting one; declined, the call runs fresh with the note and the
 * hint is known gone. keep_alive: false beside a hinted sandbox: fresh, the coordinator asked beside
 * the run whether the sandbox is there to be left alone. What differs between the tools is theirs
 * to give (JoinSteps): how the hint is read (bash with the shell its fresh run starts from, run_code
 * alone) and saved (bash with its shell, run_code on its own), the live shell, the fresh run. Bundles for Workers.
 */
import type { ExecCall } from "../call.js";
import type { Executor, RunRequest } from "../types.js";
import { FORGOTTEN_LOSS, type LiveMode } from "./keep-alive.js";
import { FRESH_NOTE, joinLive, type LiveCall, type LiveDeclined, type LiveRun, type LiveShellUse } from "./run-live.js";
import { accountEnds, liveSessionId } from "./service.js";
import type { LiveKey } from "./types.js";

/** What a call without keep_alive: true gives runJoining; `H` is what it reads of the session (`live`: the hint). */
export interface JoinSteps<H extends { live: boolean }, R> {
  /** join (keep_alive omitted, a named session), fresh (keep_alive: false), none (no live sandbox looked for: liveMode). */
  mode: Exclude<LiveMode, "start">;
  /** The run's request as a fresh run's, without the session's saved state (built beside the read). */
  req: Promise<RunRequest>;
  /**
   * Reads what the call needs of the session (one storage GET): `live`, the hint. `hintWanted` false
   * when the hint decides nothing (mode none, or a join this isolate remembered was declined): a tool
   * that reads the session only for the hint may answer `live: false` without reading.
   */
  load(hintWanted: boolean): Promise<H>;
  /** The session's shell as a live command uses it (bash; run_code keeps none): `loaded`, the one read before the join, if it was. */
  shell?(loaded?: H): LiveShellUse;
  /** Runs the call fresh (or starts it in the background), from what `load` read. */
  fresh(req: RunRequest, loaded: H): Promise<R>;
  /**
   * After the fresh run: saves that the session holds no live sandbox (`gone`, the hint to clear) or
   * keeps the hint as it was; what it answers is the tool's (bash saves its shell here).
   */
  saveHint(fresh: R, loaded: H, gone: boolean): Promise<string>;
}

/** Ran in the session's live sandbox, or fresh: `notes` what the model is told first, `loaded` what load read, `saved` what saveHint answered. */
export type Joined<H, R> = { live: LiveRun } | { fresh: R; loaded: H; notes: string; saved: string };

/** The sequence (see the module comment): at most one join, one read of the session, the fresh run, the hint saved. */
export async function runJoining<H extends { live: boolean }, R>(ctx: LiveCall, executor: Executor, s: JoinSteps<H, R>): Promise<Joined<H, R>> {
  let declined: LiveDeclined | null = null;
  if (s.mode === "join" && liveRemembered(ctx)) {
    // Asked at once, with no read before it: the coordinator decides.
    const j = await joinLive(ctx, executor, await s.req, s.shell?.());
    if (!("declined" in j)) return { live: j };
    declined = j;
  }
  const [loaded, req] = await Promise.all([s.load(s.mode !== "none" && !declined), s.req]);
  if (s.mode === "join" && loaded.live && !declined) {
    const j = await joinLive(ctx, executor, req, s.shell?.(loaded));
    if (!("declined" in j)) return { live: j };
    // The hint says the session holds a sandbox, its coordinator knows of none and of no loss to tell:
    // the coordinator forgot it (a restart or deploy reset it). The model is told, not left to wonder.
    declined = j.gone && !j.declined ? { declined: FORGOTTEN_NOTE, gone: true } : j;
  }
  let notes = declined?.declined ?? "";
  let gone = declined?.gone ?? false;
  // keep_alive: false beside a hinted sandbox: the coordinator asked, beside the run, whether it is there to be left alone.
  const leftAlone = s.mode === "fresh" && loaded.live ? liveLeftAlone(ctx).catch(() => ({ held: true, note: "" })) : null;
  const fresh = await s.fresh(req, loaded);
  const left = await leftAlone;
  if (left) {
    notes = left.note + notes;
    gone = !left.held;
  }
  // The hint is kept while the session holds its sandbox, and cleared once it is known gone.
  return { fresh, loaded, notes, saved: await s.saveHint(fresh, loaded, gone) };
}

/** This isolate ran a live command of the session lately (LiveService.joined): a call without keep_alive joins at once. */
export const liveRemembered = (ctx: ExecCall): boolean =>
  ctx.deps.live?.joined.peek(liveSessionId({ tenant: ctx.ws.tenant, workspace: ctx.ws.id, session: ctx.session })) === true;

const FORGOTTEN_NOTE = FORGOTTEN_LOSS + FRESH_NOTE;

const LEFT_ALONE_NOTE = "[keep_alive: false: this call ran in a fresh sandbox; the session's live sandbox was left alone (its processes, /tmp and HOME are not seen here; calls without keep_alive run in it)]\n";

/**
 * keep_alive: false in a session whose saved shell hints at a live sandbox: asks its coordinator
 * (one request, beside the fresh run) whether it holds one; the note for the model when it does.
 */
async function liveLeftAlone(ctx: ExecCall): Promise<{ held: boolean; note: string }> {
  const svc = ctx.deps.live;
  if (!svc) return { held: false, note: "" };
  const key: LiveKey = { tenant: ctx.ws.tenant, workspace: ctx.ws.id, session: ctx.session };
  const { sandbox, ends } = await svc.coordinator.status(key);
  if (ends.length) await accountEnds(svc, key, ends, ctx.waitUntil);
  return sandbox ? { held: true, note: LEFT_ALONE_NOTE } : { held: false, note: "" };
}
