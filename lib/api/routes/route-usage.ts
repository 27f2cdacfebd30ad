/**
 * Usage records of the non-tool routes that change something (#28 §1): raw file writes and
 * deletes, workspace create and delete, import, checkpoints and restores, undo, pending answers,
 * custom tool changes. The route guard (access.ts) wraps every route in this meter, so a new
 * route is metered without a line of its own. A record names the route ("PUT files", "POST import",
 * "DELETE workspace") where a tool's names the tool.
 *
 * Which routes: a tenant route with a scope of its own (not "any": the tool routes, MCP and
 * the compat routes meter each tool call themselves, lib/run/run-tool.ts), on a method that may
 * change something (not GET/HEAD/OPTIONS), where no tool meter runs. Like a tool call, a request
 * whose key was valid is recorded whatever failed after that; one without a valid key bills no one.
 * bytes_written is the request body's declared size (Content-Length) on writes and imports, 0
 * otherwise; bytes_read is 0 (the route does not count what it reads).
 */
import type { Context } from "hono";
import type { AppDeps } from "../deps.js";
import type { AppEnv } from "../http.js";
import { toToolError } from "../../contract/errors.js";
import { emitUsage } from "../../run/metering/usage.js";
import { backgroundOf } from "./common.js";

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

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
export async function meterRoute(deps: AppDeps, c: Context<AppEnv>, run: () => Promise<void>): Promise<void> {
  if (!deps.onUsage || READS.has(c.req.method) || c.get("call")) return run();
  const started = Date.now();
  const route = routeNameOf(c.req.method, c.req.routePath);
  const emit = (error: unknown) => {
    const auth = c.get("auth");
    if (!auth) return; // no valid key: nobody to bill
    const code = error ? toToolError(error).code : c.res.status >= 400 ? `HTTP_${c.res.status}` : undefined;
    const declared = Number(c.req.header("content-length") ?? 0);
    const bytes = Number.isSafeInteger(declared) && declared > 0 ? declared : 0;
    emitUsage(deps.onUsage, { tenant: auth.tenant, workspace: (c.req.param("ws") ?? "").slice(0, 100), key: auth.key_id, route, ok: !code, ...(code ? { code } : {}), ms: Date.now() - started, bytes_read: 0, bytes_written: bytes }, backgroundOf(c));
  };
  try {
    await run();
  } catch (e) {
    emit(e);
    throw e;
  }
  emit(c.error);
}
