/**
 * The app's side of pending calls (ask_user, the approval gate):
 *   GET  /v1/workspaces/{ws}/pending              the calls waiting for an answer (read)
 *   GET  /v1/workspaces/{ws}/pending/{id}?wait=30 one call and its outcome, long-polled (read)
 *   POST /v1/workspaces/{ws}/pending/{id}         answer it: {answer} or {approved, modified_args?, note?} (approve)
 * Answering needs the `approve` scope, which no key has by default: an agent's key cannot approve its own calls.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { toolsForTenant } from "../../tools/custom/tool.js";
import type { AppDeps } from "../deps.js";
import { answerPending } from "../../run/pending/answer.js";
import { whileKeyStands } from "../../run/key-watch.js";
import { callerNow } from "../auth/keys.js";
import { listWaiting, MAX_PENDING_WAIT_S, pendingScope, pendingView, waitForAnswer } from "../../tools/pending/store.js";
import type { Tool } from "../../contract/tool.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp, WsParam } from "./common.js";

const IdParam = WsParam.extend({ id: z.string().openapi({ param: { name: "id", in: "path" }, example: "pabcdefghijklmnopqrstuvwx" }) });
const PendingView = z
  .object({
    id: z.string(),
    kind: z.enum(["input", "approval"]),
    tool: z.string(),
    args: z.record(z.string(), z.unknown()),
    question: z.string().optional(),
    options: z.array(z.string()).optional(),
    reason: z.string().optional(),
    session: z.string(),
    status: z.enum(["pending", "running", "done", "expired", "superseded", "stale"]).openapi({ description: "superseded: the agent ran the same call itself; stale: the workspace moved past the state it was held on. Both are closed: they never run, and answering them is CONFLICT (docs/approvals.md)." }),
    created_at: z.string(),
    expires_at: z.string(),
    answer: z.record(z.string(), z.unknown()).optional(),
    asked_args: z.record(z.string(), z.unknown()).optional().openapi({ description: "What the agent asked for, when the approver changed the arguments (args is what ran)" }),
    closed: z.object({ at: z.string(), why: z.string(), by: z.string().optional().openapi({ description: "The pending call that holds the same call now" }) }).optional().openapi({ description: "Why a superseded or stale call was closed" }),
    outcome: z.record(z.string(), z.unknown()).optional().openapi({ description: "{ok: true, title, output, data} or {ok: false, code, message, details} (DENIED for a refusal)" }),
  })
  .openapi("PendingCall");
const AnswerBody = z
  .object({
    answer: z.string().max(20_000).optional().openapi({ description: "The user's answer to an ask_user question (one of its options, or free text)." }),
    approved: z.boolean().optional().openapi({ description: "For a gated call: true runs it, false refuses it (DENIED)." }),
    modified_args: z.record(z.string(), z.unknown()).optional().openapi({ description: "Run the call with these arguments instead (validated against the tool's schema)." }),
    note: z.string().max(2000).optional().openapi({ description: "Shown to the agent with the outcome." }),
  })
  .strict()
  .openapi("PendingAnswer");

export function pendingApp(deps: AppDeps, tools: readonly Tool[]) {
  const app = newApp();
  const scope = (tenant: string, workspace: string) => pendingScope(deps, tenant, workspace);
  const now = () => (deps.pending?.now ?? Date.now)();

  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "read", workspace: true }, {
      method: "get", path: "/v1/workspaces/{ws}/pending", tags: ["pending"], operationId: "pending_list",
      summary: "The calls waiting for a human: ask_user questions and calls held by the approval gate",
      request: { params: WsParam },
      responses: { 200: { description: "Waiting calls, oldest first (at most 100)", content: { "application/json": { schema: z.object({ pending: z.array(PendingView) }) } } }, ...errorResponses(401, 403, 404) },
    })),
    async (c) => {
      const { ws } = c.req.valid("param");
      const recs = await listWaiting(scope(c.get("auth").tenant, ws));
      return c.json({ pending: recs.map((r) => pendingView(r, now())) }, 200);
    },
  );

  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "read", workspace: true }, {
      method: "get", path: "/v1/workspaces/{ws}/pending/{id}", tags: ["pending"], operationId: "pending_get",
      summary: "One pending call and its outcome; with wait, holds the answer until it is done (at most 30 s)",
      request: { params: IdParam, query: z.object({ wait: z.coerce.number().min(0).max(MAX_PENDING_WAIT_S).optional().openapi({ description: "Seconds to wait for the outcome (default: 0, at most 30)" }) }) },
      responses: { 200: { description: "The call", content: { "application/json": { schema: PendingView } } }, ...errorResponses(400, 401, 403, 404) },
    })),
    async (c) => {
      const { ws, id } = c.req.valid("param");
      const until = Date.now() + (c.req.valid("query").wait ?? 0) * 1000;
      const auth = c.get("auth");
      // The wait (up to 30 s) asks the key again as it goes on: revoked or expired, key_gone (lib/run/key-watch.ts).
      const rec = await whileKeyStands(deps, auth, "this wait", c.req.raw.signal, (signal) => waitForAnswer(scope(auth.tenant, ws), id, until, signal));
      return c.json(pendingView(rec, now()), 200);
    },
  );

  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "approve", workspace: true }, {
      method: "post", path: "/v1/workspaces/{ws}/pending/{id}", tags: ["pending"], operationId: "pending_answer",
      summary: "Answer a pending call: {answer} for ask_user, {approved, modified_args?, note?} for a gated call",
      description: "Needs the `approve` scope. An answer is taken once (a second one: CONFLICT); an expired call: EXPIRED; a superseded or stale call (the agent ran it itself, or the workspace moved past the state it was held on): CONFLICT, and nothing runs. Approving runs the call (with modified_args when given, validated again) with the calling agent's session and the scopes its key still has (a revoked key's call runs nothing: outcome PERMISSION_DENIED), and stores its result, which tells the agent of changed arguments and the note; refusing stores a DENIED outcome with the note.",
      request: { params: IdParam, body: { required: true, content: { "application/json": { schema: AnswerBody } } } },
      responses: { 200: { description: "The answered call with its outcome", content: { "application/json": { schema: PendingView } } }, ...errorResponses(400, 401, 403, 404, 409, 410) },
    })),
    async (c) => {
      const { ws, id } = c.req.valid("param");
      const auth = c.get("auth");
      // The tenant's custom tools too (the one join): a gated custom-tool call runs once approved.
      const approver = { tools: await toolsForTenant(deps, tools, auth.tenant), currentKey: (tenant: string, keyId: string) => callerNow(deps, tenant, keyId) };
      const rec = await answerPending(deps, { tenant: auth.tenant, key_id: auth.key_id }, ws, id, c.req.valid("json"), approver);
      return c.json(pendingView(rec, now()), 200);
    },
  );
  return app;
}
