import { z } from "@hono/zod-openapi";
import { createPending, DEFAULT_PENDING_TTL_MS, pendingScope, waitingError } from "../lib/pending/store.js";
import { defineTool } from "../lib/tool.js";

const description = `Ask the user a question and get the answer later (the app in front of this API shows it to them).
- question: what to ask, complete and self-contained. options: the choices to offer, if any (default: none, a free answer); the user may still answer in their own words.
- The call answers NEEDS_INPUT (HTTP 202) with details.pending_id: the question is stored, nothing else happens. Get the answer by repeating this call with header X-Pending-Id: <pending_id> (or GET /v1/workspaces/{ws}/pending/{id}?wait=30); until the user answers it is NEEDS_INPUT again; a question unanswered for 24 h is EXPIRED; a dismissed one is DENIED.
Returns: {question, answer, option_index} (once answered)`;

export default defineTool({
  name: "ask_user",
  description,
  summary: "Ask the user a question (optionally with choices). Answers NEEDS_INPUT with a pending_id; repeat the call with header X-Pending-Id to get the answer once the user has given it.",
  annotations: { title: "Ask the user", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  output: z.object({ question: z.string(), answer: z.string(), option_index: z.number().int().nullable(), note: z.string().optional() }),
  category: "planning",
  permission: "read",
  input: z.object({
    question: z.string().min(1).max(4000).describe("The question for the user"),
    options: z.array(z.string().min(1).max(500)).min(2).max(10).optional().describe("Choices to offer (default: none, a free answer)"),
  }),
  async execute(args, { ws, deps, session, auth }) {
    const rec = await createPending(
      pendingScope(deps, ws.tenant, ws.id),
      { kind: "input", tool: "ask_user", args, question: args.question, ...(args.options ? { options: args.options } : {}), session, key_id: auth.key_id, scopes: auth.scopes },
      deps.pending?.ttlMs ?? DEFAULT_PENDING_TTL_MS,
    );
    throw waitingError(rec, ws.id);
  },
});
