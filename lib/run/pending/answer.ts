/**
 * Answering a pending call: an ask_user answer, or a gated call approved (lib/run/pending/approve.ts:
 * optionally with modified arguments and a note; the caller's key re-checked; only on the
 * workspace state it was held on) or refused. The answer is taken once (a conditional write; a
 * second answer is CONFLICT); a call closed as superseded or stale is CONFLICT too, and nothing runs.
 * Apart from lib/tools/pending/outcome.ts because an approval runs the call (lib/run/run-tool.ts), which reads outcomes.
 */
import { ToolError } from "../../shared/errors.js";
import type { RunDeps } from "../deps.js";
import { runApproved, type Approver } from "./approve.js";
import { nowOf } from "../../tools/pending/outcome.js";
import { answeredError, closedError, expiredError, isClosed, isExpired, loadPending, pendingScope, replacePending, type PendingOutcome, type PendingRecord } from "../../tools/pending/store.js";

export interface PendingAnswer {
  answer?: string;
  approved?: boolean;
  modified_args?: Record<string, unknown>;
  note?: string;
}

const errorOutcome = (e: ToolError): PendingOutcome => ({ ok: false, code: e.code, message: e.message, details: e.details });

/**
 * Answers a pending call once; returns the stored record with its outcome. `approver`: the door takes
 * approvals (the pending route); absent, it takes only answers and refusals (MCP elicitation).
 */
export async function answerPending(deps: RunDeps, who: { tenant: string; key_id: string }, wsId: string, id: string, body: PendingAnswer, approver?: Approver): Promise<PendingRecord> {
  const s = pendingScope(deps, who.tenant, wsId);
  const { rec, etag } = await loadPending(s, id);
  if (isClosed(rec)) throw closedError(rec);
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
  if (!approver) throw new ToolError("PERMISSION_DENIED", `Pending call ${id} waits for approval, which is not taken here: approve it in the app (POST /v1/workspaces/${wsId}/pending/${id}, a key with 'approve').`, { pending_id: id });
  return runApproved(deps, who.tenant, wsId, s, { rec, etag }, { by: who.key_id, at, ...(body.modified_args ? { modified_args: body.modified_args } : {}), ...note }, approver);
}
