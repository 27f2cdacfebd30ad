/**
 * What a runner makes of a sync route's refusal (a non-2xx answer of /v1/sync/*): the one reading of
 * it, for every client of the sync routes (lib/sync/http.ts, the run records' client in runs.ts, the
 * live channel in live-client.ts).
 *
 * - The API's own refusal the model can act on (a Toolshed error envelope with a 4xx code of
 *   PASSED_THROUGH: the workspace gone, a quota used up, a conflict, a rate, a busy session) is
 *   thrown as the API wrote it: its code (so the tool call's HTTP status follows it), its message,
 *   its details (JSON values, bounded) and the sync answer's status.
 * - A refusal of the sync token itself (401, 403) is our bug, not the caller's: INTERNAL.
 * - 5xx: UNAVAILABLE. Anything else (not the envelope, another code): INTERNAL, with an excerpt.
 *
 * A route the API does not serve (an older API) is also a 404 or 405: `missingRoute` tells it
 * apart from a refusal by the route, whose envelope never carries NO_SYNC_ROUTE's message.
 */
import { ERROR_CODES, ToolError, type ErrorCode } from "../shared/errors.js";

/** Codes of the API's refusals a runner hands on as they are: the model can act on each. */
const PASSED_THROUGH: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["NOT_FOUND", "CONFLICT", "FILE_MODIFIED", "QUOTA_EXCEEDED", "RATE_LIMITED", "BUSY", "FILE_TOO_LARGE", "EXPIRED"]);

/** At most this much of the API's details is handed on (JSON); more, and only the status is. */
const MAX_DETAILS_CHARS = 4000;

/** The start of the message every sync route's "no such route" answer has (noSyncRoute): an older API's too. */
const NO_SYNC_ROUTE = "No sync route";

/** The sync routes' one answer to a route they do not serve (thrown; answered as NOT_FOUND). */
export const noSyncRoute = (method: string, path: string) => new ToolError("NOT_FOUND", `${NO_SYNC_ROUTE} ${method} ${path}.`);

interface Envelope {
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

/** The Toolshed error envelope `{ ok: false, error: { code, message, details } }` of an answer's body, or null. */
function envelopeOf(text: string): Envelope | null {
  let e: { code?: unknown; message?: unknown; details?: unknown } | undefined;
  try {
    const body = JSON.parse(text) as { ok?: unknown; error?: typeof e } | null;
    e = body?.ok === false ? body.error : undefined;
  } catch {
    return null;
  }
  if (!e || typeof e.code !== "string" || !(e.code in ERROR_CODES) || typeof e.message !== "string") return null;
  const details = e.details !== null && typeof e.details === "object" && !Array.isArray(e.details) ? (e.details as Record<string, unknown>) : {};
  return { code: e.code as ErrorCode, message: e.message, details: JSON.stringify(details).length <= MAX_DETAILS_CHARS ? details : {} };
}

/** True when a 404/405 answer is "no such route" (an older API), not a refusal by the route. */
export function missingRoute(status: number, text: string): boolean {
  if (status === 405) return true;
  if (status !== 404) return false;
  const e = envelopeOf(text);
  return !e || e.code !== "NOT_FOUND" || e.message.startsWith(NO_SYNC_ROUTE);
}

/**
 * The error a sync route's refusal becomes (module doc). `what`: the failed step, named in the
 * message of a refusal that is not handed on ("Workspace sync failed (manifest)").
 */
export function syncRefusal(status: number, text: string, what: string, extra: Record<string, unknown> = {}): ToolError {
  const e = status >= 400 && status < 500 && status !== 401 && status !== 403 ? envelopeOf(text) : null;
  if (e && PASSED_THROUGH.has(e.code) && !(e.code === "NOT_FOUND" && e.message.startsWith(NO_SYNC_ROUTE))) return new ToolError(e.code, e.message, { ...e.details, ...extra, status });
  return new ToolError(status >= 500 ? "UNAVAILABLE" : "INTERNAL", `${what}: HTTP ${status} ${text.slice(0, 300)}`, { ...extra, status });
}

/** Reads a refused answer's body and throws what it becomes (syncRefusal). */
export async function throwSyncRefusal(res: Response, what: string, extra: Record<string, unknown> = {}): Promise<never> {
  const text = await res.text().catch(() => "");
  throw syncRefusal(res.status, text, what, extra);
}
