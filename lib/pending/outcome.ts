/**
 * Answering a pending call and reading its outcome.
 *
 * answerPending: an ask_user answer, or a gated call approved (optionally with modified
 * arguments, validated again against the tool's schema before anything is taken) or refused.
 * The answer is taken once (a conditional write; a second answer is CONFLICT). An approved call
 * runs through runTool (lib/run-tool.ts, the one run path of every door) with the caller's
 * session and scopes, and its result (or error) is stored as the outcome.
 *
 * pendingOutcome: what a repeat of the original call with X-Pending-Id answers (apps): the stored
 * result as the tool's own result, the stored error as the tool's error, or NEEDS_* while it waits.
 * heldCallResult: the same outcome as the pending_result tool answers it (models, every door),
 * saying what the human decided.
 */
import type { AppDeps } from "../deps.js";
import { ToolError, type ErrorCode, ERROR_CODES } from "../errors.js";
import { toToolError } from "../http.js";
import { openWorkspace, runTool } from "../run-tool.js";
import { parseToolArgs, type Tool, type ToolContext } from "../tool.js";
import { answeredError, expiredError, isExpired, loadPending, replacePending, waitingError, type PendingOutcome, type PendingRecord, type PendingScope } from "./store.js";

export interface PendingAnswer {
  answer?: string;
  approved?: boolean;
  modified_args?: Record<string, unknown>;
  note?: string;
}

const scopeOf = (deps: AppDeps, tenant: string, workspace: string): PendingScope => ({ driver: deps.storage, tenant, workspace, ...(deps.pending?.now ? { now: deps.pending.now } : {}) });
const nowOf = (deps: AppDeps) => (deps.pending?.now ?? Date.now)();

/** The outcome of a stored call as the tool's own result, or its error thrown; NEEDS_* while it waits. */
export function outcomeOrThrow(rec: PendingRecord, ws: string, now: number) {
  if (isExpired(rec, now)) throw expiredError(rec);
  if (rec.status !== "done" || !rec.outcome) throw waitingError(rec, ws);
  const o = rec.outcome;
  if (o.ok) return { title: o.title, output: o.output, data: o.data };
  const code = (o.code in ERROR_CODES ? o.code : "INTERNAL") as ErrorCode;
  throw new ToolError(code, o.message, { ...o.details, pending_id: rec.id });
}

/** X-Pending-Id on a tool call: the outcome of that pending call of this tool (nothing runs). */
export async function pendingOutcome(tool: Tool, id: string, ctx: ToolContext) {
  const { rec } = await loadPending(scopeOf(ctx.deps, ctx.ws.tenant, ctx.ws.id), id);
  if (rec.tool !== tool.name) {
    throw new ToolError("INVALID_ARGUMENT", `Pending call ${id} is a ${rec.tool} call, not ${tool.name}: repeat it on the ${rec.tool} tool, or drop the X-Pending-Id header to make a new call.`, { pending_id: id, tool: rec.tool });
  }
  return outcomeOrThrow(rec, ctx.ws.id, nowOf(ctx.deps));
}

const errorOutcome = (e: ToolError): PendingOutcome => ({ ok: false, code: e.code, message: e.message, details: e.details });

/** Answers a pending call once; returns the stored record with its outcome. */
export async function answerPending(deps: AppDeps, who: { tenant: string; key_id: string }, wsId: string, id: string, body: PendingAnswer, tools: readonly Tool[]): Promise<PendingRecord> {
  const s = scopeOf(deps, who.tenant, wsId);
  const { rec, etag } = await loadPending(s, id);
  if (rec.status !== "pending") throw answeredError(id);
  if (isExpired(rec, nowOf(deps))) throw expiredError(rec);
  const at = new Date(nowOf(deps)).toISOString();
  const note = body.note !== undefined ? { note: body.note } : {};

  if (body.approved === false) {
    const message = `A human refused this ${rec.tool} call${body.note ? `: ${body.note}` : " (no note given)"}. It did not run; do not retry it as it was.`;
    const done: PendingRecord = { ...rec, status: "done", answer: { by: who.key_id, at, approved: false, ...note }, outcome: errorOutcome(new ToolError("DENIED", message, { tool: rec.tool, ...note })) };
    await replacePending(s, done, etag);
    return done;
  }

  if (rec.kind === "input") {
    if (typeof body.answer !== "string") throw new ToolError("INVALID_ARGUMENT", `Pending call ${id} is a question (ask_user): answer it with {"answer": "..."} (or {"approved": false} to dismiss it).`, { pending_id: id, question: rec.question });
    const option = rec.options ? rec.options.indexOf(body.answer) : -1;
    const output = `The user answered: ${body.answer}`;
    const data = { question: rec.question, answer: body.answer, option_index: option >= 0 ? option : null, ...note };
    const done: PendingRecord = { ...rec, status: "done", answer: { by: who.key_id, at, answer: body.answer, ...note }, outcome: { ok: true, title: "User answered", output: body.note ? `${output}\nNote: ${body.note}` : output, data } };
    await replacePending(s, done, etag);
    return done;
  }

  if (body.approved !== true) throw new ToolError("INVALID_ARGUMENT", `Pending call ${id} waits for approval: send {"approved": true} (optionally with modified_args and note) or {"approved": false, "note": "why"}.`, { pending_id: id });
  const tool = tools.find((t) => t.name === rec.tool);
  if (!tool) throw new ToolError("UNAVAILABLE", `The ${rec.tool} tool is not enabled on this server (or was a custom tool since deleted); the call cannot run. Refuse it with {"approved": false}.`, { tool: rec.tool });
  const args = body.modified_args ?? rec.args;
  // Validated before the answer is taken: bad modified arguments leave the call pending, to be answered again.
  if (body.modified_args) parseToolArgs(tool, args);
  const running: PendingRecord = { ...rec, args, status: "running", answer: { by: who.key_id, at, approved: true, modified_args: !!body.modified_args, ...note } };
  const runningEtag = await replacePending(s, running, etag);

  let outcome: PendingOutcome;
  try {
    const scope = { deps, auth: { tenant: who.tenant, key_id: rec.key_id, scopes: rec.scopes, ...(rec.tools !== undefined ? { tools: rec.tools } : {}) }, wsId, session: rec.session, approved: true };
    const ws = await openWorkspace(scope);
    const r = await runTool(tool, args, { ...scope, ws });
    outcome = { ok: true, title: r.title, output: r.output, data: r.data };
  } catch (e) {
    const err = toToolError(e);
    outcome = errorOutcome(err);
  }
  const done: PendingRecord = { ...running, status: "done", outcome };
  await replacePending(s, done, runningEtag);
  return done;
}

/** Longest text of modified arguments quoted back to the agent. */
const MAX_ARGS_SHOWN = 2000;

/**
 * A held call's outcome as the pending_result tool answers it (any door): what the human decided
 * is said in the text the model reads (invariant 13: an approval's note and changed arguments, a
 * refusal's note), then the tool's own output; `data` wraps the tool's data. A refusal, expiry or
 * the approved call's own failure is thrown (DENIED, EXPIRED, the tool's code), NEEDS_* while it waits.
 */
export function heldCallResult(rec: PendingRecord, ws: string, now: number) {
  const approved = rec.kind === "approval" && rec.answer?.approved === true;
  const args = JSON.stringify(rec.args);
  const changed = approved && rec.answer?.modified_args ? ` with arguments the human changed to ${args.length > MAX_ARGS_SHOWN ? `${args.slice(0, MAX_ARGS_SHOWN)}…` : args}` : "";
  const note = approved && rec.answer?.note ? ` The human's note: ${rec.answer.note}` : "";
  let r;
  try {
    r = outcomeOrThrow(rec, ws, now);
  } catch (e) {
    if (!approved || !(e instanceof ToolError) || rec.status !== "done") throw e;
    throw new ToolError(e.code, `A human approved this ${rec.tool} call; it ran${changed} and failed: ${e.message}${note}`, e.details);
  }
  const head = approved ? `A human approved this ${rec.tool} call; it ran${changed}.${note}\n` : "";
  return { title: r.title, output: `${head}${r.output}`, data: { pending_id: rec.id, tool: rec.tool, status: "done" as const, result: r.data } };
}
