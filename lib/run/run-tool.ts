/**
 * Running one tool call: the one path every door takes (the HTTP tool route, the provider-native
 * compat routes, and any later door). It checks the key's scope, validates the arguments against
 * the tool's schema, runs the tool with its context, cuts the output, and meters the call.
 */
import { callerOf, quotaOf, quotaOpt } from "../workspace/quota.js";
import type { AuthInfo } from "../contract/caller.js";
import { ToolError } from "../shared/errors.js";
import { toToolError } from "../contract/errors.js";
import { emitUsage, netUsage } from "./metering/usage.js";
import { backgroundSubagentUsage } from "./metering/detached-work.js";
import { sessionRecords } from "../workspace/records.js";
import { cwdHint } from "./cwd-hint.js";
import type { EarlyCall } from "../workspace/early.js";
import { filesDriver, openWorkspace as openLayers, type LayerDeps, type MetaRecord } from "../layers/open.js";
import { ManifestCache } from "../layers/manifest.js";
import { MAX_OUTPUT_CHARS, parseToolArgs, truncateMiddle, type SubCalls, type Tool, type ToolContext, type ToolOutcome, type Usage } from "../contract/tool.js";
import { Workspace } from "../workspace/workspace.js";
import { UndoJournal } from "../workspace/undo-journal.js";
import { newStamp } from "../workspace/undo-record.js";
import type { RunDeps } from "./deps.js";
import { gateCall } from "./pending/gate.js";
import { pendingOutcome } from "../tools/pending/outcome.js";
import { assertToolAllowed, scopesOnWorkspace, usableTools } from "./toolset.js";
import { catalogForLists, toolsForTenant } from "../tools/custom/tool.js";
import { takeInnerCall } from "../limits/call-budget.js";
import type { StorageDriver } from "../storage/types.js";
import { followOpenedLink } from "../workspace/links.js";
import { auditToolCall, isAudited } from "./audit/tool-call.js";
import type { AuditDoor } from "./audit/entry.js";
import { keyGoneError, keyStandsNow, whileKeyStands } from "./key-watch.js";

/** Who calls, on which workspace, in which session. */
export interface CallScope {
  deps: RunDeps;
  auth: AuthInfo;
  /** The workspace id from the path (the tenant comes from the key, never from the request). */
  wsId: string;
  /** A session id already checked with checkSessionId. */
  session: string;
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
  /** A human approved this call (the pending-call answer route): not gated again. */
  approved?: boolean;
  /** Where the tool's progress goes (ToolContext.progress), when the door has a listener. */
  progress?: ToolContext["progress"];
  /** The door's way to put a question to the human directly (ToolContext.askHuman: MCP elicitation). */
  askHuman?: ToolContext["askHuman"];
  /** The workspace record the route's guard already read (saves reading meta.json again). */
  record?: MetaRecord;
  /** The runtime's waitUntil: index upkeep, the usage record and a read's session record after the response (WorkspaceOptions.background). */
  background?: (p: Promise<unknown>) => void;
  /** The door the call came through, for its audit entry (default: http). */
  door?: AuditDoor;
  /** Reads the route started beside the guard's (lib/workspace/early.ts): taken when they are this call's. */
  early?: EarlyCall;
  /** Wraps the storage the workspace's files are read through (a known record's knownFiles: lib/api/routes/known-workspace.ts). */
  filesStorage?: (s: StorageDriver) => StorageDriver;
  /** A task put the call's run in the background: the session's live sandbox runs it instead when it holds one (ToolContext.backgroundUnlessLive). */
  backgroundUnlessLive?: boolean;
}

/** A call's context on the run path: the tools' context with the run path's deps. */
export type RunContext = ToolContext<RunDeps>;

/** What opening a workspace needs (createApp always sets `manifests`; a bare deps gets a private cache). */
export const layerDeps = (deps: Pick<RunDeps, "storage" | "manifests">): LayerDeps => ({ storage: deps.storage, manifests: deps.manifests ?? new ManifestCache() });

/** The undo journal of one call in `session` (its call_id is the session and `stamp`, default now), with the deployment's retention. */
export function journalFor(deps: Pick<RunDeps, "storage" | "undoPruneEvery" | "undoRetention">, tenant: string, wsId: string, session: string, stamp?: string): UndoJournal {
  const j = new UndoJournal(deps.storage, tenant, wsId, session, stamp);
  if (deps.undoPruneEvery !== undefined) j.pruneEvery = deps.undoPruneEvery;
  if (deps.undoRetention) j.retention = { ...j.retention, ...deps.undoRetention };
  return j;
}

/** The caller's workspace (NOT_FOUND for a missing one and for another tenant's alike), its files through the merged view when layered. */
export async function openWorkspace(scope: CallScope): Promise<Workspace> {
  const { deps, auth, wsId, session } = scope;
  const early = scope.early && scope.early.tenant === auth.tenant && scope.early.wsId === wsId && scope.early.session === session ? scope.early : undefined;
  if (scope.early && !early) void scope.early.reads.discard();
  // The files are read through the early reads' storage: the layered driver's first GET (the upper object) takes one too.
  const storage = early ? early.reads.storage : deps.storage;
  const layers = { ...layerDeps(deps), storage: scope.filesStorage ? scope.filesStorage(storage) : storage };
  let opened;
  try {
    opened = scope.record ? { driver: await filesDriver(layers, auth.tenant, wsId, scope.record.meta), meta: scope.record.meta } : await openLayers(layers, auth.tenant, wsId);
  } catch (e) {
    await early?.reads.discard();
    throw e;
  }
  const { driver, meta } = opened;
  const undo = journalFor(deps, auth.tenant, wsId, session);
  undo.background = scope.background; // retention's pruning after the response, where the runtime allows
  // A call whose files' storage is limited (a known record): work after it opens the workspace from its record then.
  const upkeep = scope.filesStorage ? async () => (await openLayers(layerDeps(deps), auth.tenant, wsId)).driver : undefined;
  return new Workspace({
    driver,
    tools: meta.tools,
    instance: meta.created_at,
    ...(upkeep ? { upkeep } : {}),
    ...(deps.versions ? { versions: deps.versions } : {}),
    ...(scope.background ? { background: scope.background } : {}),
    ...(early ? { early: early.reads } : {}),
    records: early?.records ?? sessionRecords(deps.kv, auth.tenant, wsId, session, deps.knownRecords),
    tenant: auth.tenant,
    id: wsId,
    listeners: deps.listeners ?? [],
    undo,
    ...quotaOpt(quotaOf(deps, auth.tenant, wsId, callerOf(auth), driver, scope.background)),
  });
}

/** How executeTool records the call in the audit log (lib/run/audit/). */
export interface CallAudit {
  /** The door the call came through (default: http). */
  door?: AuditDoor;
  /** Where the entry is written after the answer (default: the call's waitUntil). */
  background?: (p: Promise<unknown>) => void;
  /**
   * This run is a try the door runs again when it fails with an error this says yes to (the tool
   * route on a known workspace record: lib/api/routes/known-workspace.ts mayRunAgain). Such a failure
   * is not the call's outcome and leaves no entry: the run again leaves the call's one entry.
   */
  runsAgain?: (e: unknown) => boolean;
}

/**
 * The core every door shares once the call is authorized and its workspace open: arguments as
 * models send them (lib/contract/tool-args.ts: null is absent, unknown and missing arguments named), the
 * approval gate (lib/run/pending/gate.ts), the tool, the output cut. With ctx.pendingId (X-Pending-Id)
 * it runs nothing and answers the outcome of that pending call. Throws the tool's ToolError.
 */
export async function executeTool(tool: Tool, rawArgs: unknown, ctx: RunContext, audit: CallAudit = {}): Promise<Omit<ToolOutcome, "usage" | "tool">> {
  // Every call that may change something leaves an audit entry, whatever its outcome (lib/run/audit/).
  const audited = isAudited(tool, ctx);
  const background = audit.background ?? ctx.waitUntil;
  if (audited && ctx.ws.undo) ctx.ws.undo.committed = []; // a workspace's journal may serve several calls (compat, MCP)
  try {
    // The key is asked again while the call goes on: revoked or expired, the call stops and answers key_gone (lib/run/key-watch.ts).
    const r = await whileKeyStands(ctx.deps, ctx.auth, "this call", ctx.signal, (signal, keyGone) => executeChecked(tool, rawArgs, { ...(ctx.subcalls ? ctx : { ...ctx, subcalls: subCallsOf(ctx) }), ...(signal ? { signal } : {}), keyGone }));
    if (audited) await auditToolCall(tool, rawArgs, ctx, { data: r.data, ...(r.call_id ? { call_id: r.call_id } : {}), journal: ctx.ws.undo?.committed }, audit.door ?? "http", background);
    return r;
  } catch (e) {
    if (audited && !audit.runsAgain?.(e)) await auditToolCall(tool, rawArgs, ctx, { error: e, journal: ctx.ws.undo?.committed }, audit.door ?? "http", background);
    throw e;
  } finally {
    ctx.ws.discardEarly(); // an early read the call did not take (refused, gated, failed) is cancelled unread
  }
}

/**
 * The run path as a tool uses it for calls of its own (ctx.subcalls: the task tool's subagent): the
 * caller's usable tools, and runTool for each call in a Workspace of its own over the caller's files
 * (the same driver and session records, the deployment's listeners and the tool's, its own journal),
 * and the meter of its background work's end (route "background subagent", after the work where there is a waitUntil).
 */
function subCallsOf(ctx: RunContext): SubCalls {
  return {
    usable: async () => usableTools(await toolsForTenant(ctx.deps, ctx.deps.tools ?? [], ctx.ws.tenant), ctx.auth, ctx.ws.tools),
    run: async (tool, args, { stampMs, listener, signal }) => {
      const { ws, deps } = ctx;
      // A background subagent outlives its call: each of its calls asks again whether the key stands (and the task ends when not: loop.ts).
      if (!(await keyStandsNow(deps, ctx.auth))) throw keyGoneError(ctx.auth, "this task");
      // Each sub-call is a call of the caller's key, against its calls_per_minute as a direct one: a subagent is no way around it.
      if (deps.callLeases) await takeInnerCall(deps.callLeases, ws.tenant, { key_id: ctx.auth.key_id, ...(ctx.auth.limits ? { limits: ctx.auth.limits } : {}) }, ctx.waitUntil);
      const undo = journalFor(deps, ws.tenant, ws.id, ctx.session, newStamp(stampMs));
      const callWs = new Workspace({ driver: ws.driver, records: ws.records, tenant: ws.tenant, id: ws.id, tools: ws.tools, listeners: [...(deps.listeners ?? []), listener], undo, ...quotaOpt(ws.quota) });
      return runTool(tool, args, { deps, auth: ctx.auth, wsId: ws.id, session: ctx.session, ws: callWs, door: "task", ...(signal ? { signal } : {}) });
    },
    workEnded: (work) => emitUsage(ctx.deps.onUsage, backgroundSubagentUsage(ctx.ws.tenant, ctx.ws.id, ctx.auth.key_id, work), ctx.waitUntil),
  };
}

async function executeChecked(tool: Tool, rawArgs: unknown, allowed: RunContext): Promise<Omit<ToolOutcome, "usage" | "tool">> {
  // Who may use which tool, in this one place (lib/run/toolset.ts): the key's scopes and tools, the workspace's tools.
  assertToolAllowed(tool, allowed.auth, allowed.ws.tools);
  // And with which scopes its own work acts (a command's network): the key's, bounded by both tool lists.
  // (Lists may name the tenant's custom tools, whose scopes then count: catalogForLists reads them only then.)
  const catalog = await catalogForLists(allowed.deps, allowed.deps.tools ?? [tool], allowed.ws.tenant, [allowed.auth.tools, allowed.ws.tools]);
  const ctx: RunContext = { ...allowed, auth: { ...allowed.auth, scopes: scopesOnWorkspace(allowed.auth, allowed.ws.tools, catalog) } };
  if (ctx.pendingId) return pendingOutcome(tool, ctx.pendingId, ctx);
  const args = parseToolArgs(tool, rawArgs === undefined ? {} : rawArgs);
  tool.startReads?.(ctx);
  // The approval gate, in this one place: a held call is stored and answered NEEDS_APPROVAL, and does not run.
  await gateCall(tool, args as Record<string, unknown>, ctx);
  const undo = ctx.ws.undo;
  if (undo) undo.tool = tool.name;
  let result;
  try {
    try {
      result = await tool.execute(args as never, ctx);
    } catch (e) {
      // The file a tool opens, through the workspace's symlinks, on a miss (one place for every tool and door): docs/symlinks.md.
      const link = tool.opens ? await followOpenedLink(ctx.ws, args as Record<string, unknown>, tool.opens, e) : null;
      // No link on the path: a path meant from bash's working directory is named (lib/run/cwd-hint.ts).
      if (!link) throw tool.opens ? await cwdHint(ctx, args as Record<string, unknown>, tool.opens, e) : e;
      // The call now acts on the link's target: it passes the gate again on that path (an overwrite through a link is one).
      await gateCall(tool, args as Record<string, unknown>, ctx);
      result = await tool.execute(args as never, ctx);
      result = { ...result, output: `(${link.link} is a symlink to ${link.target}: this acted on ${link.path})\n${result.output}` };
    }
  } catch (e) {
    // What a failed call did write stays undoable; its call_id goes with the error.
    const id = await undo?.commit().catch(() => null);
    if (id && e instanceof ToolError) e.details.call_id = id;
    throw e;
  }
  // The undo record of this call (one create-only object; none when nothing changed): lib/run/undo/.
  // Nothing left to write when it went beside the call's last write (its etag known in advance).
  const committed = await undo?.commit();
  const callId = committed ?? (typeof result.data.call_id === "string" ? result.data.call_id : null);
  return { title: result.title, output: truncateMiddle(result.output, MAX_OUTPUT_CHARS).text, data: result.data, ...(callId ? { call_id: callId } : {}) };
}

/**
 * Runs `tool` with `args` on an opened workspace, for doors that meter the call themselves here
 * (the compat routes, MCP, approved calls): executeTool (which checks the tool is allowed), one usage record, success or failure.
 */
export async function runTool(tool: Tool, args: unknown, scope: CallScope & { ws: Workspace }): Promise<ToolOutcome> {
  const started = Date.now();
  const { ws, auth, deps, wsId, session, signal, approved, progress, askHuman } = scope;
  const read0 = ws.bytesRead;
  const written0 = ws.bytesWritten;
  const sandbox0 = ws.sandboxMs;
  const netIn0 = ws.netBytesIn;
  const netOut0 = ws.netBytesOut;
  const usage = (): Usage => ({ ms: Date.now() - started, bytes_read: ws.bytesRead - read0, bytes_written: ws.bytesWritten - written0 });
  // The sandbox time of the commands this call ran, however they ended (takeRun counts it on the workspace).
  const sandbox = () => (ws.sandboxMs !== sandbox0 ? { sandbox_ms: (ws.sandboxMs ?? 0) - (sandbox0 ?? 0) } : {});
  // What this call's tool exchanged with hosts outside Toolshed (lib/tools/web/net-bytes.ts counts it on the workspace).
  const net = () => netUsage({ netBytesIn: ws.netBytesIn - netIn0, netBytesOut: ws.netBytesOut - netOut0 });
  const meter = (ok: boolean, code?: string) => emitUsage(deps.onUsage, { tenant: auth.tenant, workspace: wsId, key: auth.key_id, tool: tool.name, ok, ...(code ? { code } : {}), ...usage(), ...sandbox(), ...net() }, scope.background);
  try {
    const r = await executeTool(tool, args, { ws, session, auth, deps, ...(signal ? { signal } : {}), ...(approved ? { approved } : {}), ...(progress ? { progress } : {}), ...(askHuman ? { askHuman } : {}), ...(scope.background ? { waitUntil: scope.background } : {}), ...(scope.backgroundUnlessLive ? { backgroundUnlessLive: true } : {}) }, { door: scope.door ?? "http", ...(scope.background ? { background: scope.background } : {}) });
    meter(true);
    return { tool: tool.name, ...r, usage: usage() };
  } catch (err) {
    meter(false, toToolError(err).code);
    throw err;
  }
}
