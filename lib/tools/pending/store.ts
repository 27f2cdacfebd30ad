/**
 * Pending calls: a tool call that waits for a human (ask_user's question, a call the approval
 * gate holds). One JSON object per call in the workspace's internal area
 * (x/pending/<id>.json, keyed in lib/layout/paths.ts): object storage, strongly consistent, with
 * conditional writes, so an answer is taken exactly once.
 *
 * Life of a record: `pending` (created with If-None-Match: *) → `running` (the answer, written
 * If-Match the pending version: a second answer fails the condition → CONFLICT) → `done` (the
 * outcome, written If-Match the running version). A refusal or an ask_user answer goes straight
 * to `done`. A `pending` record past `expires_at` is expired: it can no longer be answered.
 * A held call is closed without running (If-Match the pending version) when it can no longer
 * mean what it meant: `superseded` (the agent ran the same call itself, self-confirmed) or
 * `stale` (the workspace moved past the state it was held on: lib/run/pending/binding.ts). A closed
 * call never runs; answering it is CONFLICT, and its agent is told why (closedError).
 *
 * Storage operations: create = 1 PUT + the sweep; read = 1 GET; answer = 1 GET + 1 PUT (+ the call
 * + 1 PUT when it runs); list = 1 LIST + 1 GET per record shown + the sweep.
 *
 * Records do not live forever: creating one and listing them sweep (lib/storage/sweep.ts) up to
 * MAX_SWEPT_PER_CALL records that expired, or were answered, more than RECORD_GRACE_MS (24 h) ago,
 * each deleted only if still the version read. The sweep costs nothing extra when no record was
 * last written more than 24 h ago; else ≤ 20 GETs + 1 DELETE (+ 1 LIST on create).
 */
import type { ToolDeps } from "../../contract/tool.js";
import type { ToolList } from "../../layout/workspace-meta.js";
import { ToolError } from "../../shared/errors.js";
import { randomId } from "../../shared/hash.js";
import { pendingKey, pendingNotFound, pendingPrefix } from "../../layout/paths.js";
import type { Scope } from "../../contract/caller.js";
import { RECORD_GRACE_MS, sweepRecords } from "../../storage/sweep.js";
import { isConditionFailed, type ObjectInfo, type StorageDriver } from "../../storage/types.js";

/** The workspace state a held call was held on (lib/run/pending/binding.ts makes and compares it). */
export interface CallBinding {
  /** "<base or plain>@<seq>": the workspace's layer pointer. */
  layer: string;
  /** Named path → "file:<etag>" | "dir:<hash of its listing>" | "absent". */
  paths: Record<string, string>;
  /** A hash of the tool's definition, for a tool that has one (a tenant's custom tool: Tool.definition). */
  tool?: string;
}

/** How long a pending call waits for its answer by default. */
export const DEFAULT_PENDING_TTL_MS = 24 * 60 * 60 * 1000;

export type PendingKind = "input" | "approval";
export type PendingStatus = "pending" | "running" | "done" | ClosedStatus;
/** A held call closed without running: the agent ran it itself, or the workspace moved past it. */
export type ClosedStatus = "superseded" | "stale";
export const isClosed = (r: PendingRecord): r is PendingRecord & { status: ClosedStatus; closed: ClosedNote } => r.status === "superseded" || r.status === "stale";

export interface ClosedNote {
  at: string;
  /** What happened, in words the agent and the approver read. */
  why: string;
  /** The pending call that holds the same call now (a newer hold of it), if any. */
  by?: string;
}

/** What the call came to: the tool's result, or the error it (or the refusal) ended with. */
export type PendingOutcome =
  | { ok: true; title: string; output: string; data: Record<string, unknown> }
  | { ok: false; code: string; message: string; details: Record<string, unknown> };

export interface PendingRecord {
  id: string;
  kind: PendingKind;
  tool: string;
  args: Record<string, unknown>;
  /** ask_user */
  question?: string;
  options?: string[];
  /** the gate: why the call waits, and the rule that holds it */
  reason?: string;
  rule?: { tool: string; when?: string };
  /** How the question reached the human besides the app's list: "elicitation" when the MCP client was asked it (lib/doors/mcp-ask.ts); only then may that client's answer take it. */
  channel?: "elicitation";
  /** Who called: the call runs, once approved, with the caller's session and scopes (never the approver's). */
  session: string;
  key_id: string;
  scopes: Scope[];
  /** The caller key's tool list (lib/run/toolset.ts); an approved call is checked against it and the workspace's again. */
  tools?: ToolList;
  /** The gate: the workspace state the call was held on (lib/run/pending/binding.ts); an approval runs it only on that state. */
  binding?: CallBinding;
  /** The arguments the agent asked for, when an approver changed them (`args` is what ran). */
  asked_args?: Record<string, unknown>;
  /** A task's call whose run the task layer put in the background (ToolContext.backgroundUnlessLive): approved, it runs in the session's live sandbox when it holds one, as the call would without a task. */
  background_unless_live?: true;
  /** Why a `superseded` or `stale` call was closed. */
  closed?: ClosedNote;
  created_at: string;
  expires_at: string;
  status: PendingStatus;
  answer?: { by: string; at: string; approved?: boolean; answer?: string; note?: string; modified_args?: boolean };
  outcome?: PendingOutcome;
}

export interface PendingScope {
  driver: StorageDriver;
  tenant: string;
  workspace: string;
  now?: () => number;
}

const nowOf = (s: PendingScope) => (s.now ?? Date.now)();

/** The pending calls of one workspace, with the deployment's storage and clock (deps.pending.now in tests). */
export const pendingScope = (deps: Pick<ToolDeps, "storage" | "pending">, tenant: string, workspace: string): PendingScope => ({ driver: deps.storage, tenant, workspace, ...(deps.pending?.now ? { now: deps.pending.now } : {}) });

export const newPendingId = () => `p${randomId(24)}`;

export const isExpired = (r: PendingRecord, now: number) => r.status === "pending" && Date.parse(r.expires_at) <= now;

/** When the record stopped mattering: its expiry while unanswered, else its answer (a call still `running` a day later was lost). */
const endOf = (r: PendingRecord) => (r.status === "pending" ? Date.parse(r.expires_at) : Date.parse(r.answer?.at ?? r.expires_at));
/** Whether the sweep may delete it: expired or answered more than the grace ago (a record it cannot date stays). */
export const isSweepable = (r: PendingRecord, now: number, graceMs = RECORD_GRACE_MS) => {
  const end = endOf(r);
  return Number.isFinite(end) && end + graceMs <= now;
};

/** Deletes up to 20 pending calls of the workspace that ended more than 24 h ago (see lib/storage/sweep.ts); never throws. */
export const sweepPending = (s: PendingScope, listed?: readonly ObjectInfo[]) =>
  sweepRecords<PendingRecord>({ driver: s.driver, prefix: pendingPrefix(s.tenant, s.workspace), now: nowOf(s), isStale: (r, now) => isSweepable(r, now), ...(listed ? { listed } : {}) });

/** Stores a new pending call (create-only). */
export async function createPending(s: PendingScope, rec: Omit<PendingRecord, "id" | "created_at" | "expires_at" | "status">, ttlMs = DEFAULT_PENDING_TTL_MS): Promise<PendingRecord> {
  const now = nowOf(s);
  const full: PendingRecord = { id: newPendingId(), ...rec, created_at: new Date(now).toISOString(), expires_at: new Date(now + ttlMs).toISOString(), status: "pending" };
  await s.driver.put(pendingKey(s.tenant, s.workspace, full.id), JSON.stringify(full), { ifNoneMatch: "*", contentType: "application/json" });
  await sweepPending(s);
  return full;
}

/** The record and its etag; NOT_FOUND when this workspace has no such pending call (another tenant's id included). */
export async function loadPending(s: PendingScope, id: string): Promise<{ rec: PendingRecord; etag: string }> {
  const got = await s.driver.get(pendingKey(s.tenant, s.workspace, id));
  if (!got) throw pendingNotFound(s.workspace, id);
  return { rec: JSON.parse(await new Response(got.body).text()) as PendingRecord, etag: got.etag };
}

/** Replaces the record only if it is still the version read; a lost race is CONFLICT (the call was answered already). */
export async function replacePending(s: PendingScope, rec: PendingRecord, etag: string): Promise<string> {
  try {
    const info = await s.driver.put(pendingKey(s.tenant, s.workspace, rec.id), JSON.stringify(rec), { ifMatch: etag, contentType: "application/json" });
    return info.etag;
  } catch (e) {
    if (isConditionFailed(e)) throw answeredError(rec.id);
    throw e;
  }
}

/** Closes a waiting call without running it; null when it was answered (or closed) meanwhile. */
export async function closePending(s: PendingScope, rec: PendingRecord, etag: string, status: ClosedStatus, why: string, by?: string): Promise<(PendingRecord & { status: ClosedStatus; closed: ClosedNote }) | null> {
  const closed = { ...rec, status, closed: { at: new Date(nowOf(s)).toISOString(), why, ...(by ? { by } : {}) } };
  try {
    await replacePending(s, closed, etag);
    return closed;
  } catch (e) {
    if (e instanceof ToolError && e.code === "CONFLICT") return null;
    throw e;
  }
}

/** What answering, or asking the outcome of, a closed call answers: CONFLICT saying why nothing ran and what to do. */
export function closedError(r: PendingRecord & { status: ClosedStatus; closed: ClosedNote }): ToolError {
  const what =
    r.status === "superseded"
      ? `was superseded: ${r.closed.why}. It will never run from this approval; the agent's own call is the one that counts.`
      : `is stale: ${r.closed.why} since it was held, so it would not run on what was asked. Nothing ran; it will never run. ${r.closed.by ? `The same call was held again as pending call ${r.closed.by}.` : "Make the call again (after reading the files it names) if it is still wanted."}`;
  return new ToolError("CONFLICT", `Pending call ${r.id} (${r.tool}) ${what}`, { pending_id: r.id, tool: r.tool, status: r.status, reason: r.closed.why, ...(r.closed.by ? { superseded_by: r.closed.by } : {}) });
}

export const answeredError = (id: string) =>
  new ToolError("CONFLICT", `Pending call ${id} has been answered already (an answer is taken once). GET /v1/workspaces/{ws}/pending/${id} shows its outcome.`, { pending_id: id });

export const expiredError = (r: PendingRecord) =>
  new ToolError("EXPIRED", `Pending call ${r.id} (${r.tool}) expired unanswered at ${r.expires_at}; nothing ran. Make the call again to ask anew.`, { pending_id: r.id, tool: r.tool, expires_at: r.expires_at });

/** Longest wait for an answer one request holds (GET .../pending/{id}?wait=, pending_result's wait_seconds), in seconds. */
export const MAX_PENDING_WAIT_S = 30;

/** Most records one listing reads. */
export const MAX_PENDING_LISTED = 100;

/** The workspace's pending calls still waiting for an answer (not answered, not expired), oldest first, each with its etag; sweeps old ones. */
export async function waitingCalls(s: PendingScope): Promise<{ rec: PendingRecord; etag: string }[]> {
  const page = await s.driver.list({ prefix: pendingPrefix(s.tenant, s.workspace), limit: 1000 });
  const now = nowOf(s);
  const recent = page.objects.sort((a, b) => b.modified.getTime() - a.modified.getTime()).slice(0, MAX_PENDING_LISTED);
  const recs = await Promise.all(
    recent.map(async (o) => {
      const got = await s.driver.get(o.key);
      if (!got) return null;
      try {
        return { rec: JSON.parse(await new Response(got.body).text()) as PendingRecord, etag: got.etag };
      } catch {
        return null;
      }
    }),
  );
  await sweepPending(s, page.objects);
  return recs.filter((r): r is { rec: PendingRecord; etag: string } => r !== null && r.rec.status === "pending" && !isExpired(r.rec, now)).sort((a, b) => a.rec.created_at.localeCompare(b.rec.created_at));
}

/** The workspace's pending calls still waiting for an answer, oldest first; sweeps old ones. */
export const listWaiting = async (s: PendingScope): Promise<PendingRecord[]> => (await waitingCalls(s)).map((w) => w.rec);

/** The record as the app sees it (status `expired` for a pending one past its time). */
export function pendingView(r: PendingRecord, now: number) {
  return {
    id: r.id,
    kind: r.kind,
    tool: r.tool,
    args: r.args,
    ...(r.question !== undefined ? { question: r.question } : {}),
    ...(r.options ? { options: r.options } : {}),
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
    ...(r.rule ? { rule: r.rule } : {}),
    session: r.session,
    status: isExpired(r, now) ? ("expired" as const) : r.status,
    created_at: r.created_at,
    expires_at: r.expires_at,
    ...(r.answer ? { answer: r.answer } : {}),
    ...(r.asked_args ? { asked_args: r.asked_args } : {}),
    ...(r.closed ? { closed: r.closed } : {}),
    ...(r.outcome ? { outcome: r.outcome } : {}),
  };
}

/**
 * What every door tells the model to do about a waiting call: call the pending_result tool (any
 * door can: HTTP, MCP, the formats). Never a header: a model cannot send one (apps still may, X-Pending-Id).
 */
export const howToGetOutcome = (id: string) =>
  `To get the outcome, call the pending_result tool with {"pending_id": "${id}", "wait_seconds": 30}; meanwhile go on with work that does not depend on it.`;

/**
 * Waits until pending call `id` is no longer waiting (answered, done, or expired), reading it again
 * with a backoff (250 ms doubling to 2 s, 1 GET each), until `until` (epoch ms) or the signal aborts;
 * returns the last version read. NOT_FOUND as loadPending. The one wait of GET .../pending/{id}?wait=,
 * pending_result's wait_seconds and ask_user's wait for an MCP client's answer.
 */
export async function waitForAnswer(s: PendingScope, id: string, until: number, signal?: AbortSignal): Promise<PendingRecord> {
  let { rec } = await loadPending(s, id);
  // Until it ends: done, closed (superseded, stale) or expired.
  const settled = (r: PendingRecord) => r.status === "done" || isClosed(r) || isExpired(r, nowOf(s));
  for (let pause = 250; !settled(rec) && Date.now() + pause <= until && !signal?.aborted; pause = Math.min(pause * 2, 2000)) {
    await new Promise((r) => setTimeout(r, pause));
    ({ rec } = await loadPending(s, id));
  }
  return rec;
}

/** The NEEDS_INPUT / NEEDS_APPROVAL error that tells the agent its call waits. */
export function waitingError(r: PendingRecord, ws: string): ToolError {
  const details = {
    pending_id: r.id,
    tool: r.tool,
    args: r.args,
    ...(r.kind === "input" ? { question: r.question } : { reason: r.reason }),
    ...(r.options ? { options: r.options } : {}),
    status: r.status,
    expires_at: r.expires_at,
  };
  const how = howToGetOutcome(r.id);
  if (r.kind === "input") return new ToolError("NEEDS_INPUT", `Your question waits for the user's answer (pending call ${r.id}). ${how}`, details);
  const state = r.status === "running" ? "was approved and is running" : "waits for a human's approval; it has not run";
  return new ToolError("NEEDS_APPROVAL", `This ${r.tool} call ${state} (pending call ${r.id}): ${r.reason ?? ""} ${how}`, details);
}
