/**
 * The audit entry of one tool call, written from the one place every door's call passes
 * (lib/run/run-tool.ts executeTool): a call of a tool that may change something (any permission
 * but `read`), refused, held for approval, failed or done. Read-only tools are not recorded, nor is
 * the repeat of a pending call (X-Pending-Id), which only reads that call's outcome.
 */
import type { Tool, ToolContext, ToolDeps } from "../../contract/tool.js";
import { ERROR_CODES, isToolError, type ErrorCode } from "../../shared/errors.js";
import { filesTouched, newAuditId, toolCallArgs, type AuditDoor, type AuditEntry } from "./entry.js";
import { recordAudit } from "./store.js";
import type { WaitUntil } from "../../shared/after-answer.js";
import { WORKSPACE_DELETED } from "../../exec/runs.js";

/** Whether this call leaves an entry: never where the operator turned audit off (RunDeps.audit). */
export const isAudited = (tool: Tool, ctx: ToolContext<ToolDeps & { audit?: boolean }>): boolean => ctx.deps.audit !== false && tool.permission !== "read" && !ctx.pendingId;

export interface ToolCallEnd {
  /** The call's result data (success) or the error it threw. */
  data?: Record<string, unknown>;
  error?: unknown;
  call_id?: string;
  /** The paths the call's undo record named. */
  journal?: readonly string[];
}

/**
 * Records the call; awaited only where the runtime has no waitUntil (never fails the call). The entry
 * is built after the answer where the runtime allows (recordAudit): only its time and the call's
 * context are taken now (the journal is copied: a workspace's next call starts a new one).
 */
export function auditToolCall(tool: Tool, rawArgs: unknown, ctx: ToolContext, end: ToolCallEnd, door: AuditDoor, background?: WaitUntil): Promise<void> {
  // Its workspace was deleted while it ran (lib/exec/runs.ts): the log went with it, and nothing is written into a gone workspace.
  if (isToolError(end.error) && end.error.details.reason === WORKSPACE_DELETED) return Promise.resolve();
  const now = new Date();
  const { tenant, key_id } = ctx.auth;
  const workspace = ctx.ws.id;
  const session = ctx.session;
  const journal = end.journal ? [...end.journal] : undefined;
  const entry = (): AuditEntry => {
    const err = end.error === undefined ? undefined : isToolError(end.error) ? end.error : null;
    const code: string | undefined = end.error === undefined ? undefined : err ? err.code : "INTERNAL";
    const status = code ? (ERROR_CODES[code as ErrorCode]?.status ?? 500) : 200;
    const callId = end.call_id ?? (typeof err?.details.call_id === "string" ? err.details.call_id : undefined);
    const files = filesTouched(journal, end.data);
    return {
      id: newAuditId(now),
      at: now.toISOString(),
      tenant,
      workspace,
      key_id,
      session,
      door,
      tool: tool.name,
      args: toolCallArgs(rawArgs),
      outcome: { ok: !code, status, ...(code ? { code } : {}) },
      ...(files.length ? { files } : {}),
      ...(callId ? { call_id: callId } : {}),
    };
  };
  return recordAudit(ctx.deps.storage, entry, background);
}
