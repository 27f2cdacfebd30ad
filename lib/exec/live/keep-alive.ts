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
  keep_alive: z.boolean().optional().describe(`Run in this session's live sandbox (needs X-Session-Id): processes, shell state, /tmp and HOME persist to the session's next calls until ${IDLE_DEFAULT_S} s without a command (idle_timeout_s) or ${MAX_LIFE_MIN} min in all; files never depend on it (default: false: a fresh sandbox per call)`),
  idle_timeout_s: z.number().int().min(10).max(IDLE_MAX_S).optional().describe(`With keep_alive, when a new live sandbox is started: end it after this many seconds without a command (default: ${IDLE_DEFAULT_S}, max ${IDLE_MAX_S})`),
};

/** The description's lines about keep_alive (bash and run_code). */
export const KEEP_ALIVE_LINES = `- keep_alive: true (needs the X-Session-Id header) runs the command in the session's live sandbox, started by the first such call: the same shell process (cwd, all variables, functions, aliases), HOME, /tmp, and processes left running (\`server &\`, listening on the sandbox's loopback) persist to the session's next keep_alive calls. It ends after idle_timeout_s without a command (default ${IDLE_DEFAULT_S} s, max ${IDLE_MAX_S}), after ${MAX_LIFE_MIN} min in all, or on DELETE /v1/workspaces/{ws}/sessions/{session}/sandbox; the next call then starts a new one and its output says what was lost. Files never depend on it: every call writes its changes back before it answers. One command at a time per session (BUSY with Retry-After when another still runs). Other sessions never see its processes or /tmp.`;

/** The idle timeout of a live sandbox this call may start, ms; refuses keep_alive without a named session. */
export function liveIdleMs(args: { keep_alive?: boolean; idle_timeout_s?: number }, session: string): number {
  if (session === UNNAMED_SESSION) {
    throw new ToolError("INVALID_ARGUMENT", "keep_alive needs a session: send the header X-Session-Id with an id of your conversation (any name but \"default\", which every call without the header shares). Or call without keep_alive for a fresh sandbox.", { field: "keep_alive", header: "X-Session-Id" });
  }
  return (args.idle_timeout_s ?? IDLE_DEFAULT_S) * 1000;
}
