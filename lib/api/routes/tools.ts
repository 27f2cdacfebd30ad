/**
 * POST /v1/workspaces/{ws}/tools/{tool}: one stateless Hono app per tool, and the answer for a tool
 * that does not exist (the catalog, GET /v1/tools: tool-catalog.ts).
 *
 * The one wrapper every tool call goes through: meter (first, so that refusals are metered too),
 * guard (key, the tool's permission, the workspace), arguments as models send them
 * (lib/contract/tool-args.ts), the tool, the envelope. Every response carries `usage`; a call whose key
 * was valid emits one usage record, success or failure (lib/run/metering/usage.ts), but for one its
 * Idempotency-Key answered without running it (lib/api/idempotency.ts answeredByKey).
 */
import { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { toolsForTenant } from "../../tools/custom/tool.js";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../../shared/errors.js";
import type { AppEnv } from "../http.js";
import { CallMeter, emitUsage, emitUsageAtEnd } from "../../run/metering/usage.js";
import { checkSessionId, normalizeFilePath, fileKey, filesPrefix, packKey } from "../../layout/paths.js";
import { startEarly, type LowerRange } from "../../workspace/early.js";
import { readRecordOnPath } from "../../workspace/session-files.js";
import { executeTool, openWorkspace as openToolWorkspace } from "../../run/run-tool.js";
import { readMeta } from "../../layers/open.js";
import { unknownToolError } from "../../run/toolset.js";
import { streamToolCall, wantsEventStream } from "../../doors/sse.js";
import type { Tool } from "../../contract/tool.js";
import { addRoute } from "./access.js";
import { readJsonBody } from "./json-body.js";
import { backgroundOf, newApp, requireWorkspace, WsParam } from "./common.js";
import { knownAnyRecord, knownFiles, knownPlainRecord, mayRunAgain, type KnownFilesState } from "./known-workspace.js";
import type { StorageDriver } from "../../storage/types.js";
import { pendingIdOf } from "../../tools/pending/outcome.js";
import { answeredByKey } from "../idempotency.js";

const Usage = z.object({ ms: z.number(), bytes_read: z.number(), bytes_written: z.number() }).openapi("Usage");

/** The envelope of a tool's success, its `data` documented by the tool's output schema. */
const successSchema = (tool: Tool) =>
  z.object({
    ok: z.literal(true),
    tool: z.literal(tool.name),
    title: z.string(),
    output: z.string().openapi({ description: "The text for the model." }),
    data: tool.output.openapi({ description: "The same result, structured (the tool's output schema; GET /v1/tools shows it as output_schema)." }),
    call_id: z.string().optional().openapi({ description: "Present when the call changed files: undo it with POST /v1/workspaces/{ws}/undo {call_id}." }),
    usage: Usage,
  });

const ToolErrorSchema = z
  .object({
    ok: z.literal(false),
    tool: z.string(),
    error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }),
    usage: Usage,
  })
  .openapi("ToolError");

const toolErrors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { description: "Error (with the call's usage)", content: { "application/json": { schema: ToolErrorSchema } } }]));

/** First on every tool route: names the tool, starts its meter, and emits its usage record once the call has ended. */
function meterToolCall(deps: AppDeps, name: (c: Parameters<MiddlewareHandler<AppEnv>>[0]) => string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const tool = name(c);
    const call = new CallMeter(tool);
    c.set("tool", tool);
    c.set("call", call);
    await next();
    const auth = c.get("auth");
    if (!auth) return; // no valid key: nobody to bill
    if (answeredByKey(c)) return; // the Idempotency-Key's kept answer or its refusal: nothing ran (lib/api/idempotency.ts)
    const record = () => {
      const code = call.code ?? (c.res.status >= 400 ? `HTTP_${c.res.status}` : undefined);
      return { tenant: auth.tenant, workspace: (c.req.param("ws") ?? "").slice(0, 100), key: auth.key_id, tool, ok: !code, ...(code ? { code } : {}), ...call.usage(), ...call.sandbox(), ...call.net() };
    };
    // A streamed call is billed once its result event is sent (its response is long on its way);
    // any other once its response is (lib/run/metering/usage.ts).
    if (call.done) emitUsageAtEnd(deps.onUsage, call.done, record, backgroundOf(c));
    else emitUsage(deps.onUsage, record(), backgroundOf(c));
  };
}
/** A tool as a stateless Hono app: meter, guard, arguments, workspace, envelope. Mountable or deployable alone. */
export function toolApp(tool: Tool, deps: AppDeps) {
  const app = newApp();
  addRoute(
    app, deps,
    {
      method: "post",
      path: `/v1/workspaces/:ws/tools/${tool.name}`,
      access: { auth: "tenant", scope: tool.permission, workspace: true, runsTools: true },
      before: [meterToolCall(deps, () => tool.name)],
      ...(tool.opens ? { early: (c: Context<AppEnv>) => startToolReads(c, tool, deps) } : {}),
      // A plain workspace's known record is enough for read when its file's GET finds it, and for a
      // change tool whose file's version the isolate holds (known-workspace.ts).
      ...(tool.opens && (tool.onKnownRecord === "read" || tool.onKnownRecord === "change") ? { knownWorkspace: (c: Context<AppEnv>) => tool.onKnownRecord === "read" || c.get("early")?.fromVersions === true } : {}),
      // A command tool needs of the record only what a known one says, plain or layered: the workspace exists, and its tool list.
      ...(tool.onKnownRecord === "command" ? { knownWorkspace: (c: Context<AppEnv>) => !wantsEventStream(c.req.header("accept")), knownLayered: true as const } : {}),
      doc: {
        operationId: `tool_${tool.name}`,
        tags: ["tools"],
        summary: tool.annotations.title,
        description: tool.description,
        request: {
          params: WsParam,
          headers: z.object({
            "x-session-id": z.string().optional().openapi({ description: "The agent's conversation; scopes file records (default: default)." }),
            "x-pending-id": z.string().optional().openapi({ description: "The pending_id of an earlier NEEDS_INPUT / NEEDS_APPROVAL answer: returns that call's outcome instead of running anew." }),
          }),
          body: { required: true, content: { "application/json": { schema: tool.input } } },
        },
        responses: {
          200: {
            description: "Tool result. With `Accept: text/event-stream`: Server-Sent Events, `progress` events (JSON: {kind: \"output\", stream, text} or {kind: \"status\", message, done?, total?}) while the tool runs, then exactly one `result` event whose data is this envelope or the error envelope.",
            content: { "application/json": { schema: successSchema(tool) }, "text/event-stream": { schema: z.string().openapi({ description: "event: progress|result, data: JSON" }) } },
          },
          ...toolErrors(202, 400, 401, 403, 404, 408, 410, 409, 413, 415, 422, 429, 500, 501, 502, 503),
        },
      },
    },
    async (c) => runOnWorkspace(c, tool, deps),
  );
  return app;
}

/** Files up to this size are also read early from their pack (LowerRange): the price of a wrong guess is one GET of at most this. */
const EARLY_LOWER_MAX_BYTES = 1024 * 1024;

/**
 * Where the isolate's known record of a layered workspace and its manifest (both in memory, no I/O)
 * put a file's bytes: a pack's range, or undefined (plain, unknown, not cached, not in the lower
 * layer, empty or large). Only a guess: early.ts says why a wrong one reads nothing wrong.
 */
function knownLowerRange(deps: AppDeps, tenant: string, ws: string, path: string): LowerRange | undefined {
  const base = knownAnyRecord(deps.knownWorkspaces, tenant, ws)?.meta.base;
  const m = base ? deps.manifests?.peek(tenant, base) : undefined;
  const e = m?.find(path);
  if (!m || !e || e.pack < 0 || e.size === 0 || e.size > EARLY_LOWER_MAX_BYTES) return undefined;
  return { key: packKey(tenant, m.packs[e.pack]!), offset: e.offset, length: e.size };
}

/**
 * The file a tool opens (its `opens` argument) and its session record, read beside the guard's read
 * of the workspace record (lib/workspace/early.ts). Arguments that are not a valid path or session
 * start nothing: the tool refuses them as before.
 */
function startToolReads(c: Context<AppEnv>, tool: Tool, deps: AppDeps): void {
  const raw = (c.get("json") as Record<string, unknown> | undefined)?.[tool.opens!];
  if (typeof raw !== "string") return;
  try {
    const session = checkSessionId(c.req.header("x-session-id") ?? "default");
    const tenant = c.get("auth").tenant;
    const ws = c.req.param("ws") ?? "";
    const path = normalizeFilePath(raw);
    // A change tool on a known plain record over a version the isolate holds: no GET of the file.
    const fromVersions = tool.onKnownRecord === "change" && knownPlainRecord(deps.knownWorkspaces, tenant, ws) !== undefined && deps.versions?.peek(fileKey(tenant, ws, path)) !== undefined;
    // A tool that changes nothing only records its read: its record may wait for the answer (session-files.ts).
    const record = tool.permission !== "read" || readRecordOnPath(backgroundOf(c), deps.knownRecords !== undefined);
    const lower = tool.onKnownRecord === "read" ? knownLowerRange(deps, tenant, ws, path) : undefined;
    c.set("early", startEarly(deps, tenant, ws, session, path, { fromVersions, record, ...(lower ? { lower } : {}) }));
  } catch {
    // an invalid path, session or workspace id: the call itself says so
  }
}

/**
 * The tool route's body once the call is authorized. On a workspace record this isolate only knows
 * (known-workspace.ts), the call runs with its files' storage limited to what that record can
 * answer; when that is not enough (StaleRecord, before anything was done), or a change tool's
 * answer rests on the isolate's version of its file and is not a landed write (a refusal:
 * NO_CHANGE, NOT_READ, old_string not found…), the record is read and the call runs again as any
 * other. Never once a write landed (mayRunAgain). The try that is run again leaves no audit entry
 * (executeTool's runsAgain): one call, one entry. A streamed call reads the record first.
 */
async function runOnWorkspace(c: Context<AppEnv>, tool: Tool, deps: AppDeps) {
  const seen = c.get("workspace");
  // A command tool on a known record runs once, as on a read one: it never runs again (a command is not repeated).
  if (seen?.known && tool.onKnownRecord === "command") return runCall(c, tool, deps);
  if (seen?.known) {
    if (!wantsEventStream(c.req.header("accept"))) {
      let state: KnownFilesState | undefined;
      const versions = tool.onKnownRecord === "change" ? deps.versions : undefined;
      // A try that is run again is not the call: only the run that answers leaves its audit entry.
      const runsAgain = (e: unknown) => state !== undefined && mayRunAgain(state, e);
      const files = (s: StorageDriver) => {
        const known = knownFiles(s, filesPrefix(seen.tenant, seen.id), versions, c.get("call")?.started);
        state = known.state;
        return known.storage;
      };
      try {
        return await runCall(c, tool, deps, { files, runsAgain });
      } catch (e) {
        if (!runsAgain(e)) throw e;
      }
    }
    c.set("workspace", { tenant: seen.tenant, id: seen.id, record: await requireWorkspace(deps.storage, seen.tenant, seen.id, deps.knownWorkspaces) });
  }
  return runCall(c, tool, deps);
}

/** A try of a call on a known record: its files' storage (knownFiles), and which of its errors the route runs it again after. */
interface KnownTry {
  files: (s: StorageDriver) => StorageDriver;
  runsAgain: (e: unknown) => boolean;
}

/** Workspace, arguments, the tool, the envelope. */
async function runCall(c: Context<AppEnv>, tool: Tool, deps: AppDeps, known?: KnownTry) {
      const auth = c.get("auth");
      const call = c.get("call")!;
      const wsId = c.req.param("ws") ?? "";
      const session = checkSessionId(c.req.header("x-session-id") ?? "default");
      // The workspace's files through the merged view when it has a lower layer, with its tool list (one meta.json read).
      const seen = c.get("workspace");
      const record = seen && seen.tenant === auth.tenant && seen.id === wsId ? seen.record : undefined;
      const waitUntil = backgroundOf(c);
      // The early reads are taken once: a call run again after StaleRecord reads anew.
      const early = c.get("early");
      c.set("early", undefined);
      const ws = await openToolWorkspace({ deps, auth, wsId, session, ...(record ? { record } : {}), ...(waitUntil ? { background: waitUntil } : {}), ...(early ? { early } : {}), ...(known ? { filesStorage: known.files } : {}) });
      call.ws = ws;
      // An empty body: no arguments.
      const pendingId = pendingIdOf(c.req.raw.headers);
      const ctx = { ws, session, auth, deps, signal: c.req.raw.signal, ...(pendingId ? { pendingId } : {}), ...(waitUntil ? { waitUntil } : {}) };
      // Accept: text/event-stream: progress events, then one result event (lib/doors/sse.ts).
      if (wantsEventStream(c.req.header("accept"))) return streamToolCall(c, call, c.get("json"), tool, ctx);
      const result = await executeTool(tool, c.get("json"), ctx, known ? { runsAgain: known.runsAgain } : {});
      return c.json({ ok: true as const, tool: tool.name, ...result, usage: call.usage() }, 200);
}

/** The tool name of a call to /v1/workspaces/{ws}/tools/{name}: what follows `tools/`, decoded. */
function toolNameOf(c: Context<AppEnv>): string {
  const raw = c.req.path.split("/").slice(5).join("/");
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * POST to a tool that does not exist: NOT_FOUND naming the closest tool and the ones this key may
 * use; a tenant's custom tool runs here. Mount after every tool. The path ends in a wildcard, not
 * a `:tool` parameter: Hono's RegExpRouter serves no parameter beside static siblings (the
 * built-in tools' paths), and one such route makes the whole app fall back to TrieRouter, which
 * cost ~0.7 ms of CPU per request in workerd. A built-in tool's own route answers first (it is
 * mounted before), so this one runs only for other names.
 */
export function unknownToolApp(builtins: readonly Tool[], deps: AppDeps) {
  const app = newApp();
  addRoute(
    app, deps,
    {
      method: "post",
      path: "/v1/workspaces/:ws/tools/*",
      wildcard: "tool",
      access: { auth: "tenant", scope: "any", runsTools: true },
      before: [meterToolCall(deps, (c) => toolNameOf(c).slice(0, 64))],
      undocumented: "every tool has its own documented path; this answers for names that are none of them",
    },
    async (c) => {
      const name = toolNameOf(c);
      const auth = c.get("auth");
      // The key's tenant's custom tools (lib/tools/custom/): a custom name runs here, through the same path as a built-in.
      const tools = await toolsForTenant(deps, builtins, auth.tenant);
      const custom = tools.find((t) => t.name === name && !builtins.includes(t));
      if (custom) {
        await requireWorkspace(deps.storage, auth.tenant, c.req.param("ws") ?? "");
        await readJsonBody(c);
        return runOnWorkspace(c, custom, deps);
      }
      // The workspace's own tool list narrows the answer (a missing workspace: the key's alone).
      const wsTools = (await readMeta(deps.storage, auth.tenant, c.req.param("ws") ?? ""))?.meta.tools;
      throw unknownToolError(name, tools, auth, wsTools, "GET /v1/tools lists every tool with its arguments");
    },
  );
  return app;
}

