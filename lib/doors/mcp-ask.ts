/**
 * ask_user over MCP by elicitation, on a stateless door (docs/mcp-pending.md).
 *
 * The protocol: the server sends `elicitation/create` on the SSE stream of the tools/call POST and
 * the client answers it with a JSON-RPC response in a NEW POST. Here every POST gets its own server
 * and transport, possibly in another isolate (on Lambda certainly: the waiting one is busy), so
 * nothing in memory can join the two. The pending store joins them instead:
 *   1. initialize: a client that declares form elicitation gets an Mcp-Session-Id starting "ask-"
 *      (it repeats it on every request: the one thing a stateless server can learn from it later);
 *      no session id otherwise, as before.
 *   2. tools/call ask_user from such a client: answered as SSE; ask_user stores its pending call
 *      (channel "elicitation"), this door sends elicitation/create with the JSON-RPC id
 *      "toolshed-ask:<pending_id>", and ask_user waits for the answer in the store (lib/tools/pending/store.ts waitForAnswer).
 *   3. The client's response POST, whatever isolate takes it: its id names the pending call; the
 *      answer is taken once (answerPending: a conditional write) when the call is this key's, put
 *      to a client, still waiting. accept → the answer; decline / cancel → DENIED with a note.
 *   4. The waiting call reads the answer and returns it; not answered within deps.pending.askWaitMs,
 *      it answers NEEDS_INPUT and the model reads the answer later with pending_result.
 * Only ask_user's questions go this way; approvals do not (an elicitation answer comes from whoever
 * holds the calling key, and that key may not approve its own calls: docs/mcp-pending.md).
 */
import { ElicitResultSchema, type ClientCapabilities, type JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { AuthInfo } from "../contract/caller.js";
import type { RunDeps } from "../run/deps.js";
import { ERROR_CODES, ToolError } from "../shared/errors.js";
import { randomId } from "../shared/hash.js";
import { toToolError } from "../contract/errors.js";
import { jsonRpcError, JSON_RPC } from "./json-rpc.js";
import { answerPending, type PendingAnswer } from "../run/pending/answer.js";
import { loadPending } from "../tools/pending/store.js";
import type { HumanQuestion } from "../contract/tool.js";
import { pendingAnswerOf, type CallTaskAnswer } from "../run/tasks/input.js";

/** The Mcp-Session-Id of a client that answers form elicitation. */
const ASK_SESSION_PREFIX = "ask-";
/** The JSON-RPC id of an elicitation/create this door sends: the prefix and the pending call's id. */
const ASK_ID_PREFIX = "toolshed-ask:";
/** Longest answer taken (as POST .../pending/{id} {answer}). */
const MAX_ANSWER_CHARS = 20_000;

type Message = { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown } | null;
const messagesOf = (body: unknown): Message[] => (Array.isArray(body) ? body : [body]) as Message[];

/** The session id for this initialize request: one marking a client that answers form elicitation, else none (stateless as before). */
export function askSessionFor(body: unknown): (() => string) | undefined {
  const init = messagesOf(body).find((m) => m?.method === "initialize");
  const caps = (init?.params as { capabilities?: ClientCapabilities } | undefined)?.capabilities;
  const e = caps?.elicitation;
  if (!e || typeof e !== "object") return undefined;
  // An empty elicitation object means form mode (2025-06-18); from 2025-11-25 a client lists its modes.
  const form = "form" in e ? e.form !== undefined : !("url" in e);
  return form ? () => `${ASK_SESSION_PREFIX}${randomId(24)}` : undefined;
}

/** Whether the request comes from a client that declared form elicitation at initialize. */
export const clientAnswersAsks = (req: Request) => req.headers.get("mcp-session-id")?.startsWith(ASK_SESSION_PREFIX) === true;

/** Whether the body holds a tools/call (answered as SSE for such a client, so a question can go out on its stream). */
export const hasToolCall = (body: unknown) => messagesOf(body).some((m) => m?.method === "tools/call");

/** The form that puts an ask_user question to the client's user: its message and one `answer` field (a choice when it has options). Both revisions' elicitation carries it. */
export function questionForm(q: Pick<HumanQuestion, "question" | "options">) {
  const answer = q.options
    ? { type: "string" as const, title: "Answer", description: "Choose one", enum: q.options }
    : { type: "string" as const, title: "Answer", description: "Your answer", maxLength: MAX_ANSWER_CHARS };
  return { message: q.question, requestedSchema: { type: "object" as const, properties: { answer }, required: ["answer"] } };
}

/** The elicitation/create request that puts an ask_user question to the client's user. */
export function elicitationRequest(q: HumanQuestion): JSONRPCRequest {
  return { jsonrpc: "2.0", id: `${ASK_ID_PREFIX}${q.pending_id}`, method: "elicitation/create", params: { ...questionForm(q), _meta: { "toolshed/pending_id": q.pending_id } } };
}

/** An elicitation result as the answer to a question (accepted with content.answer, declined, dismissed); null when it is not a valid one. */
export function elicitAnswer(result: unknown): CallTaskAnswer | null {
  const r = ElicitResultSchema.safeParse(result);
  if (!r.success) return null;
  if (r.data.action !== "accept") return { action: r.data.action };
  const answer = r.data.content?.answer;
  return typeof answer === "string" && answer.length <= MAX_ANSWER_CHARS ? { action: "accept", answer } : null;
}

interface AskAnswer {
  pending_id: string;
  result?: unknown;
  error?: unknown;
}

/** The client's answers to this door's questions, when the body holds only those (else null: the SDK takes it). */
export function askAnswersIn(body: unknown): AskAnswer[] | null {
  const msgs = messagesOf(body);
  const answers: AskAnswer[] = [];
  for (const m of msgs) {
    if (!m || m.method !== undefined || typeof m.id !== "string" || !m.id.startsWith(ASK_ID_PREFIX) || (m.result === undefined && m.error === undefined)) return null;
    answers.push({ pending_id: m.id.slice(ASK_ID_PREFIX.length), result: m.result, error: m.error });
  }
  return answers.length ? answers : null;
}

/** What an elicitation result means for the pending question; a malformed one is INVALID_ARGUMENT. */
function answerOf(a: AskAnswer): PendingAnswer {
  const answer = elicitAnswer(a.result);
  if (!answer) throw new ToolError("INVALID_ARGUMENT", `The elicitation result for pending call ${a.pending_id} is not a valid answer: {action: "accept"} with content.answer (a string of at most ${MAX_ANSWER_CHARS} characters, the form's one field), or {action: "decline" | "cancel"}.`, { pending_id: a.pending_id });
  return pendingAnswerOf(answer);
}

/**
 * Answers a question this door put to the calling key's client (pending call `pendingId`), once:
 * never an approval, never another key's call, never a question not put to a client (PERMISSION_DENIED).
 */
export async function answerAsk(deps: RunDeps, auth: AuthInfo, wsId: string, pendingId: string, answer: PendingAnswer): Promise<void> {
  const { rec } = await loadPending({ driver: deps.storage, tenant: auth.tenant, workspace: wsId }, pendingId);
  if (rec.kind !== "input" || rec.channel !== "elicitation" || rec.key_id !== auth.key_id) {
    throw new ToolError("PERMISSION_DENIED", `Pending call ${pendingId} was not put to this client as a question; answer it in the app (POST /v1/workspaces/${wsId}/pending/${pendingId}, a key with 'approve').`, { pending_id: pendingId });
  }
  await answerPending(deps, { tenant: auth.tenant, key_id: auth.key_id }, wsId, pendingId, answer);
}

/**
 * Takes the client's answers (a POST holding only responses to this door's elicitation requests):
 * 202 once each is stored; an error status with a JSON-RPC error otherwise (the question is still
 * waiting, or was answered already: CONFLICT). A client's error response stores nothing: the
 * question stays for the app, and the waiting call answers NEEDS_INPUT when its wait ends.
 */
export async function takeAskAnswers(deps: RunDeps, auth: AuthInfo, wsId: string, answers: AskAnswer[]): Promise<Response> {
  try {
    for (const a of answers) {
      if (a.result === undefined) continue;
      await answerAsk(deps, auth, wsId, a.pending_id, answerOf(a));
    }
    return new Response(null, { status: 202 });
  } catch (err) {
    const e = toToolError(err);
    if (e.code === "INTERNAL") console.error("internal error (mcp elicitation answer)", err instanceof Error ? err.stack ?? err.message : String(err));
    return jsonRpcError(ERROR_CODES[e.code].status, JSON_RPC.invalidParams, `${e.code}: ${e.message}`, { error: e });
  }
}
