/**
 * The official 2.x client (@modelcontextprotocol/client) on a workspace of a sandboxApp
 * (sandbox-app.ts), for the 2026-07-28 tasks tests: it declares the io.modelcontextprotocol/tasks
 * extension (unless told not to) and, with `onAsk`, form elicitation.
 *
 * The 2.x client has no tasks API of its own, and refuses a tools/call result whose resultType is
 * "task" (UnsupportedResultType): startTask reads the CreateTaskResult off the wire, and tasks/get|
 * update|cancel go through client.request, which sends the revision's envelope and headers.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { z } from "@hono/zod-openapi";
import { expect } from "vitest";
import type { sandboxApp, Tenant } from "./sandbox-app.js";

export const TASKS = "io.modelcontextprotocol/tasks";

export interface Conn {
  client: Client;
  /** Each tools/call's answer as sent on the wire. */
  calls: any[];
  /** Each request's method and headers. */
  sent: { method: string; headers: Headers }[];
}

export type Ask = (message: string, schema: any) => { action: "accept"; content: { answer: string } } | { action: "decline" | "cancel" };

/** An execution context as the Workers runtime gives each request: waitUntil keeps work going after the answer (here: held in `kept`). */
export function executionContext(kept: Promise<unknown>[]) {
  return { waitUntil: (p: Promise<unknown>) => void kept.push(p), passThroughOnException: () => {}, props: {} };
}

/**
 * The 2.x client on a workspace, declaring the tasks extension (unless `tasks` is false) and, with
 * `onAsk`, form elicitation; with `ctx`, each request runs with that execution context (waitUntil); with `session`, in that session (X-Session-Id).
 */
export async function connect(app: ReturnType<typeof sandboxApp>["app"], t: Tenant, opts: { tasks?: boolean; onAsk?: Ask; ctx?: ReturnType<typeof executionContext>; session?: string } = {}): Promise<Conn> {
  const capabilities = { ...(opts.tasks === false ? {} : { extensions: { [TASKS]: {} } }), ...(opts.onAsk ? { elicitation: { form: {} } } : {}) };
  const client = new Client({ name: "tasks-2026", version: "1.0.0" }, { versionNegotiation: { mode: "auto" }, capabilities });
  if (opts.onAsk) client.setRequestHandler("elicitation/create", async (req: any) => opts.onAsk!(req.params.message, req.params.requestedSchema) as never);
  const conn: Conn = { client, calls: [], sent: [] };
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await (opts.ctx ? app.request(String(input), init, undefined, opts.ctx as never) : app.request(String(input), init));
    const body = JSON.parse(String(init?.body ?? "null"));
    conn.sent.push({ method: body?.method, headers: new Headers(init?.headers) });
    if (body?.method === "tools/call" && res.headers.get("content-type")?.includes("json")) conn.calls.push(JSON.parse(await res.clone().text()));
    return res;
  };
  await client.connect(new StreamableHTTPClientTransport(new URL("http://127.0.0.1/v1/workspaces/main/mcp"), { requestInit: { headers: { authorization: `Bearer ${t.key}`, ...(opts.session ? { "x-session-id": opts.session } : {}) } }, fetch }));
  return conn;
}

const Loose = z.looseObject({});
/** tools/call answered with a task: the CreateTaskResult as the server sent it (the 2.x client itself refuses resultType "task"). */
export async function startTask(c: Conn, name: string, args: Record<string, unknown>): Promise<any> {
  await expect(c.client.callTool({ name, arguments: args })).rejects.toThrow(/Unsupported result type 'task'/);
  const answer = c.calls.at(-1);
  expect(answer.result.resultType).toBe("task");
  return answer.result;
}
export const getTask = (c: Conn, taskId: string) => c.client.request({ method: "tasks/get", params: { taskId } } as never, Loose) as Promise<any>;
export const updateTask = (c: Conn, taskId: string, inputResponses: Record<string, unknown>) => c.client.request({ method: "tasks/update", params: { taskId, inputResponses } } as never, Loose) as Promise<any>;
export const cancelTask = (c: Conn, taskId: string) => c.client.request({ method: "tasks/cancel", params: { taskId } } as never, Loose) as Promise<any>;
/** Polls tasks/get until `done` says so (each poll a new request, as a client would after pollIntervalMs). */
export async function pollUntil(c: Conn, taskId: string, done: (t: any) => boolean): Promise<any> {
  let t = await getTask(c, taskId);
  while (!done(t)) t = await getTask(c, taskId);
  return t;
}
export const ended = (t: any) => t.status === "completed" || t.status === "cancelled" || t.status === "failed";
export const text = (r: any) => (r.content as { type: string; text: string }[]).map((x) => x.text).join("");
