/**
 * Idempotency keys (issue #28 §3), in the one route guard (routes/access.ts), so every mutating
 * route of the API takes them: tool calls, compat calls, raw file writes and deletes, workspace
 * create/delete, imports, checkpoints, restores, undo, approvals, policies, keys (admin and tenant).
 *
 * A POST/PUT/PATCH/DELETE with `Idempotency-Key: <1-255 visible ASCII>`:
 *   - first time: the request claims the key, runs, and its answer (status, headers, body) is kept
 *     with the request's fingerprint (SHA-256 of method, path, query, content type and the body
 *     bytes, hashed as the body streams through), after the answer leaves where the runtime allows (waitUntil);
 *   - a retry with the same key and the same request gets the stored answer (`Idempotent-Replayed: true`)
 *     and runs nothing; with a different request: INVALID_ARGUMENT; while the first still runs: CONFLICT
 *     with Retry-After;
 *   - a 5xx answer is not kept (the claim is dropped, a retry runs again); nor is a 429.
 * Who holds the key while it runs: with the tenant's limits store (Workers: its object, asked in the
 * same round trip as the call's rate-limit token, the guard, routes/access.ts; lib/limits/claims.ts;
 * Lambda with the table: a conditional PutItem after it, lib/limits/dynamodb-claims.ts): no storage
 * operation before the handler, 1 PUT of the answer after it. The call's reads (IdempotentCall.prepare)
 * go beside the claim; nothing of the call runs before it is taken. Without one (the admin token, limits
 * turned off, the store unreachable), the bucket: 1 create-only "running"
 * record (If-None-Match: *: no read first) before the handler, replaced by the answer (If-Match) after.
 * A retry: the claim's refusal (the refused PUT, or the object's answer) + 1 GET of the record; a
 * takeover after the lease or the record's time: + 1 conditional PUT (or 1 object round trip).
 * Without the header: nothing.
 * A request answered here without running (a replay, or a refusal: still running, a different request, a
 * kept answer too large or unreadable) is marked on its context (answeredByKey): no call, so no usage record.
 * Keys are per tenant and API key (IdempotencyScope; the admin token has a scope of its own) and kept 24 h. A streamed answer (SSE)
 * is kept when the stream ends, in the background; until then a retry gets CONFLICT.
 * A crash before the answer is kept leaves the key held; after its lease (RUNNING_LEASE_MS) a retry runs again.
 * Expired records go in the lazy sweep (lib/storage/sweep.ts) after 1 in SWEEP_EVERY first runs, in the background: 1 LIST (+ at most 20 GETs and 1 DELETE when some are old).
 */
import { sealer, type Sealer } from "../shared/seal.js";
import { decodeBase64, encodeBase64 } from "../shared/text.js";
import type { Context, Next } from "hono";
import { ToolError } from "../shared/errors.js";
import { afterAnswer, finishAfterAnswer } from "../shared/after-answer.js";
import { sha256Hex } from "../shared/hash.js";
import { sweepRecords } from "../storage/sweep.js";
import { isConditionFailed, type GetResult, type StorageDriver } from "../storage/types.js";
import type { ClaimAnswer } from "../limits/claims.js";
import type { LimitsStore } from "../limits/store.js";
import { idempotencyPrefix, idempotencyRecordKey } from "../layout/paths.js";
import { differentRequest, fingerprintOf, hashedBody, type HashedBody } from "./idempotency-fingerprint.js";
import type { AppEnv } from "./http.js";
import { backgroundOf } from "./routes/common.js";
import { pendingIdOf } from "../tools/pending/outcome.js";

export const IDEMPOTENCY_HEADER = "idempotency-key";
export const KEEP_MS = 24 * 3600_000;
/** How long a running record holds its key before a retry may take it over (the longest call: a 10-minute command plus write-back). */
export const RUNNING_LEASE_MS = 15 * 60_000;
/** Larger answers are not kept: the record says so and a retry gets CONFLICT naming it. */
export const MAX_KEPT_BODY_BYTES = 8 * 1024 * 1024;
export const SWEEP_EVERY = 16;
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;
const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** Headers of the answer a replay gives back (the rest are the platform's). */
const KEPT_HEADERS = /^(content-type|etag|location|retry-after|x-toolshed-[\w-]+)$/i;

type Running = { state: "running"; started: number; lease_until: number; expires: number };
/** `body`: base64 of the answer's bytes, sealed (lib/shared/seal.ts, `sealed`) where the deployment has a sync secret: a kept answer can hold a new key's secret or a command's output. */
type Done = { state: "done"; fingerprint: string; status: number; headers: [string, string][]; body?: string; sealed?: true; too_large?: true; expires: number };
type IdemRecord = Running | Done;

/** How kept answers are sealed at rest: under the deployment's sync secret where it has one (lib/shared/seal.ts); else kept as sent. */
export const keptAnswers = (deps: { syncSecret?: string | undefined }): Sealer | undefined => (deps.syncSecret ? sealer(deps.syncSecret, "toolshed-kept-answers") : undefined);

/** A mutating request's Idempotency-Key, checked; undefined without one, or on a tool call's repeat with X-Pending-Id (it runs nothing: a kept "still waiting" would outlive the call). */
export function idempotencyKeyOf(c: Context<AppEnv>): string | undefined {
  if (!MUTATING.has(c.req.method) || (c.get("tool") !== undefined && pendingIdOf(c.req.raw.headers) !== undefined)) return undefined;
  const key = c.req.header(IDEMPOTENCY_HEADER);
  if (key === undefined) return undefined;
  if (!KEY_SHAPE.test(key)) throw new ToolError("INVALID_ARGUMENT", "Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is a good choice).");
  return key;
}

/**
 * Whose keys a key meets: the tenant's records (or IDEMPOTENCY_ADMIN's), and within a tenant the
 * sending API key's own (by its id, which a rotation keeps; an OAuth principal's id). Another key of
 * the tenant sending the same string meets nothing of the first's: its request runs as its own,
 * neither replayed the first's answer (which could hold what it may not see) nor refused (which
 * would tell it the string was used). The admin token has one scope of its own.
 */
export interface IdempotencyScope {
  tenant: string;
  keyId?: string;
}

/**
 * How this layer answered a request without running it: its kept answer `replayed`, or `refused`
 * (the first still running, the key used for a different request, the kept answer too large or no
 * longer readable). The one rule the usage meters read (the tool routes' meterToolCall, every other
 * route's meterRoute; the compat routes and MCP record only tools that ran): such a request ran
 * nothing, so it is not recorded as a call (docs/usage.md, "Not recorded"). It still took its
 * calls_per_minute token, in the guard, before the key was looked at.
 */
export const answeredByKey = (c: Context<AppEnv>): boolean => c.get("keyAnswer") !== undefined;
const refused = (c: Context<AppEnv>, e: ToolError): ToolError => (c.set("keyAnswer", "refused"), e);

/** The hash a key is held and kept under (the record's name, the limits object's claim): the one place a scope meets its key. */
export const scopedKeyHash = (scope: IdempotencyScope, key: string): Promise<string> => sha256Hex(scope.keyId === undefined ? key : `${scope.keyId}\n${key}`);

/**
 * Who holds a key while its request runs. The bucket: a create-only PUT of a "running" record, which
 * the kept answer replaces (If-Match). The tenant's limits object (lib/limits/claims.ts), when the
 * guard asked it for the claim in the call's rate-limit round trip: nothing is written to the bucket
 * before the handler, and the kept answer is a plain PUT (the claim, not the record, says who runs).
 */
export interface ObjectClaim {
  /** The claim's outcome, from the guard's takeCall; undefined when the object did not answer (the bucket holds the key then). */
  first: Promise<ClaimAnswer | undefined>;
  limits: LimitsStore;
  tenant: string;
}

type Held = { taken: true; etag?: string; claim?: string } | { taken: false; lease_until: number; claim?: string };

interface Holder {
  first(): Promise<Held>;
  /** After the record was read and shows no kept answer: take over `seen` (a lease over, a record expired). */
  takeOver(seen: Held & { taken: false }, found: GetResult | null): Promise<Held>;
  keep(done: Done, held: Held & { taken: true }): Promise<void>;
  drop(held: Held & { taken: true }): Promise<void>;
}

function bucketHolder(storage: StorageDriver, recordKey: string, running: Running): Holder {
  const putRunning = async (over?: string): Promise<Held> => {
    try {
      const { etag } = await storage.put(recordKey, JSON.stringify(running), over ? { ifMatch: over, contentType: "application/json" } : { ifNoneMatch: "*", contentType: "application/json" });
      return { taken: true, etag };
    } catch (e) {
      if (isConditionFailed(e)) return { taken: false, lease_until: 0 }; // the record read next says whether it runs
      throw e;
    }
  };
  return {
    first: () => putRunning(),
    // Expired, or a running record past its lease (or gone since the PUT): taken over only over exactly the version read.
    takeOver: (_seen, found) => putRunning(found?.etag),
    async keep(done, held) {
      await storage.put(recordKey, JSON.stringify(done), { ifMatch: held.etag!, contentType: "application/json" }).catch((e) => {
        if (!isConditionFailed(e)) throw e; // taken over after the lease: the newer run's record stands
      });
    },
    drop: (held) => storage.delete([{ key: recordKey, ifMatch: held.etag! }]).then(() => {}),
  };
}

function objectHolder(storage: StorageDriver, recordKey: string, keyHash: string, claims: ObjectClaim, first: ClaimAnswer): Holder {
  const held = (a: ClaimAnswer): Held => (a.taken ? { taken: true, claim: a.claim.id } : { taken: false, lease_until: a.claim.lease_until, claim: a.claim.id });
  return {
    first: async () => held(first),
    takeOver: async (seen) => held(await claims.limits.claimKey(claims.tenant, { key: keyHash, leaseMs: RUNNING_LEASE_MS, keepMs: KEEP_MS, ...(seen.claim ? { over: seen.claim } : {}) })),
    // The claim says who runs; a run after a takeover overwrites the kept answer of the run it took over from.
    keep: async (done) => void (await storage.put(recordKey, JSON.stringify(done), { contentType: "application/json" })),
    drop: (h) => claims.limits.releaseClaim(claims.tenant, keyHash, h.claim!),
  };
}

/**
 * One call under a key. `prepare` reads what the call needs and writes nothing (the guard's: the
 * JSON body, the tool's early reads, the workspace record): it starts at once, beside the key's
 * claim, so the claim's round trip is not added to theirs. `run` is the call itself, started only
 * once the key is taken (it answers prepare's error, if any, as the call's answer). `discard` ends
 * prepare's reads when the call does not run (a replay, an in-flight retry, a refusal).
 */
export interface IdempotentCall {
  prepare?: () => Promise<void>;
  discard?: () => Promise<void>;
  run: Next;
}

/**
 * Runs `call` at most once per (scope, key) while its record lives. `scope`: the tenant and the
 * sending key's id (or IDEMPOTENCY_ADMIN alone). Call it after authentication, before the body is read. `claim`: the key's
 * claim the guard asked the tenant's limits object for (absent: the bucket holds the key).
 */
export async function idempotent(storage: StorageDriver, scope: IdempotencyScope, key: string, c: Context<AppEnv>, call: IdempotentCall, claim?: ObjectClaim, box?: Sealer, now = Date.now): Promise<void> {
  const body = hashedBody(c);
  const prepared = call.prepare?.();
  prepared?.catch(() => {}); // its error is the call's answer (call.run), or nobody's when the call does not run
  let ran = false;
  try {
    await claimThenRun(storage, scope, key, c, body, async () => {
      ran = true;
      await call.run();
    }, claim, box, now);
  } finally {
    if (!ran && prepared) {
      await prepared.catch(() => {});
      await call.discard?.().catch(() => {});
    }
  }
}

/** Takes the key (or answers the retry: the kept answer, CONFLICT, INVALID_ARGUMENT), then runs `next` and keeps its answer. */
async function claimThenRun(storage: StorageDriver, scope: IdempotencyScope, key: string, c: Context<AppEnv>, body: HashedBody, next: Next, claim: ObjectClaim | undefined, box: Sealer | undefined, now: () => number): Promise<void> {
  const keyHash = await scopedKeyHash(scope, key);
  const recordKey = idempotencyRecordKey(scope.tenant, keyHash);
  const t = now();
  const running: Running = { state: "running", started: t, lease_until: t + RUNNING_LEASE_MS, expires: t + KEEP_MS };
  const answered = claim ? await claim.first : undefined;
  const holder = claim && answered ? objectHolder(storage, recordKey, keyHash, claim, answered) : bucketHolder(storage, recordKey, running);
  // A first run takes the key (one create-only PUT, or the claim already taken with the call's token);
  // only a key already taken is read (a retry, or a record past its time).
  let taken = await holder.first();
  if (!taken.taken) {
    const found = await storage.get(recordKey);
    const current = found ? (JSON.parse(await new Response(found.body).text()) as IdemRecord) : null;
    const live = current && current.expires > t && !(current.state === "running" && current.lease_until <= t);
    if (current && live && current.state === "done") {
      const fingerprint = await fingerprintOf(c, await body.finish());
      if (fingerprint !== current.fingerprint) {
        throw refused(c, differentRequest(c));
      }
      if (current.too_large) throw refused(c, new ToolError("CONFLICT", "This Idempotency-Key's request already ran, but its answer was too large to keep. Read the current state (the files, the workspace) instead of retrying.", { retry_after: 0 }));
      const kept = await replay(current, box, recordKey);
      if (!kept) throw refused(c, new ToolError("CONFLICT", "This Idempotency-Key's request already ran, but its kept answer can no longer be read (the deployment's sync secret changed since). Read the current state (the files, the workspace, the keys) instead of retrying.", { retry_after: 0 }));
      c.set("keyAnswer", "replayed");
      c.res = kept;
      return;
    }
    if (current && live) throw refused(c, inFlight(current as Running, t)); // a bucket-held key still running
    if (taken.lease_until > t) throw refused(c, inFlight({ ...running, lease_until: taken.lease_until }, t)); // an object-held key still running
    taken = await holder.takeOver(taken, found);
    if (!taken.taken) throw refused(c, inFlight(running, t));
  }
  const held = taken;
  if (Math.random() * SWEEP_EVERY < 1) {
    void afterAnswer(backgroundOf(c), "idempotency sweep", () => sweepRecords<IdemRecord>({ driver: storage, prefix: idempotencyPrefix(scope.tenant), now: t, graceMs: KEEP_MS, isStale: (r, at) => r.expires <= at && !(r.state === "running" && r.lease_until > at) }), "start");
  }
  await next();
  const res = c.res;
  // The body's digest before the answer leaves: workerd refuses to read a body after its response, and an import stops short of its end (docs/idempotency.md); a cut body (null) keeps nothing.
  const fingerprint = await body.finish().then((digest) => fingerprintOf(c, digest), () => null);
  const keep = async (bytes: Uint8Array | null) => {
    if (fingerprint === null || res.status >= 500 || res.status === 429) return void (await holder.drop(held).catch(() => {}));
    const headers = [...res.headers].filter(([name]) => KEPT_HEADERS.test(name));
    const done: Done = bytes === null || bytes.length > MAX_KEPT_BODY_BYTES
      ? { state: "done", fingerprint, status: res.status, headers, too_large: true, expires: t + KEEP_MS }
      : { state: "done", fingerprint, status: res.status, headers, ...(box ? { body: encodeBase64(await box.seal(bytes, recordKey)), sealed: true } : { body: encodeBase64(bytes) }), expires: t + KEEP_MS };
    await holder.keep(done, held);
  };
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream") && res.body) {
    // A stream is kept when it ends, without holding it back from the client.
    const [toClient, toKeep] = res.body.tee();
    c.res = new Response(toClient, res);
    void afterAnswer(backgroundOf(c), "idempotent stream kept", () => new Response(toKeep).arrayBuffer().then((b) => keep(new Uint8Array(b))).catch(() => {}), "start");
    return;
  }
  const bytes = new Uint8Array(await res.clone().arrayBuffer());
  // Where the runtime lets work outlive the answer (waitUntil), the PUT is started before the answer
  // leaves and finished after it (finishAfterAnswer, not afterAnswer, whose timer turn's delay made a
  // client retrying at once, as docs/python-client.md's example does, meet CONFLICT): a retry in the
  // PUT's short window finds the key running and gets CONFLICT with Retry-After, the next one the kept
  // answer. Without waitUntil (Node) it is kept before the answer, so a retry always finds it.
  const bg = backgroundOf(c);
  if (bg) finishAfterAnswer(bg, "idempotent answer kept", keep(bytes));
  else await keep(bytes);
}

function inFlight(r: Running, t: number): ToolError {
  const wait = Math.max(1, Math.min(5, Math.ceil((r.lease_until - t) / 1000)));
  return new ToolError("CONFLICT", "A request with this Idempotency-Key is still running. Retry with the same key after Retry-After seconds to get its answer.", { retry_after: wait });
}

/** The kept answer, `Idempotent-Replayed: true`; null when it can no longer be read. */
async function replay(r: Done, box: Sealer | undefined, recordKey: string): Promise<Response | null> {
  // Filtered again: an answer kept before 2026-12-02 also kept its RateLimit fields, stale by now (the guard sets the current ones).
  const headers = new Headers(r.headers.filter(([name]) => KEPT_HEADERS.test(name)));
  headers.set("idempotent-replayed", "true");
  if (r.body === undefined) return new Response(null, { status: r.status, headers });
  const kept = decodeBase64(r.body); // null only for a record no run of ours wrote: unreadable, as a sealed one that does not open
  const bytes = kept && r.sealed ? await box?.open(kept, recordKey).catch(() => undefined) : kept;
  if (!bytes) return null;
  return new Response(bytes, { status: r.status, headers });
}
