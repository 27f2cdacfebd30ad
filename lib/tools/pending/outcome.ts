/**
 * Reading the outcome of a pending call.
 *
 * Reading a pending call's outcome (answering one: lib/run/pending/answer.ts). Imports nothing of the
 * run path, which calls it (lib/run/run-tool.ts: X-Pending-Id).
 *
 * pendingOutcome: what a repeat of the original call with X-Pending-Id answers: the stored
 * result as the tool's own result, the stored error as the tool's error, CONFLICT saying why for
 * a closed call, or NEEDS_* while it waits.
 */
import { ToolError, type ErrorCode, ERROR_CODES } from "../../shared/errors.js";
import type { Tool, ToolContext, ToolDeps } from "../../contract/tool.js";
import { closedError, expiredError, isClosed, isExpired, loadPending, pendingScope, waitingError, type PendingRecord } from "./store.js";

export const nowOf = (deps: Pick<ToolDeps, "pending">) => (deps.pending?.now ?? Date.now)();

/** The outcome of a stored call as the tool's own result, or its error thrown; NEEDS_* while it waits. */
export function outcomeOrThrow(rec: PendingRecord, ws: string, now: number) {
  if (isExpired(rec, now)) throw expiredError(rec);
  if (isClosed(rec)) throw closedError(rec);
  if (rec.status !== "done" || !rec.outcome) throw waitingError(rec, ws);
  const o = rec.outcome;
  if (o.ok) return { title: o.title, output: o.output, data: o.data };
  const code = (o.code in ERROR_CODES ? o.code : "INTERNAL") as ErrorCode;
  throw new ToolError(code, o.message, { ...o.details, pending_id: rec.id });
}

/** X-Pending-Id of a request, when set: the app repeats a held call to read its outcome (the call runs nothing). */
export const pendingIdOf = (headers: Headers): string | undefined => headers.get("x-pending-id") || undefined;

/** X-Pending-Id on a tool call: the outcome of that pending call of this tool (nothing runs). */
export async function pendingOutcome(tool: Tool, id: string, ctx: ToolContext) {
  const { rec } = await loadPending(pendingScope(ctx.deps, ctx.ws.tenant, ctx.ws.id), id);
  if (rec.tool !== tool.name) {
    throw new ToolError("INVALID_ARGUMENT", `Pending call ${id} is a ${rec.tool} call, not ${tool.name}: repeat it on the ${rec.tool} tool, or drop the X-Pending-Id header to make a new call.`, { pending_id: id, tool: rec.tool });
  }
  return outcomeOrThrow(rec, ctx.ws.id, nowOf(ctx.deps));
}

/**
 * A held call's outcome as the pending_result tool answers it (any door): what the human decided
 * is said in the text the model reads (invariant 13). An approval's changed arguments or note are
 * already at the top of the stored outcome (lib/run/pending/approve.ts); a plain approval gets one line
 * saying a human approved it. `data` wraps the tool's data. A refusal, expiry, closed call or the
 * approved call's own failure is thrown (DENIED, EXPIRED, CONFLICT, the tool's code), NEEDS_* while it waits.
 */
export function heldCallResult(rec: PendingRecord, ws: string, now: number) {
  const approved = rec.kind === "approval" && rec.answer?.approved === true;
  const told = (text: string) => text.startsWith("A human approved");
  let r;
  try {
    r = outcomeOrThrow(rec, ws, now);
  } catch (e) {
    if (!approved || !(e instanceof ToolError) || rec.status !== "done" || told(e.message)) throw e;
    throw new ToolError(e.code, `A human approved this ${rec.tool} call; it ran and failed: ${e.message}`, e.details);
  }
  const head = approved && !told(r.output) ? `A human approved this ${rec.tool} call; it ran.\n` : "";
  return { title: r.title, output: `${head}${r.output}`, data: { pending_id: rec.id, tool: rec.tool, status: "done" as const, result: r.data } };
}
