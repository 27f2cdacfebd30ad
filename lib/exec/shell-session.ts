/**
 * The shell of a session (X-Session-Id), replayed from call to call: the state its last command
 * ended in (working directory; for Anthropic's bash also exported variables and functions), kept
 * beside the workspace's internal objects (not in its files: never exported, diffed or
 * checkpointed) under the tenant, workspace and session of the call. Storage, not KV: the next
 * call of the session must see it at once. One small object per session (at most
 * MAX_SHELL_STATE_BYTES of variables and functions); it goes with the workspace. Bundles for Workers.
 */
import { shellKey } from "../layout/paths.js";
import type { ExecCall } from "./call.js";
import type { RunResult, ShellKeep, ShellRequest, ShellState } from "./types.js";

type Ctx = Pick<ExecCall, "deps" | "ws" | "session">;
const keyOf = (ctx: Ctx) => shellKey(ctx.ws.tenant, ctx.ws.id, ctx.session);

/** The session's saved shell, or undefined (none yet, or restarted; an unreadable one counts as none). */
async function loadShell(ctx: Ctx): Promise<ShellState | undefined> {
  const got = await ctx.deps.storage.get(keyOf(ctx));
  if (!got) return undefined;
  try {
    const s = JSON.parse(await new Response(got.body).text()) as ShellState;
    return s && typeof s.cwd === "string" ? s : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The shell request of a command of this session: its saved state to start from, unless
 * `restart` (the saved state is deleted first: a restart holds even when the command fails).
 */
export async function shellRequest(ctx: Ctx, keep: ShellKeep, restart: boolean): Promise<ShellRequest> {
  if (restart) {
    await ctx.deps.storage.delete([keyOf(ctx)]);
    return { keep };
  }
  const state = await loadShell(ctx);
  if (!state) return { keep };
  // A session that switches from Anthropic's bash to the native one keeps only what the native one keeps.
  return { keep, state: keep === "all" ? state : { cwd: state.cwd } };
}

/** Saves the state the command's shell ended in (nothing when it saved none: the state stays as it was); returns the notes for the model. */
export async function saveShell(ctx: Ctx, r: Pick<RunResult, "shell">): Promise<string> {
  if (!r.shell) return "";
  await ctx.deps.storage.put(keyOf(ctx), JSON.stringify(r.shell.state), { contentType: "application/json" });
  return r.shell.notes.map((n) => `\n${n}`).join("");
}
