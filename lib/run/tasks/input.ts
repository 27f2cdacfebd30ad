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
import { answerPending, type PendingAnswer } from "../pending/answer.js";
import { loadPending, pendingScope } from "../../tools/pending/store.js";
import { nowOf, outcomeOrThrow } from "../../tools/pending/outcome.js";
import type { Tool } from "../../contract/tool.js";
import type { Workspace } from "../../workspace/workspace.js";
import { runTool, type CallScope } from "../run-tool.js";
import type { CallTaskDeps } from "./advance.js";
import { getCallTask } from "./run.js";
import { loadCallTask, type CallTaskRecord } from "./store.js";

/** What a task waiting for input asks: a question for the client's user, or an approval the app takes. */
export type CallTaskInput =
  | { kind: "question"; pending_id: string; question: string; options?: string[] }
  | { kind: "approval"; pending_id: string; tool: string; reason?: string };

/** The client's answer to a question: accepted with the answer, declined, or dismissed. */
export type CallTaskAnswer = { action: "accept"; answer: string } | { action: "decline" } | { action: "cancel" };

/** The client's answer as the pending call's answer (POST .../pending/{id} body): the answer, or a refusal saying how the user refused. */
export function pendingAnswerOf(a: CallTaskAnswer): PendingAnswer {
  if (a.action === "accept") return { answer: a.answer };
  return { approved: false, note: a.action === "decline" ? "The user declined to answer in the MCP client." : "The user dismissed the question in the MCP client without answering." };
}

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
  await answerPending(s.deps, { tenant: s.tenant, key_id: s.key_id }, s.workspace, pendingId, pendingAnswerOf(a));
  return getCallTask(s, id);
}

/** Why ask_user's question is not waited on in the request: the door puts it in the call's answer (an input request) instead. */
const ASKED_IN_ANSWER = "asked in the call's answer";

/**
 * ask_user with its question marked for the client (channel "elicitation"), for a door that puts it
 * in the call's answer and takes the answer on the client's retry (MCP 2026-07-28 input requests,
 * without a task): the question as stored. A call that ends otherwise throws its error.
 */
export async function askClient(tool: Tool, args: unknown, scope: CallScope & { ws: Workspace }): Promise<CallTaskInput & { kind: "question" }> {
  try {
    await runTool(tool, args, { ...scope, askHuman: async () => { throw new Error(ASKED_IN_ANSWER); } });
  } catch (e) {
    const id = e instanceof ToolError && e.code === "NEEDS_INPUT" && typeof e.details.pending_id === "string" ? e.details.pending_id : null;
    if (!id) throw e;
    const { rec } = await loadPending(pendingScope(scope.deps, scope.auth.tenant, scope.wsId), id);
    return { kind: "question", pending_id: id, question: rec.question ?? "", ...(rec.options ? { options: rec.options } : {}) };
  }
  throw new ToolError("INTERNAL", `${tool.name} answered without asking; only ask_user's question is put to the client.`);
}

/** The outcome of a question once answered (ask_user's result: the answer), or its error (DENIED when the user declined). */
export async function questionOutcome(s: CallTaskDeps, pendingId: string): Promise<{ title: string; output: string; data: Record<string, unknown> }> {
  const { rec } = await loadPending(pendingScope(s.deps, s.tenant, s.workspace), pendingId);
  return outcomeOrThrow(rec, s.workspace, nowOf(s.deps));
}
