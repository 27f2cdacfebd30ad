import { z } from "@hono/zod-openapi";
import { heldCallResult } from "../lib/tools/pending/outcome.js";
import { MAX_PENDING_WAIT_S, waitForAnswer } from "../lib/tools/pending/store.js";
import { defineTool } from "../lib/contract/tool.js";

const description = `Get the outcome of a call that waited for a human: an ask_user question, or a call held for approval (answered NEEDS_INPUT / NEEDS_APPROVAL with a pending_id). Nothing runs again.
- pending_id: the pending_id of that answer. wait_seconds: how long to wait for the human (default: 0, at most ${MAX_PENDING_WAIT_S}).
- Answered: ask_user's answer; approved: "A human approved this call; it ran", with the human's note and changed arguments if any, then the call's own output (or its error).
- Still waiting: NEEDS_INPUT / NEEDS_APPROVAL again: call again later (with wait_seconds), or go on with work that does not depend on it. Refused or dismissed: DENIED with the human's note (do not retry the call as it was). Unanswered for 24 h: EXPIRED (nothing ran). An id this workspace does not have: NOT_FOUND.
Returns: {pending_id, tool, status, result} (result: the call's own data)`;

export default defineTool({
  name: "pending_result",
  description,
  summary: "Get the outcome of a call that waited for a human (ask_user's answer, or a call held for approval: its result once approved, DENIED with the note once refused). pending_id from the NEEDS_INPUT / NEEDS_APPROVAL answer; wait_seconds (default 0, max 30) waits for it.",
  annotations: { title: "Pending call's outcome", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  output: z.object({ pending_id: z.string(), tool: z.string(), status: z.literal("done"), result: z.record(z.string(), z.unknown()) }),
  category: "planning",
  permission: "read",
  input: z.object({
    pending_id: z.string().min(1).max(64).describe("The pending_id of the NEEDS_INPUT / NEEDS_APPROVAL answer"),
    wait_seconds: z.number().int().min(0).max(MAX_PENDING_WAIT_S).optional().describe(`Seconds to wait for the human's answer (default: 0, at most ${MAX_PENDING_WAIT_S})`),
  }),
  async execute(args, { ws, deps, signal }) {
    // The tenant and workspace come from the caller's key and path: another tenant's id is NOT_FOUND, as a made-up one.
    const scope = { driver: deps.storage, tenant: ws.tenant, workspace: ws.id, ...(deps.pending?.now ? { now: deps.pending.now } : {}) };
    const rec = await waitForAnswer(scope, args.pending_id, Date.now() + (args.wait_seconds ?? 0) * 1000, signal);
    return heldCallResult(rec, ws.id, (deps.pending?.now ?? Date.now)());
  },
});
