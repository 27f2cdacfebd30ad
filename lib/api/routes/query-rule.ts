/**
 * One rule for the query of every documented route: a parameter the route does not declare is
 * refused with INVALID_ARGUMENT naming it and the ones the route takes (a misspelt `?prefix=` on
 * export would otherwise be dropped, and the whole workspace exported), as an unknown field of a
 * JSON body is (json-body.ts). The names come from the route's own definition (its `request.query`,
 * per method), so the OpenAPI document and the rule cannot disagree; a route without one takes none.
 * The guard (access.ts) applies it to every route it guards that is documented.
 */
import type { Context } from "hono";
import { ToolError } from "../../shared/errors.js";
import { suggestArgument } from "../../shared/suggest.js";
import type { AppEnv } from "../http.js";

/** Accepted by every tenant route: `?tenant=` names the tenant an OAuth access token acts as (docs/oauth.md). */
export const TENANT_ROUTE_QUERY = ["tenant"] as const;

/** The query parameters a route takes, by method (GET, POST, ...); HEAD takes GET's unless it declares its own. */
export type QueryNames = ReadonlyMap<string, readonly string[]>;

type WithQuery = { request?: object } | undefined;

/** The names each method's definition declares in `request.query` (a z.object); none for a method without one. */
export function queryNamesOf(route: string, docs: readonly { method: string; doc: WithQuery }[]): QueryNames {
  const names = new Map<string, readonly string[]>();
  for (const { method, doc } of docs) {
    const query = (doc?.request as { query?: unknown } | undefined)?.query as { shape?: Record<string, unknown> } | undefined;
    if (query !== undefined && (typeof query !== "object" || query === null || typeof query.shape !== "object")) {
      throw new Error(`Route ${method.toUpperCase()} ${route}: declare its query as a z.object, so that unknown parameters can be refused (query-rule.ts).`);
    }
    names.set(method.toUpperCase(), Object.keys(query?.shape ?? {}));
  }
  return names;
}

/** Throws INVALID_ARGUMENT when the request's query holds a parameter its route does not take (`also`: taken by every route of its kind). */
export function refuseUnknownQuery(c: Context<AppEnv>, names: QueryNames, also: readonly string[]): void {
  const search = new URL(c.req.url).searchParams;
  if (search.size === 0) return;
  const method = c.req.method.toUpperCase();
  const known = names.get(method) ?? (method === "HEAD" ? names.get("GET") : undefined) ?? [];
  const unknown = [...new Set(search.keys())].filter((k) => !known.includes(k) && !also.includes(k));
  if (!unknown.length) return;
  const guess = unknown.length === 1 ? suggestArgument(unknown[0]!, known) : null;
  const list = unknown.map((k) => `'${k.slice(0, 100)}'`).join(", ");
  throw new ToolError(
    "INVALID_ARGUMENT",
    `Unknown query parameter${unknown.length > 1 ? "s" : ""} ${list} (${guess ? `did you mean '${guess}'? ` : ""}known: ${known.join(", ") || "none"}); nothing was done. Fix the request and retry; GET /openapi.json describes every route's parameters.`,
    { unknown: unknown.map((k) => k.slice(0, 100)), known },
  );
}
