/**
 * Usage records of the non-tool routes (#28 §1): raw file reads, writes and deletes, workspace
 * create, list and delete, import and export, checkpoints, versions and restores, undo, pending
 * answers, custom tool changes, the usage and audit reads. The route guard (access.ts) wraps every
 * route in this meter, so a new route is metered without a line of its own. A record names the
 * route ("GET files", "PUT files", "POST import", "DELETE workspace") where a tool's names the tool.
 *
 * Which routes: a tenant route with a scope of its own (not "any": the tool routes, MCP and
 * the compat routes meter each tool call themselves, lib/run/run-tool.ts), on any method but
 * OPTIONS, where no tool meter runs; reads (GET, HEAD) of the `manage` routes (usage, audit, keys,
 * secrets, custom tools: the account, not the workspace) are not recorded, so reading the bill
 * does not change it. Like a tool call, a request whose key was valid is recorded
 * whatever failed after that; one without a valid key bills no one. A replayed answer
 * (`Idempotent-Replayed: true`, lib/api/idempotency.ts) ran nothing and is not recorded again.
 * bytes_written is the request body's declared size (Content-Length) on writes and imports, 0
 * otherwise; bytes_read is the answer's declared size on reads (GET, HEAD; 0 for a streamed
 * answer without a length, such as a large export).
 */
import type { Context } from "hono";
import type { AppDeps } from "../deps.js";
import type { AppEnv } from "../http.js";
import { toToolError } from "../../contract/errors.js";
import { emitUsage } from "../../run/metering/usage.js";
import { backgroundOf } from "./common.js";

const NOT_METERED = new Set(["OPTIONS"]);
const READS = new Set(["GET", "HEAD"]);

const sizeOf = (header: string | null | undefined): number => {
  const n = Number(header ?? 0);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
};

/** Whether routes with this access (access.ts Access) are metered here (per request, the method decides too). */
export const meteredAccess = (a: { auth: string; scope?: string }): boolean => a.auth === "tenant" && a.scope !== "any";

/**
 * A route's name in usage: its method and its path after the workspace, without parameters.
 * `PUT /v1/workspaces/:ws/files/*` → "PUT files"; `DELETE /v1/workspaces/:ws` → "DELETE workspace";
 * `POST /v1/workspaces` → "POST workspaces"; `PUT /v1/tools/custom/:name` → "PUT tools/custom".
 */
export function routeNameOf(method: string, routePath: string): string {
  let parts = routePath.split("/").filter((p) => p && p !== "v1");
  if (parts[0] === "workspaces" && parts[1]?.startsWith(":")) parts = parts.length === 2 ? ["workspace"] : parts.slice(2);
  return `${method.toUpperCase()} ${parts.filter((p) => !p.startsWith(":") && p !== "*").join("/")}`;
}

/** Runs the guarded route (`run`) and emits its usage record once it has answered. */
export async function meterRoute(deps: AppDeps, c: Context<AppEnv>, scope: string | undefined, run: () => Promise<void>): Promise<void> {
  if (!deps.onUsage || NOT_METERED.has(c.req.method) || c.get("call") || (scope === "manage" && READS.has(c.req.method))) return run();
  const started = Date.now();
  const route = routeNameOf(c.req.method, c.req.routePath);
  const emit = (error: unknown) => {
    const auth = c.get("auth");
    if (!auth) return; // no valid key: nobody to bill
    if (!error && c.res.headers.get("idempotent-replayed") === "true") return; // the first answer was recorded
    const code = error ? toToolError(error).code : c.res.status >= 400 ? `HTTP_${c.res.status}` : undefined;
    const read = READS.has(c.req.method);
    emitUsage(deps.onUsage, { tenant: auth.tenant, workspace: (c.req.param("ws") ?? "").slice(0, 100), key: auth.key_id, route, ok: !code, ...(code ? { code } : {}), ms: Date.now() - started, bytes_read: read && !error ? sizeOf(c.res.headers.get("content-length")) : 0, bytes_written: read ? 0 : sizeOf(c.req.header("content-length")) }, backgroundOf(c));
  };
  try {
    await run();
  } catch (e) {
    emit(e);
    throw e;
  }
  emit(c.error);
}
