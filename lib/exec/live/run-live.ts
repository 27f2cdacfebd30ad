/**
 * A command of a live session (keep_alive: true; docs/live-sessions.md): it runs in the session's
 * live sandbox, starting one when there is none (or it was lost). The call takes the session's turn
 * (one command at a time; BUSY past the wait), starts a live runner when needed (a concurrent_runs
 * slot for its life, a live sync token, an asynchronous start), hands its RunRequest, built exactly as
 * a fresh run's, to the coordinator, and waits for the answer. A runner lost under the command is
 * replaced once, transparently: the command runs again in a new sandbox and the output says what was
 * lost. A call of the session without keep_alive joins a sandbox the session holds and never starts
 * one (joinLive). Bundles for Workers.
 */
import { ToolError } from "../../shared/errors.js";
import { keyQuotaClaim, mintSyncToken, sign, workspaceClaims } from "../../sync/token.js";
import { RUN_MARGIN_MS } from "../../sync/run-records.js";
import { runCaller, type ExecCall } from "../call.js";
import { acquireSlot, concurrentRunsRefused } from "../limited.js";
import { unwrapExecResponse } from "../response.js";
import type { Executor, RunRequest, RunResult, ShellKeep, ShellRequest } from "../types.js";
import type { SessionShell } from "../shell-session.js";
import { markLive } from "./markers.js";
import { accountEnds, liveKeyClaim, liveLeaseMs, liveLifeMs, liveSessionId, type LiveService } from "./service.js";
import type { LiveKey, RunAnswer } from "./types.js";
import { lossNote, REASONS } from "./loss-note.js";
import { forgottenNote, IDLE_KEPT_NOTE, startedNote } from "./keep-alive.js";
import type { Limits } from "../../limits/fields.js";
import type { HmacKeys } from "../../shared/hmac-keys.js";

/** A call that asks for a live sandbox where the deployment has none (no coordinator): `what` is how it asked. */
export const liveOff = (what: string) => new ToolError("UNAVAILABLE", `Live sandboxes (${what}) are not enabled on this server: every command runs in a fresh sandbox. Call without ${what}.`);
/** A keep_alive call: its key (and the key's own limits) count its sandbox's concurrent_runs slot. */
export type LiveCall = ExecCall & { auth: { key_id?: string; limits?: Limits; key_expires_at?: string } };

/** A live command's answer and what the model is told about the sandbox (notes end with a newline, or are ""). */
export interface LiveRun {
  result: RunResult;
  notes: string;
  /** This call started the sandbox it ran in. */
  started: boolean;
  /** A loss the coordinator knew of was told in `notes` (else a start beside the hint tells FORGOTTEN_LOSS: forgottenNote). */
  lossTold: boolean;
  /** About the saved shell read for it ("" unless it expired), and what saving its state says ("" when none). */
  shellNote: string;
  shellNotes: string;
}


/**
 * What a live sandbox is started with that a later call must share to run in it: network access, the
 * tenant's web domain lists its egress proxy enforces (a policy changed since replaces the sandbox at
 * the session's next command, so a command never runs under lists the tenant has changed), and
 * the egress secrets (names, hosts, headers, and each value as an HMAC under the deployment's sync
 * secret: never the value, nor a digest one could guess it from), and the instance of the workspace
 * (`instance`: its record's created_at), and the starting API key (`keyId`: its polls check that key
 * alone, its life ends at that key's expiry). Another key gets a sandbox of its own (the current one is
 * replaced): what it leaves running never outlives its own revocation or expiry in another's; a
 * rotated secret's value replaces the sandbox whose egress proxy holds the old one; a workspace deleted
 * and made again under its id never runs in the old one's sandbox, whose token is refused there too.
 * The key id is the fourth item: session-records.ts sandboxKeyId reads it (a loss is told to its key).
 */
export async function sandboxOf(req: RunRequest, syncSecret: string, instance: string | undefined, keyId: string | undefined, keys: HmacKeys | undefined): Promise<string> {
  const secrets = await Promise.all((req.egress_secrets ?? []).map(async (s) => [s.name, s.host, s.header, await sign(syncSecret, `live-sandbox-secret\n${s.value}`, keys)]));
  const domains = req.egress_domains ? [req.egress_domains.allowed_domains?.toSorted() ?? null, req.egress_domains.blocked_domains?.toSorted() ?? []] : null;
  return JSON.stringify([req.network === true, secrets.sort(), instance ?? null, keyId ?? "", ...(domains ? [domains] : [])]);
}

/** What of a call's run request its live sandbox's start carries: the command's access to the network, all of it (the egress proxy takes it at the start). */
const egressAccess = ({ network, egress_secrets, egress_domains }: RunRequest): Partial<RunRequest> => ({
  ...(network !== undefined ? { network } : {}), ...(egress_secrets ? { egress_secrets } : {}), ...(egress_domains ? { egress_domains } : {}),
});

/** How long a call may hold its session's turn before handing its command over (a start, its slot, its token). */
const TURN_TO_RUN_MS = 120_000;

/**
 * The session's turn is another call's: the coordinator's retry_after_s is when that command's timeout ends it at
 * the latest (up to 60 s), while most commands end in seconds and a retry waits for the turn itself (busy_wait_ms):
 * a few seconds is the better hint, as for concurrent_runs (limited.ts).
 */
const BUSY_RETRY_S = 5;
const busy = (latest: number, session: string, retry = Math.max(1, Math.min(latest, BUSY_RETRY_S))) =>
  new ToolError("BUSY", `Another command of session ${session} is still running in its live sandbox (one at a time). Retry in ${retry} s, or use another session (X-Session-Id) for work in parallel.`, { retry_after: retry, session });

/**
 * The session's saved shell, as a live command uses it: read only when the command needs it (a
 * runner's first command, a restart), saved while the call holds the session's turn.
 */
export interface LiveShellUse {
  keep: ShellKeep;
  load(): Promise<SessionShell>;
  /** Saves what the answer reports (`loaded`: the shell read for it, null when none was); the notes for the model. */
  save(r: RunResult, loaded: ShellRequest | null): Promise<string>;
}

/**
 * Runs `req` in the session's live sandbox (see the module comment). The usual call is one
 * coordinator request (call.ts): the session's runner takes the command without its saved shell
 * (the live shell holds it). Else the turn is taken and the call goes on: the saved shell read,
 * a runner started when there is none, the command run, the turn given back.
 */
export async function runLive(ctx: LiveCall, executor: Executor, req: RunRequest, idleMs: number, shell?: LiveShellUse, idleAsked = false): Promise<LiveRun> {
  const r = await live(ctx, executor, req, idleMs, shell, false);
  if ("declined" in r) throw new Error("a keep_alive call was declined"); // never: only a join is
  // idle_timeout_s is a start's: one sent to a running sandbox changes nothing, and the model is told so (never dropped unsaid).
  return idleAsked && !r.started ? { ...r, notes: r.notes + IDLE_KEPT_NOTE } : r;
}

/** A call without keep_alive that found no live sandbox to run in: what the model is told ("" or lines ending with a newline); `gone`: the session has none now. */
export interface LiveDeclined {
  declined: string;
  gone: boolean;
}

export const FRESH_NOTE = "[this call ran in a fresh sandbox: a call without keep_alive never starts a live one (keep_alive: true does)]\n";
const OTHER_ACCESS_NOTE = "[this session's live sandbox was started by another API key or with other network access, web domain lists or secrets than this call has: it was left alone, and this call ran in a fresh sandbox (the live sandbox's processes, /tmp and HOME are not seen here)]\n";

/**
 * A call of a named session without keep_alive whose session may hold a live sandbox (docs/live-sessions.md,
 * "Later calls"): runs in it as a keep_alive call would, but never starts one. Declined (run it
 * fresh, with the notes) when the session has none (its loss told, if untold), when its sandbox was
 * started with other access, or when the sandbox is lost under the command (the new one the
 * coordinator made for it is ended unstarted: nobody asked for it).
 */
export async function joinLive(ctx: LiveCall, executor: Executor, req: RunRequest, shell?: LiveShellUse): Promise<LiveRun | LiveDeclined> {
  const r = await live(ctx, executor, req, 0, shell, true);
  if ("declined" in r && r.gone) ctx.deps.live?.joined.forget(liveSessionId({ tenant: ctx.ws.tenant, workspace: ctx.ws.id, session: ctx.session }));
  return r;
}

async function live(ctx: LiveCall, executor: Executor, req: RunRequest, idleMs: number, shell: LiveShellUse | undefined, join: boolean): Promise<LiveRun | LiveDeclined> {
  const svc = ctx.deps.live;
  if (!svc) throw liveOff("keep_alive");
  const key: LiveKey = { tenant: ctx.ws.tenant, workspace: ctx.ws.id, session: ctx.session };
  const account = (ends: Parameters<typeof accountEnds>[2]) => (ends.length ? accountEnds(svc, key, ends, ctx.waitUntil) : Promise.resolve());
  // The turn, until the command is handed over (then the coordinator bounds it by the command's timeout):
  // a call whose isolate died holds its session no longer than this.
  const first = await svc.coordinator.call(key, shell ? { ...req, shell: { keep: shell.keep } } : req, {
    wait_ms: svc.busy_wait_ms, turn_ms: TURN_TO_RUN_MS, sandbox: await sandboxOf(req, ctx.deps.syncSecret!, ctx.ws.instance, ctx.auth.key_id, ctx.deps.hmacKeys), timeout_ms: req.timeout_ms, ...(shell ? { stateless: true } : {}), ...(join ? { join: true } : {}),
  });
  let loaded = null as SessionShell | null; // set by withShell (a closure: not narrowed to null)
  const withShell = async (): Promise<RunRequest> => {
    if (!shell) return req;
    loaded ??= await shell.load();
    return { ...req, shell: loaded.request };
  };
  let a: RunAnswer | null = null;
  let turn: string;
  let released = false;
  let notes = "";
  let lossTold = false; // a loss the coordinator knew of was told (else a start beside the hint tells FORGOTTEN_LOSS)
  let start: string | undefined;
  if ("begun" in first) {
    const b = first.begun;
    await account(b.ends);
    if ("busy" in b) throw busy(b.busy.retry_after_s, ctx.session);
    if ("none" in b) {
      const n = b.none;
      if (n.other_access) return { declined: (n.lost ? lossNote(n.lost) : "") + OTHER_ACCESS_NOTE, gone: false };
      return { declined: n.lost ? lossNote(n.lost) + FRESH_NOTE : "", gone: true };
    }
    turn = b.turn;
    notes = b.lost ? lossNote(b.lost) : "";
    lossTold = !!b.lost;
    start = "start" in b ? b.start.generation : undefined;
  } else ({ ran: a, turn, released } = first);
  let started = false;
  try {
    for (let attempt = 0; ; attempt++) {
      if (!a) {
        let lease: string | undefined;
        if (start) {
          lease = await startRunner(ctx, executor, svc, key, req, start, idleMs);
          notes += startedNote(idleMs);
          started = true;
        }
        a = await svc.coordinator.run(key, turn, await withShell(), { timeout_ms: req.timeout_ms, ...(lease ? { lease } : {}) }).catch(async (e: unknown) => {
          // Refused (a request past the coordinator's bound) or unreachable: the runner this call just started would idle, billed, until its idle timeout.
          if (start) {
            await abandonRunner(svc, key, ctx.waitUntil);
            if (lease && svc.limits) await svc.limits.releaseRun(key.tenant, lease).catch(() => {}); // the run that would have kept it with the generation was refused
          }
          throw e;
        });
      }
      await account(a.ends);
      if ("response" in a) {
        svc.joined.set(liveSessionId(key), true);
        const result = unwrapExecResponse<RunResult>(a.response);
        // Saved before the turn is given back: the session's next command finds it (and a later save never lands first).
        const shellNotes = shell ? await shell.save(result, loaded?.request ?? null) : "";
        return { result, notes: forgottenNote({ started, lossTold }, loaded?.live === true) + notes, started, lossTold, shellNote: loaded?.note ?? "", shellNotes };
      }
      if ("unavailable" in a && join) return { declined: "[this session's live sandbox never started (its runner did not come): this call ran in a fresh sandbox]\n", gone: true };
      if ("unavailable" in a) {
        throw new ToolError("UNAVAILABLE", `The live sandbox did not start within ${Math.round(a.unavailable.waited_ms / 1000)} s; nothing ran. Retry; if it keeps happening, call without keep_alive (a fresh sandbox per call) and tell the operator (the runner's logs say why).`, { session: ctx.session });
      }
      if ("refused" in a) throw busy(1, ctx.session); // the turn ran out (the call took longer than its own bound): the session belongs to the next call
      if (join) {
        // Nobody asked for a new sandbox: the one made for the rerun is ended unstarted (it never ran: nothing to account but its end).
        await account((await svc.coordinator.end(key, "crashed").catch(() => ({ ends: [] }))).ends);
        return { declined: lossNote(a.lost) + (a.interrupted ? "[the command was interrupted and ran again from the start in a fresh sandbox: a call without keep_alive never starts a live one (keep_alive: true does)]\n" : FRESH_NOTE), gone: true };
      }
      if (attempt >= 1) {
        throw new ToolError("UNAVAILABLE", `The live sandbox was lost twice in a row under this command (${REASONS[a.lost.reason]}); files are safe. Retry, or call without keep_alive.`, { session: ctx.session });
      }
      notes += lossNote(a.lost, a.interrupted);
      lossTold = true;
      start = a.start.generation;
      a = null;
    }
  } finally {
    if (!released) await svc.coordinator.release(key, turn).catch(() => {});
  }
}

/**
 * Starts a live runner for `generation`: a concurrent_runs slot for its life (over the limit: the
 * call is refused as a run is), a live token (its claims name the session and generation), and an
 * asynchronous start with no command of its own. Answers the slot's lease. On failure the generation
 * is ended at once (nothing was lost: it never ran).
 */
/** Ends the runner a call started that will run nothing (nothing was lost: it never ran a command), and accounts for it. */
const abandonRunner = async (svc: LiveService, key: LiveKey, later: ExecCall["waitUntil"]) => accountEnds(svc, key, (await svc.coordinator.end(key, "crashed").catch(() => ({ ends: [] }))).ends, later);

async function startRunner(ctx: LiveCall, executor: Executor, svc: LiveService, key: LiveKey, req: RunRequest, generation: string, idleMs: number): Promise<string | undefined> {
  const deps = ctx.deps;
  const abandon = () => abandonRunner(svc, key, ctx.waitUntil);
  let lease: string | undefined;
  if (svc.limits) {
    // Counted against the starting call's key as well as the tenant; the lease names this generation as its holder (limited.ts acquireSlot).
    const caller = runCaller(ctx);
    const d = await acquireSlot(svc.limits, key.tenant, caller, liveLeaseMs(svc.max_life_ms), { holder: { workspace: key.workspace, session: key.session, generation }, live: svc, later: ctx.waitUntil }).catch((e: unknown) => {
      console.error("limits: the tenant's limits object did not answer; the live sandbox goes on uncounted", e instanceof Error ? e.message : String(e));
      return null;
    });
    if (d && !d.ok) {
      await abandon();
      throw concurrentRunsRefused(d);
    }
    if (d) lease = d.lease;
  }
  const lifeMs = liveLifeMs(svc.max_life_ms, ctx.auth.key_expires_at);
  let marked: Promise<void> | undefined;
  try {
    const token = await mintSyncToken(deps.syncSecret!, { ...workspaceClaims(ctx.ws), r: `live_${generation}`, l: { s: key.session, g: generation, ...liveKeyClaim(ctx.auth.key_id) }, ...keyQuotaClaim(ctx.auth) }, Math.ceil((lifeMs + RUN_MARGIN_MS) / 1000), { keys: deps.hmacKeys });
    const liveReq: RunRequest = {
      version: 1, idempotency_key: `live_${generation}`, tenant: key.tenant, workspace: key.workspace, command: "",
      timeout_ms: lifeMs, sync: { url: req.sync.url, token },
      ...egressAccess(req),
      ...(req.git ? { git: req.git } : {}), ...(req.limits ? { limits: req.limits } : {}), ...(req.traceparent ? { traceparent: req.traceparent } : {}),
      live: { generation, idle_ms: idleMs, max_life_ms: lifeMs },
    };
    // Its marker (markers.ts) beside the start, not after it: a workspace's delete finds it from here on.
    marked = svc.markers ? markLive(svc.markers, key, generation) : undefined;
    await executor.start(liveReq);
  } catch (e) {
    await marked; // landed before the end's accounting deletes it
    await abandon();
    if (lease && svc.limits) await svc.limits.releaseRun(key.tenant, lease).catch(() => {});
    throw new ToolError("UNAVAILABLE", `The live sandbox could not be started (${e instanceof Error ? e.message : String(e)}); nothing ran. Retry, or call without keep_alive.`, { session: key.session });
  }
  await Promise.all([marked, svc.events?.started(key, { generation, key_id: ctx.auth.key_id ?? "", idle_ms: idleMs, max_life_ms: lifeMs }, ctx.waitUntil).catch(() => {})]);
  return lease;
}

/** Ends the session's live sandbox, if it has one (a restart of the shell: bash restart: true); whether one was ended. */
export async function endLive(ctx: ExecCall): Promise<boolean> {
  const svc = ctx.deps.live;
  if (!svc) return false;
  const key: LiveKey = { tenant: ctx.ws.tenant, workspace: ctx.ws.id, session: ctx.session };
  svc.joined.forget(liveSessionId(key));
  const { ended, ends } = await svc.coordinator.end(key, "deleted");
  if (ends.length) await accountEnds(svc, key, ends, ctx.waitUntil);
  return !!ended;
}
