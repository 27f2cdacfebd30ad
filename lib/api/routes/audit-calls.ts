/**
 * The audit entry of a route call, written by every route's guard (access.ts `guard`), so that a
 * new route cannot forget it: every POST, PUT, PATCH and DELETE with a tenant key or the admin
 * token leaves one entry, refused or done, except the tool doors' calls that run tools
 * (Access.runsTools: the tools, compat and MCP routes), whose tool calls are recorded where they
 * run (lib/run/run-tool.ts executeTool) — their refusals by the guard itself are recorded here.
 *
 * Where it goes: the workspace's log when the route names a workspace that exists (bound by the
 * guard, or the call succeeded), else the tenant's (workspace create and delete, keys, policies,
 * custom tools). Admin calls with the admin token go to the log of the tenant they name (key_id
 * "admin"), a failed one only when that tenant exists; a call without a valid token or key is not recorded.
 */
import type { Context } from "hono";
import type { AppDeps } from "../deps.js";
import type { AppEnv } from "../http.js";
import { toToolError } from "../../contract/errors.js";
import { backgroundOf } from "./common.js";
import { afterAnswer } from "../../shared/after-answer.js";
import { ERROR_CODES } from "../../shared/errors.js";
import { checkSessionId, ID_PATTERN, tenantRecordKey } from "../../layout/paths.js";
import { filesTouched, newAuditId, summarizeArgs, toolCallArgs, type AuditEntry } from "../../run/audit/entry.js";
import { recordAudit } from "../../run/audit/store.js";

/** What the guard knows of its route (access.ts RoutePolicy, named here without importing it back). */
export interface AuditedPolicy {
  access: { auth: "public" | "admin" | "tenant" | "sync"; runsTools?: true };
}

const READS = new Set(["GET", "HEAD", "OPTIONS"]);
/** Answers read for the files they name: small JSON only. */
const MAX_PARSED_ANSWER = 256 * 1024;

const routeLabel = (c: Context<AppEnv>) => `${c.req.method} ${c.req.routePath.replace(/:(\w+)(\{[^}]*\})?/g, "{$1}").replace(/\/\*$/, "/{path}")}`;

/** The part of the URL the route's trailing `*` matched (a file path), decoded. */
function wildcardOf(c: Context<AppEnv>): string | undefined {
  const route = c.req.routePath;
  if (!route.endsWith("/*")) return undefined;
  const depth = route.split("/").length - 1;
  const raw = c.req.path.split("/").slice(depth).join("/");
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function sessionOf(c: Context<AppEnv>): string | undefined {
  try {
    return checkSessionId(c.req.header("x-session-id") ?? "default");
  } catch {
    return undefined;
  }
}

/** Records the call the guard let through (`reached`) or refused (`error`), after the answer where the runtime allows; never throws. */
export async function auditRouteCall(deps: AppDeps, policy: AuditedPolicy, c: Context<AppEnv>, end: { reached: boolean; error?: unknown }): Promise<void> {
  try {
    const method = c.req.method.toUpperCase();
    const access = policy.access;
    if (READS.has(method) || access.auth === "public" || access.auth === "sync") return;
    if (end.reached && access.auth === "tenant" && access.runsTools && end.error === undefined) return;
    const error = end.error ?? (c.error && c.res.status >= 400 ? c.error : undefined);
    const status = end.error !== undefined ? ERROR_CODES[toToolError(end.error).code].status : c.res.status;
    const code = error !== undefined ? toToolError(error).code : status >= 400 ? (c.res.headers.get("x-toolshed-error-code") ?? `HTTP_${status}`) : undefined;
    const ok = status < 400;
    const params = c.req.param() as Record<string, string>;
    const body = c.get("json") as Record<string, unknown> | undefined;
    let tenant: string | undefined;
    let keyId: string;
    if (access.auth === "admin") {
      if (!end.reached) return; // not the operator (no valid admin token): nobody's call to record
      // The tenant the path names, or the one a successful POST /v1/admin/tenants made (its answer's id).
      tenant = params.tenant;
      keyId = "admin";
    } else {
      const auth = c.get("auth");
      if (!auth) return; // no valid key: no tenant to record it for
      tenant = auth.tenant;
      keyId = auth.key_id;
    }
    const ws = params.ws;
    const bound = c.get("workspace");
    const deletesWorkspace = method === "DELETE" && c.req.routePath === "/v1/workspaces/:ws";
    const inWorkspace = ws !== undefined && ID_PATTERN.test(ws) && !(deletesWorkspace && ok) && (bound?.id === ws || ok);
    const path = wildcardOf(c);
    const { "*": _rest, ...named } = params;
    const length = Number(c.req.header("content-length"));
    const tool = c.get("tool");
    // A tool route's call that did not run (a replay, a refusal before the tool): its arguments as the run's own entry has them (toolCallArgs).
    // Any other route's: its path parameters and query count as arguments too (`POST /v1/workspaces?id=…` with an archive body, an import's mode), summarized as the body is.
    const args: Record<string, unknown> = tool !== undefined ? toolCallArgs(body) : { ...summarizeArgs(named), ...(path !== undefined ? { path } : {}), ...summarizeArgs(c.req.query()), ...summarizeArgs(body), ...(length > 0 ? { body_bytes: length } : {}) };
    const now = new Date();
    const entry: AuditEntry = {
      id: newAuditId(now),
      at: now.toISOString(),
      tenant: tenant ?? "",
      ...(inWorkspace ? { workspace: ws } : {}),
      key_id: keyId,
      ...(access.auth === "tenant" ? { session: sessionOf(c) } : {}),
      door: access.auth === "admin" ? "admin" : "http",
      ...(tool ? { tool } : { route: routeLabel(c) }),
      args,
      outcome: { ok, status, ...(code ? { code } : {}), ...(c.res.headers.get("idempotent-replayed") === "true" ? { replayed: true as const } : {}) },
      ...(typeof args.call_id === "string" ? { call_id: args.call_id } : {}),
    };
    if (path !== undefined && ok && (method === "PUT" || method === "DELETE")) entry.files = [path];
    // The files the answer names (undo, restore's conflicts), read from a copy of a small JSON answer.
    const answer = ok && (c.res.headers.get("content-type") ?? "").includes("json") && Number(c.res.headers.get("content-length") ?? 0) <= MAX_PARSED_ANSWER ? c.res.clone() : undefined;
    const write = async () => {
      if (answer) {
        const data = ((await answer.json().catch(() => undefined)) ?? {}) as Record<string, unknown>;
        const files = entry.files ?? filesTouched(undefined, data);
        if (files.length) entry.files = files;
        if (!entry.call_id && typeof data.call_id === "string") entry.call_id = data.call_id;
        if (!entry.tenant && access.auth === "admin" && typeof data.id === "string") entry.tenant = data.id;
        if (typeof data.key_id === "string" && entry.args.key_id === undefined) entry.args.key_id = data.key_id; // a key made
        if (status === 201 && typeof data.id === "string" && entry.args.id === undefined) entry.args.id = data.id; // what the call made, under the id the answer gave it (a workspace's random id, a checkpoint's)
      }
      if (!ID_PATTERN.test(entry.tenant)) return;
      // The operator's failure is recorded only for a tenant that exists (no log is made for a name that is none).
      if (access.auth === "admin" && !ok && !(await deps.storage.head(tenantRecordKey(entry.tenant)))) return;
      await recordAudit(deps.storage, entry, undefined); // already after the answer, under its waitUntil (below): written before `write` settles
    };
    await afterAnswer(backgroundOf(c), "audit entry", () => write().catch(() => {}), "await");
  } catch (e) {
    console.error("audit entry not built", e instanceof Error ? e.message : String(e));
  }
}
