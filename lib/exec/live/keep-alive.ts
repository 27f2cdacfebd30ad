/**
 * keep_alive, as bash and run_code take it (docs/live-sessions.md): the arguments, what the model is
 * told, and the checks before a live run. Bundles for Workers.
 */
import { z } from "@hono/zod-openapi";
import { ToolError } from "../../shared/errors.js";
import { LIVE_IDLE_MS_DEFAULT, LIVE_IDLE_MS_MAX, LIVE_MAX_LIFE_MS } from "../../sync/live-types.js";

const IDLE_DEFAULT_S = LIVE_IDLE_MS_DEFAULT / 1000;
const IDLE_MAX_S = LIVE_IDLE_MS_MAX / 1000;
const MAX_LIFE_MIN = Math.round(LIVE_MAX_LIFE_MS / 60_000);

/** The session every call without X-Session-Id shares: never given a live sandbox (unrelated agents would share its processes). */
export const UNNAMED_SESSION = "default";

export const keepAliveFields = {
  keep_alive: z.boolean().optional().describe(`true: run in this session's live sandbox (needs X-Session-Id), starting one when it has none: processes, shell state, /tmp and HOME persist to the session's next calls until ${IDLE_DEFAULT_S} s without a command (idle_timeout_s) or ${MAX_LIFE_MIN} min in all; files never depend on it. Omitted (default): in the session's live sandbox if it holds one, else a fresh sandbox (never starts one). false: a fresh sandbox, the session's live one left alone`),
  idle_timeout_s: z.number().int().min(10).max(IDLE_MAX_S).optional().describe(`With keep_alive, when a new live sandbox is started: end it after this many seconds without a command (default: ${IDLE_DEFAULT_S}, max ${IDLE_MAX_S})`),
};

/** The arguments keepAliveFields adds: a deployment without live sessions takes neither (Tool.withoutLive). */
export const KEEP_ALIVE_ARGS = Object.keys(keepAliveFields) as readonly (keyof typeof keepAliveFields)[];

/** The description's lines about keep_alive (bash and run_code). */
export const KEEP_ALIVE_LINES = `- keep_alive: true (needs the X-Session-Id header) runs the command in the session's live sandbox, started by the first such call: the same shell process (cwd, all variables, functions, aliases), HOME, /tmp, and processes left running (\`server &\`, listening on the sandbox's loopback) persist to the session's next calls: later calls without keep_alive run in it too (keep_alive: false runs one in a fresh sandbox and leaves the live one alone; the output says so). It ends after idle_timeout_s without a command (default ${IDLE_DEFAULT_S} s, max ${IDLE_MAX_S}), after ${MAX_LIFE_MIN} min in all, or on DELETE /v1/workspaces/{ws}/sessions/{session}/sandbox; the next call's output says what was lost, and a keep_alive: true call starts a new one (a call without keep_alive then runs fresh). Files never depend on it: every call writes its changes back before it answers. One command at a time per session (BUSY with Retry-After when another still runs). Other sessions never see its processes or /tmp.`;

/** What the call that starts a live sandbox is told. */
export const startedNote = (idleMs: number) =>
  `[live sandbox started for this session: processes, shell state, /tmp and HOME persist between its calls until ${Math.round(idleMs / 1000)} s without a command (or DELETE .../sandbox); files never depend on it]\n`;

/**
 * The saved shell's hint says the session holds a live sandbox, and its coordinator knows of none and
 * of no loss to tell: it forgot it (a restart or deploy reset it). Said by the call that finds out,
 * with or without keep_alive (run-joining.ts, run-live.ts), not left for the model to wonder.
 */
export const FORGOTTEN_LOSS = "[live sandbox lost: the session's live sandbox is no longer there, and what it held is not known (the service that coordinates it was restarted or redeployed). Gone with it: its shell state (variables, functions, cwd beyond the saved one), its processes, /tmp and HOME. Files are safe: every call's changes were written back to the workspace when it answered.]\n";

/**
 * The one builder of FORGOTTEN_LOSS for a call that started a sandbox: said when the saved shell's hint
 * said the session held one and its coordinator told no loss. bash reads the hint in the shell it loads
 * (run-live.ts); run_code in the saved shell its start sets the hint on (functions/run_code.ts, setLiveHint).
 */
export const forgottenNote = (run: { started: boolean; lossTold: boolean }, hinted: boolean): string => (run.started && !run.lossTold && hinted ? FORGOTTEN_LOSS : "");

/** What a keep_alive call that sent idle_timeout_s to a sandbox already running is told (it changes nothing). */
export const IDLE_KEPT_NOTE = "[idle_timeout_s applies when a live sandbox starts: this call ran in the session's running one, whose idle timeout is unchanged (DELETE .../sandbox, then a keep_alive call with idle_timeout_s, starts one with yours)]\n";

/**
 * What a call that sent idle_timeout_s without keep_alive: true is told: the field is a live
 * sandbox's start's (keep_alive: true), so it was not used (the call ran fresh, or in the session's
 * running sandbox, whose idle timeout is unchanged). "" when it was not sent or was a start's.
 */
export function idleUnusedNote(args: { keep_alive?: boolean; idle_timeout_s?: number }): string {
  return args.idle_timeout_s !== undefined && args.keep_alive !== true ? "[idle_timeout_s was not used: it applies with keep_alive: true, when a live sandbox starts]\n" : "";
}

/** The idle timeout of a live sandbox this call may start, ms; refuses keep_alive without a named session. */
export function liveIdleMs(args: { keep_alive?: boolean; idle_timeout_s?: number }, session: string): number {
  if (session === UNNAMED_SESSION) {
    throw new ToolError("INVALID_ARGUMENT", "keep_alive needs a session: send the header X-Session-Id with an id of your conversation (any name but \"default\", which every call without the header shares). Or call without keep_alive for a fresh sandbox.", { field: "keep_alive", header: "X-Session-Id" });
  }
  return (args.idle_timeout_s ?? IDLE_DEFAULT_S) * 1000;
}

/**
 * How a bash or run_code call uses its session's live sandbox: "start" (keep_alive: true: in it,
 * starting one when there is none), "join" (keep_alive omitted, a named session: in the one the
 * session holds, if it holds one, never starting one), "fresh" (keep_alive: false in a named session:
 * a fresh sandbox, a live one left alone and the output says so), "none" (the unnamed session, a
 * background run, a server without live sandboxes: no live sandbox is looked for). Refuses keep_alive: true without a named session.
 * `backgroundUnlessLive` (ToolContext's): run_in_background is a task's, not the caller's: "join" as without it (a fresh run stays in
 * the background; the request is built as a background run's, whose token's billing claim is read only where a background run's
 * result is stored, which a live command's never is).
 */
export type LiveMode = "start" | "join" | "fresh" | "none";

export function liveMode(args: { keep_alive?: boolean; idle_timeout_s?: number; run_in_background?: boolean }, session: string, enabled: boolean, backgroundUnlessLive = false): LiveMode {
  if (args.run_in_background && !backgroundUnlessLive) return "none";
  if (args.keep_alive === true) {
    liveIdleMs(args, session);
    return "start";
  }
  if (session === UNNAMED_SESSION || !enabled) return "none";
  return args.keep_alive === false ? "fresh" : "join";
}
