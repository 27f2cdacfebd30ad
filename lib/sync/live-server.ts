
/**
 * The live runner's routes of the sync API (lib/sync/live-types.ts; docs/live-sessions.md), mounted
 * by handleSync for a verified token:
 *   POST /v1/sync/live/next    LiveStatus     → LiveNext (long poll, at most LIVE_POLL_MS)
 *   POST /v1/sync/live/result  LiveResultPost → 204, or with `poll` → LiveNext (the answer, then the next poll)
 *   POST /v1/sync/live/ended   LiveEnded      → 204
 * Only a token with a live claim (`l`) reaches them, and only for the tenant, workspace, session and
 * generation its claims name: the body's generation must be the token's. The session's coordinator
 * (SyncServerDeps.live) answers. A poll may carry the runner's conditional manifest query
 * (LivePoll.manifest): when it receives a command, the answer to that query, made after the command
 * was handed over, rides with it (LiveCommand.manifest), and the command needs no manifest request of
 * its own. A result that carries `poll` (LiveResultPost.poll) is also the runner's next poll: the
 * answer is recorded first (the coordinator takes a command's answer once, by its seq: a retried
 * post changes nothing), then the poll is served exactly as a `next` (servePoll: the key's check,
 * held, the manifest answer), its status the result's: both in one step of the coordinator
 * (LiveHub.resultThenNext: one write of a DynamoDB item), after the key's check (revoked, or the
 * check failing: the answer is recorded alone first). One request per command where there were
 * two; a result without it is answered 204 as before. A query that carries the marks of the runner's
 * view (`held`, lib/sync/carried-files.ts) gets, beside the manifest's answer, the bytes of the few
 * small files the view lacks (LiveCommand.files): the runner downloads nothing for them.
 * fetch-based: bundles for Workers and runs in Node.
 */
import { ToolError } from "../shared/errors.js";
import { noSyncRoute } from "./refusal.js";
import { lostOf, type KeyAlive, type LiveEnded, type LiveHub, type LiveResultPost, type LiveSessionRef, type LiveStatus } from "./live-types.js";
import { parseManifestQuery, type ManifestAnswer, type ManifestQuery } from "./manifest.js";
import { manifestAnswerBody } from "./manifest-wire.js";
import { carriedBody, parseHeld, type CarriedFile } from "./carried-files.js";
import { bodyText, parseJson } from "./runs.js";
import type { SyncClaims } from "./token.js";
import { isObject } from "../shared/is-object.js";

/** A poll's status is small, its manifest query one digest per bucket (lib/sync/manifest.ts); a result carries a RunResult (output cut to its bound, file lists). */
const MAX_POLL_BYTES = 768 * 1024;
const MAX_RESULT_BYTES = 16 * 1024 * 1024;

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

function checkStatus(v: unknown): LiveStatus {
  if (!isObject(v) || typeof v.generation !== "string" || typeof v.started_at !== "number" || typeof v.last_used_at !== "number" || typeof v.wall_ms !== "number" || !Array.isArray(v.processes) || !Array.isArray(v.ports)) {
    throw new ToolError("INVALID_ARGUMENT", "A live status needs generation, started_at, last_used_at, wall_ms, processes and ports (lib/sync/live-types.ts LiveStatus).");
  }
  return v as unknown as LiveStatus;
}

const isPaths = (v: unknown): v is string[] => Array.isArray(v) && v.every((p) => typeof p === "string");

/** LiveEnded.written, when present: three lists of paths (they reach the model's text: a note of the next call). */
function checkWritten(v: unknown): LiveEnded["written"] {
  if (v === undefined) return undefined;
  if (!isObject(v) || !isPaths(v.changed) || !isPaths(v.deleted) || !isPaths(v.conflicts)) throw new ToolError("INVALID_ARGUMENT", "A live end's written needs changed, deleted and conflicts, each a list of paths.");
  if ((v.not_written !== undefined && !isPaths(v.not_written)) || (v.why !== undefined && typeof v.why !== "string")) throw new ToolError("INVALID_ARGUMENT", "A live end's written.not_written is a list of paths, and its why a string.");
  const notWritten = v.not_written?.length ? { not_written: v.not_written, ...(v.why ? { why: v.why } : {}) } : {};
  return { changed: v.changed, deleted: v.deleted, conflicts: v.conflicts, ...notWritten };
}

/**
 * The conditional manifest of the token's workspace for a query, answered now as
 * POST /v1/sync/manifest would (lib/sync/server.ts), with the bytes of the files it lists that the
 * view lacks when `held` (the view's marks, decoded on demand) gives them and they are few and
 * small (lib/sync/carried-files.ts); null when it cannot be given here.
 */
export type ManifestNow = (query: ManifestQuery, held: () => Set<number> | null) => Promise<{ answer: ManifestAnswer; files: [string, CarriedFile][] } | null>;

/** A poll's manifest query, and the query as sent: the marks of the runner's view in it are read only when a command comes (none: nothing is carried). */
interface PollQuery {
  query: ManifestQuery | null;
  sent?: unknown;
}
const pollQueryOf = (manifest: unknown): PollQuery => (manifest === undefined ? { query: null } : { query: parseManifestQuery(manifest), sent: manifest });

/** The poll a result carries (LiveResultPost.poll): its manifest query, or null when it has none. */
function checkResultPoll(v: unknown): PollQuery {
  if (!isObject(v)) throw new ToolError("INVALID_ARGUMENT", "A live result's poll, when sent, is an object: {manifest?} (LiveResultPost.poll).");
  return pollQueryOf(v.manifest);
}

/**
 * One poll of the runner, as `next` and a result that carries one (`carried`) serve it: the key that
 * started the sandbox checked, the coordinator's answer (held), and with a command the answer to the
 * poll's manifest query, listed after the command was handed over. A carried answer is the call's
 * whatever happens to the poll: recorded with the poll in one step of the coordinator
 * (LiveHub.resultThenNext), or alone, first, when the poll goes no further (the key revoked, or its
 * check failed).
 */
async function servePoll(ref: LiveSessionRef, claims: SyncClaims, hub: LiveHub, status: LiveStatus, { query, sent }: PollQuery, signal: AbortSignal, checks: PollChecks, carried?: LiveResultPost): Promise<Response> {
  const { manifestNow, keyAlive, workspaceHere } = checks;
  const alone = async () => void (carried && (await hub.result(ref, carried)));
  // The key that started the sandbox, revoked or expired since: the sandbox ends at this poll (its processes are told lost), not at its idle end.
  let standing = true;
  if (claims.l?.k && keyAlive) {
    try {
      standing = await keyAlive(ref.tenant, claims.l.k);
    } catch (e) {
      await alone();
      throw e;
    }
  }
  if (!standing) {
    await alone();
    await hub.ended(ref, { generation: ref.generation, reason: "revoked", ...lostOf(status), status });
    return json({ end: "revoked" });
  }
  const next = carried ? await hub.resultThenNext(ref, carried, signal) : await hub.next(ref, status, signal);
  // An idle poll's end (every LIVE_POLL_MS, off any command's path): the workspace deleted since (or made again
  // under its id), the sandbox ends now rather than at its idle end, and is billed no longer. The delete itself ends
  // the sandboxes it finds (lib/exec/workspace-gone.ts); this catches one it missed (started as the delete listed).
  if ("wait" in next && workspaceHere && !(await workspaceHere())) {
    await hub.ended(ref, { generation: ref.generation, reason: "workspace_deleted", ...lostOf(status), status });
    return json({ end: "workspace_deleted" });
  }
  if (!("command" in next) || !query || !manifestNow) return json(next);
  // Listed after the command was handed over: whatever changed before the call that sent it is in the answer.
  // One that cannot be given (or fails) is left out: the runner asks itself and hears why.
  // The view's marks (4 bytes an entry: 53 KB of base64 at 10,000) are decoded only for an answer that lists files.
  const now = await manifestNow(query, () => parseHeld(sent)).catch(() => null);
  if (!now) return json(next);
  return json({ command: { ...next.command, manifest: manifestAnswerBody(now.answer), ...(now.files.length ? { files: carriedBody(now.files) } : {}) } });
}

/**
 * What a poll checks beside the coordinator: `manifestNow` answers a command's manifest query;
 * `keyAlive`, the key that started the sandbox (at every poll); `workspaceHere`, the token's
 * workspace (at an idle poll's end: it costs a read of its record, so never on a command's path).
 */
export interface PollChecks {
  manifestNow?: ManifestNow | undefined;
  keyAlive?: KeyAlive | undefined;
  workspaceHere?: (() => Promise<boolean>) | undefined;
}

/** Serves /v1/sync/live/* for a verified token (see the module comment). */
export async function handleSyncLive(req: Request, url: URL, claims: SyncClaims, hub: LiveHub | undefined, checks: PollChecks = {}): Promise<Response> {
  if (!claims.l) throw new ToolError("PERMISSION_DENIED", "This sync token is not a live runner's: /v1/sync/live/* needs the token the live sandbox was started with.");
  if (!hub) throw new ToolError("UNAVAILABLE", "Live sandboxes are not enabled on this server.");
  if (req.method !== "POST") throw new ToolError("INVALID_ARGUMENT", `Method ${req.method} not allowed on ${url.pathname} (POST).`);
  const ref: LiveSessionRef = { tenant: claims.t, workspace: claims.w, session: claims.l.s, generation: claims.l.g, ...(claims.l.k ? { key_id: claims.l.k } : {}) };
  const route = url.pathname.slice("/v1/sync/live/".length);
  const max = route === "next" ? MAX_POLL_BYTES : MAX_RESULT_BYTES;
  const body = parseJson(await bodyText(req, max), `live ${route} body`);
  const own = (generation: unknown) => {
    if (generation !== ref.generation) throw new ToolError("PERMISSION_DENIED", "The body's generation is not the one this live token was issued for.");
  };
  switch (route) {
    case "next": {
      const { manifest, ...rest } = isObject(body) ? body : {};
      const status = checkStatus(rest);
      own(status.generation);
      return await servePoll(ref, claims, hub, status, pollQueryOf(manifest), req.signal, checks);
    }
    case "result": {
      if (!isObject(body) || typeof body.seq !== "number" || !isObject(body.response)) throw new ToolError("INVALID_ARGUMENT", "A live result needs generation, seq, response and status (LiveResultPost).");
      own(body.generation);
      const { poll, ...rest } = body;
      // Checked whole before anything is recorded: a body is taken or refused as one.
      const asked = poll === undefined ? null : checkResultPoll(poll);
      const post = { ...(rest as unknown as LiveResultPost), status: checkStatus(body.status) };
      if (asked) return await servePoll(ref, claims, hub, post.status, asked, req.signal, checks, post); // the answer first, with the poll
      await hub.result(ref, post);
      return new Response(null, { status: 204 });
    }
    case "ended": {
      if (!isObject(body) || typeof body.reason !== "string" || !Array.isArray(body.lost_processes)) throw new ToolError("INVALID_ARGUMENT", "A live end needs generation, reason, lost_processes and status (LiveEnded).");
      own(body.generation);
      const written = checkWritten(body.written);
      await hub.ended(ref, { ...(body as unknown as LiveEnded), status: checkStatus(body.status), ...(written ? { written } : {}) }, checks.workspaceHere);
      return new Response(null, { status: 204 });
    }
    default:
      throw noSyncRoute("POST", url.pathname);
  }
}
