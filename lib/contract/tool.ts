/**
 * defineTool(): one tool = a zod input schema, the description the model reads, a
 * permission, and execute(). The schema is the validation, the OpenAPI doc and the
 * JSON Schema of the tool definition. toolApp() turns a tool into a stateless Hono app.
 */
import type { LimitsStore } from "../limits/store.js";
import type { StorageAllowances } from "../limits/storage-allowance.js";
import { z } from "@hono/zod-openapi";
import { argumentParser } from "./tool-args.js";
import type { AuthInfo, Scope } from "./caller.js";
import { cutText } from "../shared/output-cut.js";
import { ApprovalInfo } from "./tool-output.js";
import type { Workspace, WorkspaceListener } from "../workspace/workspace.js";
import type { Executor, RunLimits } from "../exec/types.js";
import type { LiveService } from "../exec/live/service.js";
import type { SearchLimits } from "../search/cpu-budget.js";
import type { SegmentCache } from "../search/segment-cache.js";
import type { ListingCache } from "../search/listing-cache.js";
import type { IsolateCache } from "../shared/isolate-cache.js";
import type { HmacKeys } from "../shared/hmac-keys.js";
import type { KeyValueStore, StorageDriver } from "../storage/types.js";

export type Permission = Scope;
export type Category = "file" | "search" | "execute" | "planning" | "web";

/**
 * What tools read of the app's wiring (AppDeps, lib/api/deps.ts, extends it and says what each
 * field holds). A tool that reads more declares it in its own folder, extending this, and types its
 * context ToolContext<ThoseDeps> (web: lib/tools/web/deps.ts); the run path's deps (lib/run/deps.ts) carry them all.
 */
export interface ToolDeps {
  storage: StorageDriver;
  kv: KeyValueStore;
  /** Tenant settings per isolate for a few seconds (lib/shared/isolate-cache.ts): the policy (keyed by tenant), a command's guard rails and git identity (keyed by their KV key); createApp makes one when absent. */
  policies?: IsolateCache;
  /** Runs bash / run_code; without it those tools answer UNAVAILABLE. */
  executor?: Executor;
  /** Tenants' limits and counters (lib/limits/: calls per minute, concurrent runs, quotas); without it nothing is limited. */
  limits?: LimitsStore;
  /** This isolate's storage allowances over `limits` (lib/limits/storage-allowance.ts: a write's quota charge off its path); createApp makes one. */
  storageAllowances?: StorageAllowances;
  /** Secret for HMAC-signed, workspace-scoped tokens (sync endpoint of the bash runner). */
  syncSecret?: string;
  /** The isolate's imported HMAC keys (lib/shared/hmac-keys.ts): the sync secret's key imported once; createApp makes one when absent. */
  hmacKeys?: HmacKeys;
  /** This API's base URL as the runner reaches it (for /v1/sync). */
  syncUrl?: string;
  /** Live sessions (keep_alive: docs/live-sessions.md), made by createApp from AppDeps.liveCoordinator; without it keep_alive answers UNAVAILABLE. */
  live?: LiveService;
  /** Limits of every command (bash, run_code) where the runner's defaults should not apply, e.g. { disk_mb: 1024 }. */
  runLimits?: Partial<RunLimits>;
  /** What one search call may spend verifying text (bytes, milliseconds) where the defaults should not apply. */
  searchLimits?: Partial<SearchLimits>;
  /** Index segment bytes grep read, per isolate (immutable; lib/search/segment-cache.ts); createApp makes one when absent. */
  segmentCache?: SegmentCache;
  /** Walks of layered workspaces' trees search made, per isolate (checked against each call's listing; lib/search/listing-cache.ts); createApp makes one when absent. */
  listingCache?: ListingCache;
  /** Status progress (grep, glob, find, web_fetch: lib/contract/progress.ts): at most one event per intervalMs (default 250; tests set 0). */
  progress?: { intervalMs?: number };
  /**
   * Pending calls (ask_user, the approval gate): how long one waits (default 24 h) and the clock (tests);
   * askWaitMs: how long an ask_user call put to an MCP client (elicitation) holds its request for the
   * answer before it answers NEEDS_INPUT (default 45 s, under the SDK client's 60 s request timeout).
   */
  pending?: { ttlMs?: number; now?: () => number; askWaitMs?: number };
}

export interface ToolContext<D extends ToolDeps = ToolDeps> {
  ws: Workspace;
  session: string;
  auth: AuthInfo;
  deps: D;
  /** Aborted when the client goes away, or when the call's key is revoked or expires (then `keyGone` too). */
  signal?: AbortSignal;
  /** Aborted only when the call's key is revoked or expires while the call goes on (lib/run/key-watch.ts): a command is killed then, streamed or not. */
  keyGone?: AbortSignal;
  /**
   * Reports progress while the call runs (SSE `progress` events, MCP notifications/progress); absent
   * when nobody listens. Tools call it as `ctx.progress?.(event)`; it never throws.
   */
  progress?: (event: ProgressEvent) => void;
  /** A human approved this call (lib/run/pending/): the gate lets it through; web_fetch may reach the approved host. */
  approved?: boolean;
  /** X-Pending-Id: the caller repeats a pending call to get its outcome instead of running it again. */
  pendingId?: string;
  /**
   * Puts an ask_user question straight to the human in front of the agent, where the door can (MCP
   * elicitation, when the client declared it: lib/doors/mcp-ask.ts). It only delivers the question:
   * the answer lands in the pending store, where ask_user waits for it. Absent: the app answers it.
   */
  askHuman?: (q: HumanQuestion) => Promise<void>;
  /** Keeps work going after the response (Workers: executionCtx.waitUntil); absent in Node, where it just continues. */
  waitUntil?: (p: Promise<unknown>) => void;
  /** Tool calls of this call's own, made as its caller (the task tool's subagent); the run path provides it (lib/run/run-tool.ts). */
  subcalls?: SubCalls;
  /**
   * The call runs as a task whose run the task layer, not its caller, put in the background
   * (bash and run_code without keep_alive: lib/run/tasks/run.ts): when the session holds a live
   * sandbox the call runs in it instead, to its end, as the same call would without a task (docs/live-sessions.md).
   */
  backgroundUnlessLive?: boolean;
}

/**
 * The run path, as a tool may use it to make calls of its own on its caller's behalf: the same
 * tools the caller may use, each call run as a direct one (allowed tools, approval gate, undo
 * journal, usage record). A tool never imports the run path; it gets this in its context.
 */
export interface SubCalls {
  /** The tools the caller may use on this workspace (the key's scopes and tool list, the workspace's), the tenant's custom tools among them. */
  usable(): Promise<Tool[]>;
  /**
   * Runs one call in a Workspace of its own over the caller's files: its own undo journal in the
   * caller's session, stamped `stampMs` (so calls keep their order), its file changes told to
   * `listener` too. Aborted by `signal` (absent: runs on). Throws the call's error.
   */
  run(tool: Tool, args: unknown, opts: { stampMs: number; listener: WorkspaceListener; signal?: AbortSignal }): Promise<ToolOutcome>;
  /**
   * The work the tool went on with after its call answered (a background subagent) ended: the run
   * path meters it, once, to the caller's key (its wall time: `ms`). Call it where the work ends.
   */
  workEnded(work: { ok: boolean; code?: string; ms: number; net?: { netBytesIn: number; netBytesOut: number } }): void;
}

export interface Usage {
  ms: number;
  bytes_read: number;
  bytes_written: number;
}

/** A tool's successful result, as every door shapes it. */
export interface ToolOutcome {
  tool: string;
  title: string;
  output: string;
  data: Record<string, unknown>;
  /** The call's undo id, when it changed files (POST /v1/workspaces/{ws}/undo). */
  call_id?: string;
  usage: Usage;
}

/** An ask_user question as a door shows it to the human: its pending call, the text, the choices. */
export interface HumanQuestion {
  pending_id: string;
  question: string;
  options?: string[];
}

/** What a running tool reports: command output as it comes, or a status line (files scanned, bytes fetched). */
export type ProgressEvent =
  /** stream "merged": stdout and stderr in arrival order (bash, run_code). */
  | { kind: "output"; stream: "stdout" | "stderr" | "merged"; text: string }
  | { kind: "status"; message: string; done?: number; total?: number };

export interface ToolResult {
  /** One line for humans (UI titles, logs). */
  title: string;
  /** The text handed to the model. */
  output: string;
  /** The same result, structured. */
  data: Record<string, unknown>;
}

/** MCP's tool annotations (hints for clients: whether a call changes anything, can be repeated, reaches outside). */
export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface Tool<S extends z.ZodObject = z.ZodObject> {
  name: string;
  /** What the model reads: purpose, rules, defaults as `(default: X)`, a closing `Returns: {...}`. */
  description: string;
  /** The short description (at most 1,024 characters) for formats that cap it (OpenAI). */
  summary: string;
  annotations: ToolAnnotations;
  /** The zod schema of `data` (test/helpers.ts validates every `data` the tests produce against it). */
  output: z.ZodObject;
  category: Category;
  permission: Permission;
  input: S;
  execute(args: z.infer<S>, ctx: ToolContext): Promise<ToolResult>;
  /** The JSON Schema of the arguments when it is not made from `input` (custom tools: the tenant's own schema). */
  inputSchema?: Record<string, unknown>;
  /**
   * What the tool runs, where that can change while the server runs: a tenant's custom tool's
   * definition as stored (its times and webhook secret aside). A held call is bound to it
   * (lib/run/pending/binding.ts): approved after the definition changed, the call is stale and never
   * runs. Absent for built-ins (one deploy, one definition).
   */
  definition?: Record<string, unknown>;
  /**
   * The argument naming the one file this tool reads whole first (read, write, edit: "file_path"):
   * the tool route starts that GET, and its session record's, beside the guard's read of the
   * workspace record (lib/workspace/early.ts). Absent: nothing is read early.
   */
  opens?: string;
  /**
   * How a call may run on a plain workspace record this isolate knows, without reading it
   * (lib/api/routes/known-workspace.ts): "read": its first read is its `opens` file, found in the upper
   * layer (read); "change": besides, its one write is If-Match the version it read, which may come
   * from the isolate's versions (lib/workspace/version-cache.ts; write, edit, multi_edit, insert);
   * "command": the tool reads no file through the API, and what it needs of the record is the
   * workspace's existence and tool list (bash: the runner reads the record itself, the layer pointer
   * included, before the command; a workspace deleted meanwhile answers NOT_FOUND there).
   * Absent: the record is read first.
   */
  onKnownRecord?: "read" | "change" | "command";
  /**
   * Starts the reads the tool will need (the tenant's settings, memoized per call), before the
   * approval gate, so they go side by side with the gate's own reads instead of after them.
   * Only reads: nothing here may change anything, since the gate may still hold the call.
   */
  startReads?: (ctx: ToolContext) => void;
  /** Set by defineTool: parseToolArgs uses it (built once per tool). */
  parseArgs?: (raw: unknown) => unknown;
  /**
   * The tool as a deployment without live sessions serves it (createApp picks it when AppDeps has no
   * liveCoordinator: docs/live-sessions.md): defineTool makes it from `liveless`, the wording without
   * keep_alive, and the input without the arguments named there. Absent: the tool is the same either way.
   */
  withoutLive?: Tool;
}

/** What a tool that takes keep_alive says and takes where live sessions are off (defineTool's `liveless`). */
export interface Liveless {
  description: string;
  summary: string;
  /** The input's arguments that only a live deployment has (keep_alive, idle_timeout_s). */
  omit: readonly string[];
}

/** Longest `summary`: OpenAI refuses a function description longer than this. */
export const MAX_SUMMARY_CHARS = 1024;

export function defineTool<S extends z.ZodObject>(spec: Tool<S> & { liveless?: Liveless }): Tool {
  const { liveless, ...tool } = spec;
  if (tool.summary.length > MAX_SUMMARY_CHARS || tool.summary.length === 0) throw new Error(`${tool.name}: summary must be 1-${MAX_SUMMARY_CHARS} characters`);
  // The argument parser is built from the schema on first use, once per tool.
  let parse: ((raw: unknown) => unknown) | undefined;
  // Any tool's call may be held and approved with changes or a note: its data may then say so (lib/run/pending/approve.ts).
  const output = tool.output.extend({ approval: ApprovalInfo.optional().openapi({ description: "Present when a human approved this call with changed arguments or a note" }) });
  const made = { ...tool, output, parseArgs: (raw: unknown) => (parse ??= argumentParser(tool.input, tool.name))(raw) } as unknown as Tool;
  if (!liveless) return made;
  for (const name of liveless.omit) {
    const arg = (tool.input.shape as Record<string, z.ZodType | undefined>)[name];
    if (!arg?.safeParse(undefined).success) throw new Error(`${tool.name}: liveless omits ${name}, which its input does not take as an optional argument`);
  }
  // The same execute takes the narrower arguments: the omitted ones are optional, and absent they mean "no live sandbox".
  const input = (tool.input as z.ZodObject).omit(Object.fromEntries(liveless.omit.map((k) => [k, true])) as never);
  return { ...made, withoutLive: defineTool({ ...(tool as unknown as Tool), description: liveless.description, summary: liveless.summary, input }) };
}

/** The tools as a deployment serves them: with live sessions (`live`) as defined, without them each tool's withoutLive where it has one. */
export const toolsServed = (tools: readonly Tool[], live: boolean): readonly Tool[] => (live ? tools : tools.map((t) => t.withoutLive ?? t));

/** A tool's arguments as models send them: null is absent; unknown and missing arguments are INVALID_ARGUMENT naming them. */
export function parseToolArgs(tool: Tool, raw: unknown): unknown {
  return tool.parseArgs ? tool.parseArgs(raw) : argumentParser(tool.input, tool.name)(raw);
}

/** Longest `output` any tool hands back, in UTF-8 bytes of kept text; tools cut earlier with their own notes. */
export const MAX_OUTPUT_CHARS = 100_000;

/**
 * Cuts text in the middle, on line boundaries, saying how many bytes and which lines of the
 * real text were left out (lib/shared/output-cut.ts, the same cut as command output).
 */
export function truncateMiddle(text: string, max: number): { text: string; truncated: boolean } {
  const r = cutText(text, max, undefined, "Ask for less: a smaller page (offset, limit) or a narrower pattern.");
  return { text: r.text, truncated: r.cut !== null };
}

/** The tool definition as listed by GET /v1/tools. */
export function toolDefinition(tool: Tool) {
  return {
    name: tool.name,
    description: tool.description,
    category: tool.category,
    permission: tool.permission,
    summary: tool.summary,
    annotations: tool.annotations,
    input_schema: inputJsonSchema(tool),
    output_schema: outputJsonSchema(tool),
  };
}

/** The JSON Schema of a tool's arguments (as the model sends them). */
export function inputJsonSchema(tool: Tool): Record<string, unknown> {
  if (tool.inputSchema) return tool.inputSchema;
  return z.toJSONSchema(tool.input, { target: "draft-2020-12", io: "input" }) as Record<string, unknown>;
}

/** The JSON Schema of a tool's `data`. */
export function outputJsonSchema(tool: Tool): Record<string, unknown> {
  return z.toJSONSchema(tool.output, { target: "draft-2020-12", io: "output" }) as Record<string, unknown>;
}
