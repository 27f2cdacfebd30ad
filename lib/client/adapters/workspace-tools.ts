/**
 * What both framework adapters share (toolshed/ai-sdk, toolshed/openai-agents): a workspace's tool
 * list as GET /v1/tools gives it for the adapter's API key, and one tool call through the typed
 * client that never throws for a tool's own failure. A failed call comes back as
 * `{ok: false, code, message, details}`, whose text (`resultText`) is what the model reads, so it can
 * act on the code and the message (which says what to do next) instead of the run ending.
 */
import { createClient, ToolshedError, type ClientOptions, type ProgressEvent, type ToolName } from "../index.js";

export interface WorkspaceToolsOptions {
  /** The API root, e.g. "https://toolshed.example.com" (no trailing /v1). */
  baseUrl: string;
  /** A tenant API key (tsk_...): the tools listed are those this key may use. */
  apiKey: string;
  /** The workspace the tools work in. */
  workspace: string;
  /** The agent's conversation (X-Session-Id): read-before-edit records are kept per session (default: "default"). */
  sessionId?: string;
  /** Only these tools (names as in GET /v1/tools); default: every tool the key may use. */
  tools?: readonly string[];
  /** A fetch to use instead of globalThis.fetch. */
  fetch?: ClientOptions["fetch"];
}

/** A tool as the catalog lists it, in the shape the adapter asked for. */
export type CatalogEntry = { name: string; description: string } & Record<string, unknown>;

export type ToolOutcome =
  | { ok: true; tool: string; output: string; data: unknown }
  | { ok: false; tool: string; code: string; message: string; details: Record<string, unknown> };

export function workspaceClient(o: WorkspaceToolsOptions) {
  return createClient({ baseUrl: o.baseUrl, apiKey: o.apiKey, ...(o.fetch ? { fetch: o.fetch } : {}) });
}

/** GET /v1/tools?format=… with the adapter's key, narrowed to `o.tools` (an unknown name there is an error: a typo would silently drop a tool). */
export async function listTools(o: WorkspaceToolsOptions, format: "toolshed" | "openai"): Promise<CatalogEntry[]> {
  const client = workspaceClient(o);
  const r = await client.api.GET("/v1/tools", { params: { query: { format } } });
  if (r.error !== undefined || !r.response.ok || !r.data) {
    throw new ToolshedError({ code: "UNEXPECTED_RESPONSE", message: `GET /v1/tools answered HTTP ${r.response.status}: check baseUrl (the Toolshed API root) and apiKey.`, status: r.response.status });
  }
  const all = r.data.tools as CatalogEntry[];
  if (!o.tools) return all;
  const byName = new Map(all.map((t) => [t.name, t]));
  const missing = o.tools.filter((n) => !byName.has(n));
  if (missing.length) {
    throw new ToolshedError({
      code: "NOT_FOUND",
      message: `No tool ${missing.map((n) => `'${n}'`).join(", ")} for this key: it may use ${[...byName.keys()].join(", ")}. Fix the names in options.tools, or use a key whose scopes allow them.`,
      details: { missing, available: [...byName.keys()] },
      status: 404,
    });
  }
  return o.tools.map((n) => byName.get(n)!);
}

const failed = (tool: string, e: ToolshedError): ToolOutcome => ({ ok: false, tool, code: e.code, message: e.message, details: e.details });

/** One tool call; a ToolshedError (the tool's error, a refusal, a pending call) becomes `{ok: false}`, anything else (an abort, a network failure) is thrown. */
export async function callTool(o: WorkspaceToolsOptions, name: string, args: unknown, signal?: AbortSignal): Promise<ToolOutcome> {
  const client = workspaceClient(o);
  try {
    const r = (await client.tools.call(o.workspace, name as ToolName, args as never, { ...(o.sessionId !== undefined ? { session: o.sessionId } : {}), ...(signal ? { signal } : {}) })) as { output: string; data: unknown };
    return { ok: true, tool: name, output: r.output, data: r.data };
  } catch (e) {
    if (e instanceof ToolshedError) return failed(name, e);
    throw e;
  }
}

/**
 * One tool call as a Server-Sent Events stream: yields the tool's progress events while it runs and
 * returns its outcome (errors as in callTool). Leaving the loop early cancels the call on the server.
 */
export async function* streamTool(o: WorkspaceToolsOptions, name: string, args: unknown, signal?: AbortSignal): AsyncGenerator<ProgressEvent, ToolOutcome, void> {
  const client = workspaceClient(o);
  try {
    const it = client.tools.stream(o.workspace, name as ToolName, args as never, { ...(o.sessionId !== undefined ? { session: o.sessionId } : {}), ...(signal ? { signal } : {}) });
    for (;;) {
      const step = await it.next();
      if (step.done) {
        const r = step.value as { output: string; data: unknown };
        return { ok: true, tool: name, output: r.output, data: r.data };
      }
      yield step.value.data;
    }
  } catch (e) {
    if (e instanceof ToolshedError) return failed(name, e);
    throw e;
  }
}

/** The text the model reads for an outcome: the tool's output, or `Error <CODE>: <message>` with the details that say what to do. */
export function resultText(r: ToolOutcome): string {
  if (r.ok) return r.output;
  const json = Object.keys(r.details).length ? JSON.stringify(r.details) : "";
  const details = json ? `\n${json.length > 2000 ? `${json.slice(0, 2000)}…` : json}` : "";
  return `Error ${r.code}: ${r.message}${details}`;
}
