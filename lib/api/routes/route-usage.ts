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
 * whatever failed after that; one without a valid key bills no one. A request the Idempotency-Key
 * answered itself (its kept answer replayed, or refused: still running, a different request, a kept
 * answer too large or unreadable: lib/api/idempotency.ts answeredByKey) ran nothing and is not recorded.
 * bytes_written is the request body's declared size (Content-Length) on writes and imports, or, sent
 * without one (chunked: a batch upload, an archive), the bytes the route read of it, counted as they
 * passed; 0 on reads.
 * bytes_read is the answer's declared size on reads (GET, HEAD), or, streamed without one (an export:
 * up to 2 GiB), the bytes sent, counted as they passed: the record then waits for the body's end (or
 * the client's leaving). Before, both undeclared kinds were billed 0. A JSON body or answer without a
 * length (bounded by its route: a listing's page, a create's arguments) is not counted: 0, as before.
 */
import type { Context } from "hono";
import type { AppDeps } from "../deps.js";
import type { AppEnv } from "../http.js";
import { toToolError } from "../../contract/errors.js";
import { emitUsage, emitUsageAtEnd } from "../../run/metering/usage.js";
import type { UsageRecord } from "../../run/metering/record.js";
import { backgroundOf } from "./common.js";
import { countedStream, type CountedStream } from "../../shared/counted-stream.js";
import { answeredByKey } from "../idempotency.js";

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

/**
 * A route's usage record (not a tool's: `route`, no `tool`): the one place its fields are listed, for
 * meterRoute and for the compat door's record of a call its adapter refused before any tool ran
 * (compat.ts). `code` set: not ok. The workspace is the path's, bounded as every key part is.
 */
export function routeUsageRecord(f: { auth: { tenant: string; key_id: string }; workspace: string; route: string; code: string | undefined; ms: number; bytes_read: number; bytes_written: number }): UsageRecord {
  return { tenant: f.auth.tenant, workspace: f.workspace.slice(0, 100), key: f.auth.key_id, route: f.route, ok: !f.code, ...(f.code ? { code: f.code } : {}), ms: f.ms, bytes_read: f.bytes_read, bytes_written: f.bytes_written };
}

/** Runs the guarded route (`run`) and emits its usage record once it has answered. */
export async function meterRoute(deps: AppDeps, c: Context<AppEnv>, scope: string | undefined, run: () => Promise<void>): Promise<void> {
  if (!deps.onUsage || NOT_METERED.has(c.req.method) || c.get("call") || (scope === "manage" && READS.has(c.req.method))) return run();
  const started = Date.now();
  const route = routeNameOf(c.req.method, c.req.routePath);
  const read = READS.has(c.req.method);
  // A body sent without a declared length is counted as the route reads it.
  const brought = !read && c.req.raw.body && !c.req.header("content-length") && !isJson(c.req.raw) ? countRequest(c) : null;
  const emit = (error: unknown) => {
    const auth = c.get("auth");
    if (!auth) return; // no valid key: nobody to bill
    if (answeredByKey(c)) return; // the Idempotency-Key's kept answer or its refusal: nothing ran (lib/api/idempotency.ts)
    const code = error ? toToolError(error).code : c.res.status >= 400 ? `HTTP_${c.res.status}` : undefined;
    const record = (bytes_read: number) => routeUsageRecord({ auth, workspace: c.req.param("ws") ?? "", route, code, ms: Date.now() - started, bytes_read, bytes_written: read ? 0 : (brought?.bytes() ?? sizeOf(c.req.header("content-length"))) });
    const later = backgroundOf(c);
    // An answer streamed without a declared length is counted as it is sent; its record is made at its end.
    const sent = read && !error && c.res.body && !c.res.headers.get("content-length") && !isJson(c.res) ? countResponse(c) : null;
    if (!sent) return emitUsage(deps.onUsage, record(read && !error ? sizeOf(c.res.headers.get("content-length")) : 0), later);
    const ms = Date.now() - started;
    emitUsageAtEnd(deps.onUsage, sent.ended, () => ({ ...record(sent.bytes()), ms }), later);
  };
  try {
    await run();
  } catch (e) {
    emit(e);
    throw e;
  }
  emit(c.error);
}

/** The request's body, counted as the route reads it (the route reads the counted copy). */
function countRequest(c: Context<AppEnv>): CountedStream {
  const counted = countedStream(c.req.raw.body!);
  c.req.raw = new Request(c.req.raw, { body: counted.body, duplex: "half" } as RequestInit);
  return counted;
}

/** A JSON body or answer (small, bounded by its route: a listing's page, a create's arguments): left as it is, never a stream of ours. */
const isJson = (m: Request | Response) => (m.headers.get("content-type") ?? "").startsWith("application/json");

/** The answer's body, counted as it is sent. */
function countResponse(c: Context<AppEnv>): CountedStream {
  const counted = countedStream(c.res.body!);
  c.res = new Response(counted.body, c.res);
  return counted;
}
