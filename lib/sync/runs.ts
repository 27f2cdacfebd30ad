/**
 * The run-record part of the sync API: the container function's window on its own run's
 * record (lib/sync/run-records.ts), both sides. The run is the one the sync token names (claim `r`,
 * the idempotency key); a token reaches no other run, workspace or tenant. fetch-based:
 * bundles for Workers and runs in Node.
 *
 *   GET    /v1/sync/run               → { claim, result }
 *   POST   /v1/sync/run/claim         {task, attempt?}  → ClaimOutcome (the claim is created with If-None-Match: *; the
 *                                      same attempt asking again is told claimed). A fresh run's claim usually rides on its
 *                                      manifest request instead (POST /v1/sync/manifest with `claim`: lib/sync/server.ts)
 *   DELETE /v1/sync/run/claim         → 204 (only while there is no result)
 *   PUT    /v1/sync/run/output/<seq>  text    → { kill }  (a repeated seq is ignored)
 *   GET    /v1/sync/run/kill          → { kill }
 *   PUT    /v1/sync/run/result        ExecResponse → 204 (the first one stays; a metered run's end is told once, by the PUT that stored it)
 *   PUT    /v1/sync/run/log           the full output (Content-Length) → { name } (lib/sync/output-logs.ts)
 */
import { ToolError } from "../shared/errors.js";
import { noSyncRoute, throwSyncRefusal } from "./refusal.js";
import type { StorageDriver } from "../storage/types.js";
import { saveOutputLog } from "./output-logs.js";
import { MAX_RESULT_BYTES, resultBody } from "./result-size.js";
import { runIdFor, storageRunRecords, type StoredRunRecords } from "./run-records.js";
import type { SyncClaims } from "./token.js";
import type { RunEnded } from "./server-deps.js";
import type { KeyAlive } from "./live-types.js";
import { keyGoneMarked, startingKeyStands } from "./starting-key.js";
import type { ExecResponse, SyncAccess, ClaimOutcome, ClaimRequest, RunClaim, RunRecordClient } from "./types.js";

const MAX_CHUNK_BYTES = 1024 * 1024;

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** A request body of at most `max` bytes (PAYLOAD_TOO_LARGE beyond). */
export async function bodyText(req: Request, max: number): Promise<string> {
  const length = Number(req.headers.get("content-length") ?? 0);
  if (length > max) throw new ToolError("PAYLOAD_TOO_LARGE", `At most ${max} bytes.`);
  const text = await req.text();
  if (text.length > max) throw new ToolError("PAYLOAD_TOO_LARGE", `At most ${max} bytes.`);
  return text;
}

/** JSON.parse, or INVALID_ARGUMENT naming what was expected. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolError("INVALID_ARGUMENT", `The ${what} is not JSON.`);
  }
}

/** Serves /v1/sync/run[/...] for a verified token; mounted by handleSync (lib/sync/server.ts). `onRunEnded`: told of a metered run's end (SyncServerDeps). */
/** The record of the run the token names (UNAUTHORIZED when it names none). */
export function tokenRunRecords(claims: SyncClaims, driver: StorageDriver): StoredRunRecords {
  if (typeof claims.r !== "string" || claims.r.length < 1 || claims.r.length > 200) throw new ToolError("UNAUTHORIZED", "This sync token names no run.");
  return storageRunRecords(driver, claims.t, claims.w, claims.r, claims.exp * 1000);
}

/** A claim request from the wire ({task, attempt?}); INVALID_ARGUMENT when it is not one. */
export function claimRequestOf(body: unknown): ClaimRequest {
  const b = body as { task?: unknown; attempt?: unknown } | null;
  const attempt = b?.attempt;
  if (attempt !== undefined && (typeof attempt !== "string" || !/^[A-Za-z0-9_-]{8,64}$/.test(attempt))) throw new ToolError("INVALID_ARGUMENT", "A claim's attempt is 8-64 characters of A-Z a-z 0-9 _ -.");
  return { task: b?.task === true, ...(attempt ? { attempt } : {}) };
}

/**
 * `workspaceHere`: whether the token's workspace is still the instance it was minted for. A run that
 * reports while it runs (its token has a meter, `m`: a background task, a streamed run) is checked at
 * every request: once its workspace is gone (deleted, or made again under its id) it is told to stop
 * (`kill` on its next chunk or check) and nothing of it is stored; its result is still billed (answered
 * 204, not stored: one usage record for every end of a background run, docs/usage.md). Before, such a task ran on to its
 * timeout, which nobody could stop (kill_shell reaches the new instance only), and its output and
 * result landed in the new instance's records (bash_output there handed them out). One read of the
 * workspace record per such request (beside the kill flag's HEAD on a check), and one create-only PUT (the billed mark) for the result of such a run. A plain foreground run
 * (its result only, taken by the call that waits for it) reads it only at its kill checks (from 4 s on:
 * killAsked) and when it reports a killed result, which is then not stored if the workspace is gone.
 * `keyAlive`: a background task's and a live sandbox's checks are answered `kill` once the key that started
 * it is gone (starting-key.ts); the task's result is stored, marked `killed_by: "key_gone"`.
 */
export async function handleSyncRun(req: Request, url: URL, claims: SyncClaims, driver: StorageDriver, workspaceHere: () => Promise<boolean>, onRunEnded?: (end: RunEnded) => void, keyAlive?: KeyAlive): Promise<Response> {
  const rec = tokenRunRecords(claims, driver);
  const route = url.pathname.slice("/v1/sync/run".length);
  const out = /^\/output\/(\d{1,8})$/.exec(route);
  const here = claims.m !== undefined ? workspaceHere : async () => true;
  const keyHere = () => startingKeyStands(claims, keyAlive);
  if (req.method === "GET" && route === "/kill") return json({ kill: await killAsked(rec, workspaceHere, keyHere) });
  if (!(await here())) {
    if (out && req.method === "PUT") return json({ kill: true });
    if (req.method === "PUT" && route === "/result") {
      // Its end is billed all the same (it ran until it was told to stop), once: by the PUT that creates the run's billed mark
      // (the one create-only rule of every end billed without a stored result: StoredRunRecords.billOnce, as a live
      // sandbox's end, lib/exec/live/markers.ts), so a PUT sent again after its 204 was lost bills nothing. The result is not
      // stored; the mark is the one object left under the gone prefix (a leftover, collected by GC's tick: docs/storage.md).
      const res = await resultOf(req);
      if (typeof claims.m?.k === "string" && onRunEnded && (await rec.billOnce())) await tellRunEnded(rec, claims.t, claims.w, claims.m.k, res, onRunEnded);
      return new Response(null, { status: 204 });
    }
    throw new ToolError("NOT_FOUND", `Workspace ${claims.w} no longer exists (it was deleted, perhaps made again since this run started); nothing of the run is kept.`, { workspace: claims.w });
  }
  if (out && req.method === "PUT") {
    const [stored, keyStands] = await Promise.all([rec.output(Number(out[1]), await bodyText(req, MAX_CHUNK_BYTES)), keyHere()]);
    return json({ kill: stored.kill || !keyStands });
  }
  if (req.method === "PUT" && route === "/log") {
    // The run's full output, outside the workspace's files; named by the run the token names.
    const name = await saveOutputLog(driver, claims.t, claims.w, await runIdFor(claims.t, claims.w, claims.r), req.body ?? new Uint8Array(0), Number(req.headers.get("content-length") ?? NaN));
    return json({ name });
  }
  switch (`${req.method} ${route}`) {
    case "GET ":
      return json(await rec.state());
    case "POST /claim": {
      return json(await rec.claim(claimRequestOf(parseJson((await bodyText(req, 1024)) || "{}", "claim"))));
    }
    case "DELETE /claim":
      await rec.release();
      return new Response(null, { status: 204 });
    case "PUT /result": {
      const res = await keyGoneMarked(await resultOf(req), keyHere);
      // A plain foreground run killed because its workspace went (killAsked): nothing of it is kept there; its call has the answer from the invocation.
      if (claims.m === undefined && killedRun(res) && !(await workspaceHere())) return new Response(null, { status: 204 });
      // Only the PUT that stored the result tells of the run's end: a repeated PUT (a retry) bills nothing; a streamed
      // run's, only when its caller left before taking it (the caller's kill flag is there), once.
      if ((await rec.storeResult(res)) && typeof claims.m?.k === "string" && onRunEnded && (!claims.m.s || (await leftByCaller(rec))))
        await tellRunEnded(rec, claims.t, claims.w, claims.m.k, res, onRunEnded);
      return new Response(null, { status: 204 });
    }
    default:
      throw noSyncRoute(req.method, url.pathname);
  }
}

/**
 * The kill check's answer (GET /kill): the run's kill flag is set, or its workspace is gone (deleted, or
 * made again under its id), or the key that started it no longer stands (a background task's, a live
 * sandbox's: starting-key.ts; a plain foreground run's call watches its own key). Every run's runner asks it: a background task when it has no output to send, a
 * plain foreground run every second once it has run 4 s (FOREGROUND_KILL_AFTER_MS) and before its
 * write-back, so a workspace deleted under a foreground command ends it within about a second, nothing
 * written back, and frees its concurrent_runs slot (the call answers why: lib/exec/runs.ts). One read of
 * the workspace record beside the flag's HEAD, never on the path of a command shorter than 4 s.
 */
async function killAsked(rec: StoredRunRecords, workspaceHere: () => Promise<boolean>, keyStands: () => Promise<boolean>): Promise<boolean> {
  const [standing, kill, keyOk] = await Promise.all([workspaceHere(), rec.killRequested(), keyStands()]);
  return kill || !standing || !keyOk;
}

/** The runner's ExecResponse from a result PUT (INVALID_ARGUMENT when it is not one). */
async function resultOf(req: Request): Promise<ExecResponse> {
  let res: ExecResponse;
  try {
    res = JSON.parse(await bodyText(req, MAX_RESULT_BYTES)) as ExecResponse;
  } catch {
    throw new ToolError("INVALID_ARGUMENT", "The result must be a JSON ExecResponse.");
  }
  if (!res || typeof res !== "object" || typeof res.ok !== "boolean") throw new ToolError("INVALID_ARGUMENT", "The result must be a JSON ExecResponse ({ok, result} or {ok, error}).");
  return res;
}

const killedRun = (res: ExecResponse): boolean => res.ok && (res.result as { killed?: unknown } | null)?.killed === true;

/**
 * A streamed run's result, stored: billed here when its caller left (it wrote the kill flag, then looked for the
 * result once: lib/exec/stream-run.ts) and did not take its billing first. The caller writes the flag before it
 * looks, and this looks for the flag after the result is stored, so one of the two always sees the other.
 */
async function leftByCaller(rec: StoredRunRecords): Promise<boolean> {
  return (await rec.killRequested()) && (await rec.billOnce());
}

/**
 * Tells of a metered run's end; for an error result (which reports no run time) with when the run was
 * claimed (the claim's time is this API's clock: one read). Never fails the PUT: the result is stored,
 * and a failed answer would make the runner send it again (which bills nothing), so a failure here is
 * logged and the record is lost.
 */
async function tellRunEnded(rec: StoredRunRecords, tenant: string, workspace: string, key_id: string, result: ExecResponse, onRunEnded: (end: RunEnded) => void): Promise<void> {
  const ended_at = Date.now();
  try {
    const claim = result.ok ? null : await rec.readClaim();
    onRunEnded({ tenant, workspace, key_id, result, ...(claim ? { started_at: claim.started_at } : {}), ended_at });
  } catch (e) {
    console.warn("a background run's end could not be metered", String(e));
  }
}

/** The runner's client of its run record over HTTP (the run is the token's). */
export function httpRunRecords(opts: SyncAccess & { fetch?: typeof fetch }): RunRecordClient {
  const doFetch = opts.fetch ?? fetch;
  const base = opts.url.replace(/\/+$/, "") + "/v1/sync/run";

  async function call<T>(method: string, path: string, what: string, body?: string, type = "application/json"): Promise<T> {
    let res: Response;
    try {
      res = await doFetch(base + path, { method, headers: { authorization: `Bearer ${opts.token}`, ...(body !== undefined ? { "content-type": type } : {}) }, ...(body !== undefined ? { body } : {}) });
    } catch (e) {
      throw new ToolError("UNAVAILABLE", `The run record sync endpoint is unreachable (${what}): ${String(e)}`);
    }
    if (!res.ok) await throwSyncRefusal(res, `Run record sync failed (${what})`);
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  return {
    claim: (o) => call<ClaimOutcome>("POST", "/claim", "claim", JSON.stringify({ task: o.task, ...(o.attempt ? { attempt: o.attempt } : {}) })),
    state: () => call<{ claim: RunClaim | null; result: ExecResponse | null }>("GET", "", "state"),
    output: (seq, text) => call<{ kill: boolean }>("PUT", `/output/${seq}`, "output", text, "text/plain; charset=utf-8"),
    killRequested: async () => (await call<{ kill: boolean }>("GET", "/kill", "kill")).kill,
    finish: (res) => call<void>("PUT", "/result", "result", resultBody(res)), // never past what the server takes
    release: () => call<void>("DELETE", "/claim", "release"),
  };
}
