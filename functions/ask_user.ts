import { z } from "@hono/zod-openapi";
import { outcomeOrThrow } from "../lib/tools/pending/outcome.js";
import { createPending, DEFAULT_PENDING_TTL_MS, pendingScope, waitForAnswer, waitingError } from "../lib/tools/pending/store.js";
import { defineTool } from "../lib/contract/tool.js";

/** How long a question put to an MCP client holds the call for the answer (deps.pending.askWaitMs). */
export const DEFAULT_ASK_WAIT_MS = 45_000;

const description = `Ask the user a question and get their answer.
- question: what to ask, complete and self-contained. options: the choices to offer, if any (default: none, a free answer); the user may still answer in their own words where the app allows it.
- Where the client can ask the user itself (an MCP client with elicitation), the call waits for the answer and returns it. Otherwise it answers NEEDS_INPUT with details.pending_id: the question is stored for the app in front of this API to show; get the answer with the pending_result tool ({"pending_id": ..., "wait_seconds": 30}), which says NEEDS_INPUT again until the user answers. A question unanswered for 24 h is EXPIRED; a dismissed or declined one is DENIED.
Returns: {question, answer, option_index} (once answered)`;

export default defineTool({
  name: "ask_user",
  description,
  summary: "Ask the user a question (optionally with choices). Returns the answer where the client can ask the user itself (MCP elicitation); otherwise answers NEEDS_INPUT with a pending_id: get the answer with the pending_result tool.",
  annotations: { title: "Ask the user", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  output: z.object({ question: z.string(), answer: z.string(), option_index: z.number().int().nullable(), note: z.string().optional() }),
  category: "planning",
  permission: "read",
  input: z.object({
    question: z.string().min(1).max(4000).describe("The question for the user"),
    options: z.array(z.string().min(1).max(500)).min(2).max(10).optional().describe("Choices to offer (default: none, a free answer)"),
  }),
  async execute(args, { ws, deps, session, auth, signal, askHuman }) {
    const scope = pendingScope(deps, ws.tenant, ws.id);
    const rec = await createPending(
      scope,
      { kind: "input", tool: "ask_user", args, question: args.question, ...(args.options ? { options: args.options } : {}), session, key_id: auth.key_id, scopes: auth.scopes, ...(askHuman ? { channel: "elicitation" as const } : {}) },
      deps.pending?.ttlMs ?? DEFAULT_PENDING_TTL_MS,
    );
    if (!askHuman) throw waitingError(rec, ws.id);
    // The door puts the question to the human; their answer is written to the pending store (by
    // whichever request or isolate receives it), where this call waits for it. Not answered in
    // time: NEEDS_INPUT, and pending_result reads the answer later.
    try {
      await askHuman({ pending_id: rec.id, question: args.question, ...(args.options ? { options: args.options } : {}) });
    } catch {
      throw waitingError(rec, ws.id); // the client went away: the question stays for the app and pending_result
    }
    const now = () => (deps.pending?.now ?? Date.now)();
    const answered = await waitForAnswer(scope, rec.id, Date.now() + (deps.pending?.askWaitMs ?? DEFAULT_ASK_WAIT_MS), signal);
    return outcomeOrThrow(answered, ws.id, now());
  },
});
