/**
 * What a caller may do: the ONE authorization rule (DESIGN invariant 12), for tools and routes.
 *
 * Tools (every door: GET /v1/tools, the formats, MCP tools/list and tools/call, the tool routes,
 * the compat routes, approved pending calls, the unknown-tool answer): a tool is usable when the
 * key holds its scope AND it is in the key's tool list AND in the workspace's tool list (each
 * absent = all). Lists are presets or tool names.
 *
 * Routes (the route guard, lib/api/routes/access.ts): a tool list also bounds the scopes a key may
 * act with on ANY route, to those its tools need (scopesOfList): a `readonly` key reads and
 * lists, and writes, deletes, checkpoints, restores, undoes or imports by no route. A
 * workspace's list bounds the tool scopes (read, write, execute, network) of every route bound to
 * that workspace, for every key. Keys are made so their scopes never exceed their list
 * (keyScopesFor); the guard applies the bound anyway, so a key stored before that rule is bound too.
 *
 * The rule takes the tools as input, so per-tenant tools (custom tools) join by being in that list.
 */
import { DEFAULT_SCOPES, type AuthInfo, type Scope } from "../contract/caller.js";
import { ToolError } from "../shared/errors.js";
import { closestName } from "../shared/suggest.js";
import type { Tool } from "../contract/tool.js";
import { PRESET_NAMES, type PresetName, type ToolList } from "../layout/workspace-meta.js";

/**
 * coding: every file, search, shell and planning tool. Beyond the issue's minimum: insert and
 * apply_patch (edits, no more power than edit/write), find (read-only), bash_output and kill_shell
 * (without them a background bash cannot be read or stopped), run_code, delete/move/copy (bash can
 * do all of these already; the tools just save round trips), task/task_output (a subagent with
 * the same tools, as Claude Code's Task). Left out: web_fetch, web_search
 * (network: use `web`) and ask_user (a human in the loop is the deployer's choice).
 * pending_result is in coding and readonly (a tenant may gate any tool, read included): it only
 * reads the outcome of the caller's workspace's held calls, and without it a model could not learn
 * what became of a held call (docs/mcp-pending.md). Not in web: it needs `read`, and a preset's
 * tools decide its key's scopes (docs/keys-and-presets.md), so it would give a web key the files.
 */
export const PRESETS = {
  coding: ["read", "write", "edit", "multi_edit", "insert", "apply_patch", "ls", "glob", "grep", "find", "delete", "move", "copy", "bash", "bash_output", "kill_shell", "run_code", "todo_write", "todo_read", "task", "task_output", "pending_result"],
  readonly: ["read", "ls", "glob", "grep", "find", "pending_result"],
  web: ["web_fetch", "web_search"],
  all: null,
  none: [],
} as const satisfies Record<PresetName, readonly string[] | null>;
export { PRESET_NAMES };

const isPreset = (s: string): s is PresetName => Object.hasOwn(PRESETS, s);

/** The names a list allows; null means every tool. */
export function namesOf(list: ToolList | undefined): Set<string> | null {
  if (list === undefined) return null;
  const items = typeof list === "string" ? [list] : list;
  const names = new Set<string>();
  for (const item of items) {
    if (!isPreset(item)) {
      names.add(item);
      continue;
    }
    const p = PRESETS[item];
    if (p === null) return null;
    for (const n of p) names.add(n);
  }
  return names;
}

/**
 * A caller's `tools` as given (a preset name or an array of names), checked against the known
 * tools: an unknown name is INVALID_ARGUMENT with the closest name. Returns the list to store.
 */
export function parseToolList(input: unknown, tools: readonly Tool[], field = "tools"): ToolList {
  const known = [...PRESET_NAMES, ...tools.map((t) => t.name)];
  const check = (name: unknown): string => {
    if (typeof name === "string" && known.includes(name)) return name;
    const shown = typeof name === "string" ? name.slice(0, 64) : JSON.stringify(name)?.slice(0, 64);
    const guess = typeof name === "string" ? closestName(name, known) : null;
    throw new ToolError("INVALID_ARGUMENT", `${field}: '${shown}' is neither a preset (${PRESET_NAMES.join(", ")}) nor a tool name.${guess ? ` Did you mean '${guess}'?` : ""} GET /v1/tools lists the tool names.`, { field, value: shown, similar: guess, presets: PRESET_NAMES });
  };
  if (typeof input === "string") {
    const name = check(input);
    if (!isPreset(name)) throw new ToolError("INVALID_ARGUMENT", `${field}: a single name must be a preset (${PRESET_NAMES.join(", ")}); give tools as a list: ["${name}"].`, { field, value: name });
    return name;
  }
  if (!Array.isArray(input) || input.length > 200) throw new ToolError("INVALID_ARGUMENT", `${field} must be a preset (${PRESET_NAMES.join(", ")}) or a list of tool names (at most 200).`, { field });
  return [...new Set(input.map(check))];
}

/** Where a tool list came from, for messages. */
export interface ToolLimits {
  /** The key's list (AuthInfo.tools). */
  key?: ToolList | undefined;
  /** The workspace's list (meta.json `tools`). */
  workspace?: ToolList | undefined;
}

const describe = (list: ToolList) => (typeof list === "string" ? `preset '${list}'` : `list [${list.join(", ")}]`);

/** Why `tool` is refused to this caller, or null when it may run. */
export function toolRefusal(tool: Tool, auth: AuthInfo, workspaceTools?: ToolList): ToolError | null {
  if (!auth.scopes.includes(tool.permission)) {
    return new ToolError("PERMISSION_DENIED", `The ${tool.name} tool needs the '${tool.permission}' scope, which this API key does not have (it has: ${auth.scopes.join(", ") || "none"}). Use a key with '${tool.permission}'; an admin creates one with POST /v1/admin/tenants/{tenant}/keys.`, { needed: tool.permission, scopes: auth.scopes });
  }
  const key = namesOf(auth.tools);
  if (key && !key.has(tool.name)) {
    return new ToolError("PERMISSION_DENIED", `The ${tool.name} tool is outside this API key's tools (${describe(auth.tools!)}). Use a key whose tools include it; an admin creates one with POST /v1/admin/tenants/{tenant}/keys {"tools": ...}. GET /v1/tools with this key lists what it may use.`, { tool: tool.name, refused_by: "key", key_tools: auth.tools });
  }
  const ws = namesOf(workspaceTools);
  if (ws && !ws.has(tool.name)) {
    return new ToolError("PERMISSION_DENIED", `The ${tool.name} tool is outside this workspace's tools (${describe(workspaceTools!)}). Use another workspace, or create one with {"tools": ...} that includes it (POST /v1/workspaces). MCP tools/list on this workspace shows what it allows.`, { tool: tool.name, refused_by: "workspace", workspace_tools: workspaceTools });
  }
  return null;
}

/** Throws PERMISSION_DENIED unless the caller may use `tool` (scope, key list, workspace list). */
export function assertToolAllowed(tool: Tool, auth: AuthInfo, workspaceTools?: ToolList): void {
  const e = toolRefusal(tool, auth, workspaceTools);
  if (e) throw e;
}

/**
 * The scopes a call acts with on this workspace: the key's, bounded by its own tool list and by the
 * workspace's (in the tool scopes), as the route guard bounds routes. What a tool's own work may use
 * follows from these, not from the key's stored scopes alone: a command gets the network only
 * when `network` is here (a `coding` or `["readonly","bash"]` workspace gives no key's bash the network).
 */
export function scopesOnWorkspace(auth: Pick<AuthInfo, "scopes" | "tools">, workspaceTools: ToolList | undefined, catalog: readonly Tool[]): Scope[] {
  const byKey = scopesOfList(auth.tools, catalog);
  const byWorkspace = scopesOfList(workspaceTools, catalog);
  return auth.scopes.filter((s) => (!byKey || byKey.has(s)) && (!byWorkspace || !TOOL_SCOPES.includes(s) || byWorkspace.has(s)));
}

/** The tools this caller may use, in catalog order: what every listing shows. */
export function usableTools(tools: readonly Tool[], auth: Pick<AuthInfo, "scopes" | "tools">, workspaceTools?: ToolList): Tool[] {
  const key = namesOf(auth.tools);
  const ws = namesOf(workspaceTools);
  return tools.filter((t) => auth.scopes.includes(t.permission) && (!key || key.has(t.name)) && (!ws || ws.has(t.name)));
}

/**
 * NOT_FOUND for a tool name no tool has, the same by every door: the closest name ("Did you mean
 * 'read'?", saying why when this caller may not use it) and the tools this caller may use.
 * `listedBy`: where that door lists the tools with their arguments (GET /v1/tools, MCP tools/list).
 */
export function unknownToolError(name: string, tools: readonly Tool[], auth: AuthInfo, workspaceTools: ToolList | undefined, listedBy: string): ToolError {
  const usable = usableTools(tools, auth, workspaceTools).map((t) => t.name);
  const guess = closestName(name, usable) ?? closestName(name, tools.map((t) => t.name));
  const shown = name.length > 64 ? `${name.slice(0, 61)}...` : name;
  const refusal = guess && !usable.includes(guess) ? toolRefusal(tools.find((t) => t.name === guess)!, auth, workspaceTools) : null;
  const mean = guess ? ` Did you mean '${guess}'?${refusal ? ` (not usable here: ${refusal.message})` : ""}` : "";
  return new ToolError("NOT_FOUND", `No tool named '${shown}'.${mean} Tools this key can use: ${usable.join(", ") || "none"}. ${listedBy}.`, {
    tool: shown,
    similar: guess,
    available: usable,
  });
}

/** The scopes a tool can need; a workspace's list bounds these on its routes (`approve` and `manage` belong to no tool). */
export const TOOL_SCOPES: readonly Scope[] = ["read", "write", "execute", "network"];

/**
 * The scopes a tool list lets a key or a workspace act with, on any route: the scopes its tools
 * need (`readonly` → read; `coding` → read, write, execute; `web` → network; `none` → nothing).
 * null: every scope (no list, or `all` in it).
 */
export function scopesOfList(list: ToolList | undefined, catalog: readonly Tool[]): ReadonlySet<Scope> | null {
  const names = namesOf(list);
  if (!names) return null;
  const scopes = new Set<Scope>();
  for (const t of catalog) if (names.has(t.name)) scopes.add(t.permission);
  return scopes;
}

const listed = (s: ReadonlySet<Scope>) => (s.size ? [...s].join(", ") : "no scope");

/**
 * Why this key may not act with `scope` (on a route, or as a tool's permission), or null. `what`
 * names the route or the tool for the message. The key must hold the scope, and its tool list
 * must use it.
 */
export function keyScopeRefusal(scope: Scope, auth: AuthInfo, catalog: readonly Tool[], what: string): ToolError | null {
  const usable = scopesOfList(auth.tools, catalog);
  const inList = !usable || usable.has(scope);
  if (inList && auth.scopes.includes(scope)) return null;
  const why = inList
    ? `which this API key does not have (it has: ${auth.scopes.join(", ") || "none"})`
    : `which this API key may not use: its tools (${describe(auth.tools!)}) need only ${listed(usable!)}, and a key acts by every route only with the scopes its tools need`;
  const fix = inList ? `Use a key with '${scope}'` : `Use a key whose tools need '${scope}' (e.g. tools "all", the default)`;
  return new ToolError("PERMISSION_DENIED", `${what} needs the '${scope}' scope, ${why}. ${fix}; an admin creates one with POST /v1/admin/tenants/{tenant}/keys.`, {
    needed: scope,
    scopes: auth.scopes,
    refused_by: "key",
    ...(auth.tools !== undefined ? { key_tools: auth.tools } : {}),
  });
}

/** Why a route bound to a workspace with this tool list may not act with `scope` (for any key), or null. */
export function workspaceScopeRefusal(scope: Scope, workspaceTools: ToolList | undefined, catalog: readonly Tool[], what: string): ToolError | null {
  if (!TOOL_SCOPES.includes(scope)) return null;
  const usable = scopesOfList(workspaceTools, catalog);
  if (!usable || usable.has(scope)) return null;
  return new ToolError(
    "PERMISSION_DENIED",
    `${what} needs the '${scope}' scope, which this workspace's tools (${describe(workspaceTools!)}) do not need: on this workspace every route and every key acts only with ${listed(usable)} (deleting the workspace itself aside). Use another workspace, or create one whose tools need '${scope}' (POST /v1/workspaces {"tools": ...}; a workspace's tools are fixed at creation).`,
    { needed: scope, refused_by: "workspace", workspace_tools: workspaceTools },
  );
}

/** Which tools to add for the scopes a list lacks. */
function hintFor(excess: readonly Scope[]): string {
  const hints = [
    ...(excess.some((s) => s === "write" || s === "execute") ? ['"coding" for write and execute'] : []),
    ...(excess.includes("network") ? ['"web" for network'] : []),
    ...(excess.some((s) => s === "approve" || s === "manage") ? ['approve and manage belong to no tool: only a key with tools "all" (the default) holds them'] : []),
  ];
  return hints.length ? ` (${hints.join("; ")})` : "";
}

/**
 * The scopes of a new key with this tool list: the ones asked for, refused (INVALID_ARGUMENT) when
 * they exceed what its tools need; by default read, write and execute, narrowed to what its tools
 * need (so `{"tools": "readonly"}` is a read-only key). A key that could use no scope is refused.
 */
export function keyScopesFor(asked: readonly Scope[] | undefined, list: ToolList | undefined, catalog: readonly Tool[]): Scope[] {
  const usable = scopesOfList(list, catalog);
  if (asked !== undefined) {
    const excess = usable ? asked.filter((s) => !usable.has(s)) : [];
    if (excess.length) {
      const keep = asked.filter((s) => usable!.has(s));
      throw new ToolError(
        "INVALID_ARGUMENT",
        `scopes: ${excess.map((s) => `'${s}'`).join(", ")} exceed what the key's tools (${describe(list!)}) need (${listed(usable!)}): a key acts by every route only with the scopes its tools need. ${keep.length ? `Ask for scopes ${JSON.stringify(keep)}` : "Leave scopes out"}, or give tools that need ${excess.length > 1 ? "them" : "it"}${hintFor(excess)}.`,
        { field: "scopes", excess, tools_scopes: [...usable!] },
      );
    }
    return [...new Set(asked)];
  }
  const scopes = usable ? DEFAULT_SCOPES.filter((s) => usable.has(s)) : [...DEFAULT_SCOPES];
  if (!scopes.length) {
    throw new ToolError(
      "INVALID_ARGUMENT",
      `tools: the key's tools (${describe(list!)}) need ${listed(usable!)}, none of the default scopes (${DEFAULT_SCOPES.join(", ")}), so the key could do nothing. ${usable!.size ? `Give scopes ${JSON.stringify([...usable!])} explicitly` : "Give tools that the key may use"}.`,
      { field: "tools", tools_scopes: [...usable!] },
    );
  }
  return scopes;
}
