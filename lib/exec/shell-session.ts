/**
 * The shell of a session (X-Session-Id), replayed from call to call: the state its last command
 * ended in (working directory; for Anthropic's bash also exported variables and functions), kept
 * beside the workspace's internal objects (not in its files: never exported, diffed or
 * checkpointed) under the tenant, workspace, API key (its id) and session of the call: another key
 * naming the same session starts from a shell of its own, never this one's. Storage, not KV: the next
 * call of the session must see it at once. One small object per session (at most
 * MAX_SHELL_STATE_BYTES of variables and functions); it goes with the workspace. Bundles for Workers.
 *
 * Bounded in time and count, as the output logs are (it may hold exported secrets): a state last
 * saved more than SHELL_STATE_DAYS ago is never applied (it is deleted when read, and the command
 * is told the shell was reset), and whenever a session saves a state it did not have, its key
 * keeps only the KEEP_SHELL_STATES most recently saved in the workspace (per key: one key's new
 * sessions never push another key's shells out), and the workspace none older than SHELL_STATE_DAYS.
 *
 * A shell saved at the first layout's path (x/shells/<session>.json, the workspace's, before 2026-12-02) is never applied
 * (it may be another key's): the session's next command that reads its shell is told it was discarded, and it is deleted
 * (said once); a restart deletes it with the session's own. Only a workspace made before FIRST_LAYOUT_ENDED can hold one.
 *
 * Storage per call: 1 GET before the run (in a workspace made before FIRST_LAYOUT_ENDED, 1 HEAD of the first layout's path
 * beside it), 1 PUT after it (a live sandbox's command: the GET (and HEAD) only on its first command, the PUT only when the
 * state changed: lib/exec/live/run-live.ts); + 1 DELETE when that HEAD found one; + 1 LIST of the workspace's states (and
 * 1 DELETE of what falls out) when the PUT makes a new state; + 1 DELETE when the GET found an expired one. A fresh
 * sandbox's command of a session with no saved state that ends in the root with nothing kept saves nothing (no PUT, no
 * LIST): no state means that shell. A live sandbox's saves carry the hint that the session holds one (SavedShell).
 */
import { keyShellsPrefix, legacyShellKey, shellKey, shellsPrefix } from "../layout/paths.js";
import type { ExecCall } from "./call.js";
import { listAll } from "../storage/list-all.js";
import type { RunResult, ShellKeep, ShellRequest, ShellState } from "./types.js";

/** Days a saved shell stays usable after its last save. */
export const SHELL_STATE_DAYS = 7;
/** Saved shells a key keeps in a workspace (the most recently saved). */
export const KEEP_SHELL_STATES = 50;
const DAY_MS = 86_400_000;

/** The call: its workspace, session and API key (the shell is the key's: every tool call's context names its key). */
type Ctx = Pick<ExecCall, "deps" | "ws" | "session"> & { auth: { readonly key_id: string } };
const keyOf = (ctx: Ctx) => shellKey(ctx.ws.tenant, ctx.ws.id, ctx.auth.key_id, ctx.session);
/** Where the session's shell lay before 2026-12-02 (the workspace's, whichever key saved it): never applied, it may be another key's. */
const legacyKeyOf = (ctx: Ctx) => legacyShellKey(ctx.ws.tenant, ctx.ws.id, ctx.session);
/** When shells became their key's (stop 57 landed): a workspace made since (its record's created_at, the call's `instance`) holds no shell at the first layout's path. */
export const FIRST_LAYOUT_ENDED = "2026-12-02T04:00:00.000Z";
/** Whether the session may hold a shell at the first layout's path (unknown age: it may). */
const mayHoldLegacy = (ctx: Ctx): boolean => ctx.ws.instance === undefined || ctx.ws.instance < FIRST_LAYOUT_ENDED;
const expired = (modified: Date, now: number) => modified.getTime() < now - SHELL_STATE_DAYS * DAY_MS;

/**
 * The saved object: the state, and `live_sandbox` when it was saved by a command of the session's
 * live sandbox (or the call that started one): the hint that later calls without keep_alive ask the
 * session's coordinator for it (docs/live-sessions.md, "Later calls"). Saved at T by a sandbox started
 * at S <= T, which ends by S + its maximum life: a hint older than the maximum life is stale for sure.
 */
type SavedShell = ShellState & { live_sandbox?: true };

interface Loaded {
  state: ShellState;
  /** The hint holds (saved with live_sandbox within the maximum life of a sandbox). */
  live: boolean;
}

/** The session's saved shell: none yet, restarted, or unreadable → undefined; saved too long ago → "expired" (and deleted, unless `keepExpired`). */
async function loadShell(ctx: Ctx, keepExpired = false): Promise<Loaded | "expired" | undefined> {
  const got = await ctx.deps.storage.get(keyOf(ctx));
  if (!got) return undefined;
  const now = Date.now();
  if (expired(got.modified, now)) {
    await got.body.cancel().catch(() => {});
    if (!keepExpired) await ctx.deps.storage.delete([keyOf(ctx)]);
    return "expired";
  }
  try {
    const { live_sandbox, ...state } = JSON.parse(await new Response(got.body).text()) as SavedShell;
    if (!state || typeof state.cwd !== "string") return undefined;
    const maxLife = ctx.deps.live?.max_life_ms;
    return { state, live: live_sandbox === true && maxLife !== undefined && got.modified.getTime() >= now - maxLife };
  } catch {
    return undefined;
  }
}

const putShell = (ctx: Ctx, state: ShellState, live: boolean) =>
  ctx.deps.storage.put(keyOf(ctx), JSON.stringify(live ? { ...state, live_sandbox: true } : state), { contentType: "application/json" });

/** The directory the session's last command ended in ("" = the root); undefined without a saved shell (or one too old). One GET; nothing deleted. */
export async function savedWorkingDirectory(ctx: Ctx): Promise<string | undefined> {
  const l = await loadShell(ctx, true);
  return typeof l === "object" ? l.state.cwd : undefined;
}

/** Whether the session's saved shell says it may hold a live sandbox (run_code's one read: it keeps no shell). */
export async function liveHinted(ctx: Ctx): Promise<boolean> {
  const l = await loadShell(ctx, true);
  return typeof l === "object" && l.live;
}

/**
 * Sets or clears the hint on the session's saved shell, keeping its state (a new session's is the
 * root): run_code's start of a live sandbox, and a hint found stale. Nothing when it already says so.
 * Answers the hint it found (run_code's start tells a forgotten sandbox by it: keep-alive.ts forgottenNote).
 */
export async function setLiveHint(ctx: Ctx, live: boolean): Promise<boolean> {
  const l = await loadShell(ctx, true);
  const was = typeof l === "object" && l.live;
  if (typeof l === "object" ? l.live === live : !live) return was;
  await putShell(ctx, typeof l === "object" ? l.state : { cwd: "" }, live);
  if (l === undefined) await pruneShells(ctx);
  return was;
}

/** What a command of this session starts from: its shell request, and a note for the model ("" unless the saved shell expired). */
export interface SessionShell {
  request: ShellRequest;
  note: string;
  /** The saved shell says the session may hold a live sandbox (the hint: ask its coordinator). */
  live: boolean;
}

/**
 * The shell request of a command of this session: its saved state to start from, unless
 * `restart` (the saved state is deleted first: a restart holds even when the command fails).
 * `leaveLive` (a restart with keep_alive: false, the OpenAI-compat shell's every command): the
 * session's live sandbox is left alone, so the hint that it holds one stays (the state goes back to
 * the root with it: 1 GET, then 1 PUT where there was a DELETE); the caller asks whether it is there.
 */
export async function shellRequest(ctx: Ctx, keep: ShellKeep, restart: boolean, leaveLive = false): Promise<SessionShell> {
  if (restart) {
    const hinted = leaveLive ? await loadShell(ctx, true) : undefined;
    if (typeof hinted === "object" && hinted.live) {
      await putShell(ctx, { cwd: "" }, true);
      return { request: { keep }, note: "", live: true };
    }
    await ctx.deps.storage.delete([keyOf(ctx), ...(mayHoldLegacy(ctx) ? [legacyKeyOf(ctx)] : [])]);
    return { request: { keep }, note: "", live: false };
  }
  // The first layout's shell is looked for beside the read (no round trip more), and deleted when found: told once.
  const [loaded, legacy] = await Promise.all([loadShell(ctx), mayHoldLegacy(ctx) ? ctx.deps.storage.head(legacyKeyOf(ctx)).catch(() => null) : null]);
  if (legacy) await ctx.deps.storage.delete([legacyKeyOf(ctx)]).catch(() => {});
  const what = keep === "all" ? "working directory, exported variables and functions" : "working directory";
  if (loaded === "expired") {
    return { request: { keep }, note: `[shell reset: this session's saved shell (${what}) was last saved more than ${SHELL_STATE_DAYS} days ago and was discarded; the command started in the workspace root]\n`, live: false };
  }
  if (!loaded) {
    const note = legacy ? `[shell reset: this session's saved shell (${what}) was saved before 2026-12-02, when a saved shell was the workspace's rather than its API key's, and was discarded (it may have been another key's); the command started in the workspace root]\n` : "";
    return { request: { keep }, note, live: false };
  }
  const { state, live } = loaded;
  // A session that switches from Anthropic's bash to the native one keeps only what the native one keeps.
  return { request: { keep, state: keep === "all" ? state : { cwd: state.cwd } }, note: "", live };
}

/**
 * Saves the state the command's shell ended in (nothing when it saved none, or when a live shell
 * ended in the state it reported last, `unchanged`: the state stays as it was); returns the notes
 * for the model. A session that had no saved state (`started.state` undefined) adds one: the
 * key's states are pruned to their bounds then. `started` null: the command ran without
 * reading the saved state (a live shell that holds it), which exists since that sandbox's first command.
 */
export async function saveShell(ctx: Ctx, r: Pick<RunResult, "shell">, started: ShellRequest | null, opts: { skipFresh?: boolean; live?: { now: boolean; before?: boolean } } = {}): Promise<string> {
  if (!r.shell) return "";
  // `live`: the hint the saved state carries (`now`: a live command's save; a fresh one's keeps what it found, `before`,
  // unless the coordinator said the session has no sandbox): a change of it is saved even when the state is the same.
  const live = opts.live?.now ?? false;
  const hintMoved = opts.live?.before !== undefined && opts.live.before !== live;
  // `skipFresh` (a command in a fresh sandbox, not a live one: a live shell's later saves count on a state saved by its first):
  // a session with no saved state whose command ended where a new shell starts (the root, nothing kept) has nothing to save,
  // no state reads as that very shell. So a workspace's first commands (`node -v`) write and list nothing here.
  if (hintMoved || (!r.shell.unchanged && !(opts.skipFresh && started && !started.state && isFreshShell(r.shell.state)))) {
    await putShell(ctx, r.shell.state, live);
    if (started && !started.state) await pruneShells(ctx);
  }
  return r.shell.notes.map((n) => `\n${n}`).join("");
}

/** The state a session without a saved one starts in: the workspace root, no variables, no functions. */
const isFreshShell = (s: ShellState): boolean => s.cwd === "" && (s.env === undefined || Object.keys(s.env).length === 0) && !s.functions;

/**
 * Deletes the key's saved shells of the workspace beyond KEEP_SHELL_STATES (the least recently saved first), and every
 * saved shell of the workspace older than SHELL_STATE_DAYS, whoever saved it (never applied again: a revoked key's, the
 * first layout's x/shells/<session>.json); never this session's. Another key's shells in their time are not this key's to push out.
 */
async function pruneShells(ctx: Ctx): Promise<void> {
  const mine = keyShellsPrefix(ctx.ws.tenant, ctx.ws.id, ctx.auth.key_id);
  const own = keyOf(ctx);
  const all = (await listAll(ctx.deps.storage, shellsPrefix(ctx.ws.tenant, ctx.ws.id))).objects;
  const now = Date.now();
  let kept = 1; // this session's own, just saved: the newest
  const doomed = all
    .sort((a, b) => b.modified.getTime() - a.modified.getTime())
    .filter((o) => o.key !== own && (expired(o.modified, now) || (o.key.startsWith(mine) && ++kept > KEEP_SHELL_STATES)))
    .map((o) => o.key);
  for (let i = 0; i < doomed.length; i += 1000) await ctx.deps.storage.delete(doomed.slice(i, i + 1000));
}
