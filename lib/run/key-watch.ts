/**
 * A call never outlives its key: while a call (or a door's wait) goes on, the key it runs with is
 * asked again every `keyWatchMs` (default KEY_WATCH_MS, the key cache's TTL: asking more often would
 * read the same cached answer) whether it still stands (deps.callerStands: not revoked; and its own
 * expiry). Once it does not, the call's signal aborts (a wait ends, a sandbox run is killed, as when
 * the client goes away; a command whose caller does not stream is killed too, by `keyGone`) and the call answers UNAUTHORIZED (`refused_by: "key_gone"`) instead of what
 * it found: a revoked key reads nothing more through a wait of minutes (bash_output, task_output,
 * pending_result, MCP tasks/result, GET .../pending/{id}?wait=). A call that lasted a whole interval
 * asks once more before it answers, so an answer that came between two asks does not slip out.
 * What the call did before stays (its call_id goes with the error, to undo it); a foreground command killed for it
 * (RunKilled) writes nothing back, and its refusal says so.
 *
 * Costs: nothing for a call shorter than one interval; otherwise one callerStands per interval and one
 * at its end (the key's record, cached per isolate: at most one KV read per key and isolate a TTL).
 */
import type { AuthInfo } from "../contract/caller.js";
import { RunKilled } from "../exec/runs.js";
import { ToolError } from "../shared/errors.js";
import type { RunDeps } from "./deps.js";

/** How often a call in progress asks whether its key still stands: the key cache's TTL (lib/api/app.ts). */
export const KEY_WATCH_MS = 5_000;

/**
 * The one refusal of a call (or a subagent's next call) whose key was revoked or expired while it went on. `killedRun`:
 * the call's foreground command was killed for it (RunKilled, lib/exec/runs.ts), so its changes were dropped, not
 * written back, but for a write-back already under way, which `details.call_id` (when given) undoes.
 */
export function keyGoneError(auth: Pick<AuthInfo, "key_id">, what: string, details: Record<string, unknown> = {}, killedRun = false): ToolError {
  const undo = typeof details.call_id === "string" ? `: POST /v1/workspaces/{ws}/undo {"call_id": "${details.call_id}"} puts it back` : "";
  const stopped = killedRun
    ? `so its command was killed and its file changes in the sandbox were dropped, not written back (only a write-back already under way when it was killed may have landed${undo})`
    : "so it stopped here; what it did so far stays";
  return new ToolError("UNAUTHORIZED", `The API key ${what} runs with (${auth.key_id}) was revoked or has expired since it started (for an OAuth token: the tenant no longer trusts its issuer), ${stopped}. Start it again with a valid key.`, { ...details, key_id: auth.key_id, refused_by: "key_gone" });
}

/** Whether the key still stands now: its own expiry, then the deps' answer (a failed look-up counts as standing: a KV hiccup stops no call). */
export async function keyStandsNow(deps: Pick<RunDeps, "callerStands">, auth: Pick<AuthInfo, "tenant" | "key_id" | "key_expires_at">): Promise<boolean> {
  if (auth.key_expires_at !== undefined && Date.parse(auth.key_expires_at) <= Date.now()) return false;
  if (!deps.callerStands) return true;
  return deps.callerStands(auth.tenant, auth.key_id).catch(() => true);
}

/** The call_id a call's outcome carries (a result's, or a failed call's details), for the refusal that replaces it. */
function callIdOf(outcome: unknown): string | undefined {
  const o = outcome as { call_id?: unknown; details?: { call_id?: unknown } } | null;
  const id = o instanceof ToolError ? o.details.call_id : o?.call_id;
  return typeof id === "string" ? id : undefined;
}

/**
 * Runs `run` with a signal that also aborts when the key stops standing (and, apart, `keyGone`: aborts
 * only then, the one that stops a command its caller does not follow: lib/exec/runs.ts runForeground);
 * its outcome, or the key_gone refusal (naming `what`, e.g. "this call") once the key is gone.
 */
export async function whileKeyStands<T>(deps: Pick<RunDeps, "callerStands" | "keyWatchMs">, auth: AuthInfo, what: string, signal: AbortSignal | undefined, run: (signal: AbortSignal | undefined, keyGone: AbortSignal) => Promise<T>): Promise<T> {
  const every = deps.keyWatchMs ?? KEY_WATCH_MS;
  const gone = new AbortController();
  const started = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let done = false;
  const tick = async () => {
    if (done) return;
    if (!(await keyStandsNow(deps, auth))) gone.abort();
    else if (!done) timer = setTimeout(tick, every);
  };
  timer = setTimeout(tick, every);
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await run(signal ? AbortSignal.any([signal, gone.signal]) : gone.signal, gone.signal) };
  } catch (error) {
    outcome = { ok: false, error };
  } finally {
    done = true;
    clearTimeout(timer);
  }
  const lasted = Date.now() - started >= every;
  // RunKilled: the call's command was killed for its key (here, or by its live sandbox's runner before this watch asked).
  const killedRun = !outcome.ok && outcome.error instanceof RunKilled;
  if (gone.signal.aborted || killedRun || (lasted && !(await keyStandsNow(deps, auth)))) {
    const callId = callIdOf(outcome.ok ? outcome.value : outcome.error);
    throw keyGoneError(auth, what, callId ? { call_id: callId } : {}, killedRun);
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
