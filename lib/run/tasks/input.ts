/**
 * A call task's input request, for a door to put to its client, and the client's answer: the half
 * of the task layer a 2026-07-28 door needs for `tasks/get` (inputRequests) and `tasks/update`
 * (inputResponses); the 2025-11-25 door puts the question as elicitation/create on tasks/result and
 * takes the answer through lib/doors/mcp-ask.ts, which ends in the same answerPending.
 *
 * Only an ask_user question put to this client (started with clientAnswers: channel "elicitation")
 * is answered by it. An approval never is: the calling key may not approve its own calls
 * (docs/mcp-pending.md); it waits for the human's answer through the pending-call API.
 */
import { ToolError } from "../../shared/errors.js";
import { answerPending } from "../pending/answer.js";
import { loadPending, pendingScope } from "../../tools/pending/store.js";
import type { CallTaskDeps } from "./advance.js";
import { getCallTask } from "./run.js";
import { loadCallTask, type CallTaskRecord } from "./store.js";

/** What a task waiting for input asks: a question for the client's user, or an approval the app takes. */
export type CallTaskInput =
  | { kind: "question"; pending_id: string; question: string; options?: string[] }
  | { kind: "approval"; pending_id: string; tool: string; reason?: string };

/** The client's answer to a question: accepted with the answer, declined, or dismissed. */
export type CallTaskAnswer = { action: "accept"; answer: string } | { action: "decline" } | { action: "cancel" };

/** What the task waits for, when it is input_required and its held call still waits; null otherwise. */
export async function callTaskInput(s: CallTaskDeps, rec: CallTaskRecord): Promise<CallTaskInput | null> {
  if (rec.status !== "input_required" || !rec.pending_id) return null;
  const { rec: held } = await loadPending(pendingScope(s.deps, s.tenant, s.workspace), rec.pending_id);
  if (held.status !== "pending") return null;
  if (held.kind === "input" && held.channel === "elicitation") return { kind: "question", pending_id: held.id, question: held.question ?? "", ...(held.options ? { options: held.options } : {}) };
  return { kind: "approval", pending_id: held.id, tool: held.tool, ...(held.reason ? { reason: held.reason } : {}) };
}

/**
 * Answers the question task `id` waits on (pending call `pendingId`) with the client's answer, once
 * (a second answer: CONFLICT), and returns the task moved on. An approval, a question not put to this
 * client, or another task's held call: PERMISSION_DENIED.
 */
export async function answerCallTask(s: CallTaskDeps, id: string, pendingId: string, a: CallTaskAnswer): Promise<CallTaskRecord> {
  const { rec } = await loadCallTask(s, id);
  const input = rec.pending_id === pendingId ? await callTaskInput(s, rec) : null;
  if (!input || input.kind !== "question") {
    throw new ToolError("PERMISSION_DENIED", `Task ${id} does not wait on a question put to this client as ${pendingId}: an approval is answered in the app (POST /v1/workspaces/${s.workspace}/pending/{id}, a key with 'approve').`, { task_id: id, pending_id: pendingId.slice(0, 40) });
  }
  const body = a.action === "accept" ? { answer: a.answer } : { approved: false, note: a.action === "decline" ? "The user declined to answer in the MCP client." : "The user dismissed the question in the MCP client without answering." };
  await answerPending(s.deps, { tenant: s.tenant, key_id: s.key_id }, s.workspace, pendingId, body);
  return getCallTask(s, id);
}
