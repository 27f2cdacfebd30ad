/**
 * Every (method, path) an app serves, read from the app itself, with the policy its guard carries
 * (route-policy.ts): what the route walks, the OpenAPI check and the app's own refusal of an
 * unguarded route read.
 */
import type { Hono } from "hono";
import type { AppEnv } from "../http.js";
import { openApiPathOf, POLICY, type RoutePolicy } from "./route-policy.js";

/** A served route's path as the document names it (its policy's wildcard name). */
export const docPathOf = (route: ServedRoute): string => openApiPathOf(route.path, route.policy?.wildcard);

/** Hono wraps a mounted sub-app's handlers; the original is kept under this name. */
const COMPOSED_HANDLER = "__COMPOSED_HANDLER";

function policyOf(handler: unknown): RoutePolicy | undefined {
  let h = handler as Record<string | symbol, unknown> | undefined;
  for (let depth = 0; h && depth < 16; depth++) {
    if (h[POLICY]) return h[POLICY] as RoutePolicy;
    h = h[COMPOSED_HANDLER] as Record<string | symbol, unknown> | undefined;
  }
  return undefined;
}

export interface ServedRoute {
  method: string;
  /** Hono path as registered. */
  path: string;
  policy?: RoutePolicy;
}

/** Marks an app-wide middleware (tracing: lib/api/trace-requests.ts): it serves no route of its own. */
export const APP_WIDE = Symbol("toolshed.app-wide-middleware");

/** Every (method, path) the app serves, read from the app itself, with the policy its guard carries. */
export function servedRoutes(app: Hono<AppEnv>): ServedRoute[] {
  const byKey = new Map<string, ServedRoute>();
  for (const r of app.routes) {
    if ((r.handler as { [APP_WIDE]?: boolean })[APP_WIDE]) continue;
    const key = `${r.method} ${r.path}`;
    const route = byKey.get(key) ?? { method: r.method, path: r.path };
    const p = policyOf(r.handler);
    if (p && !route.policy) route.policy = p;
    byKey.set(key, route);
  }
  return [...byKey.values()];
}

/** Refuses an app with a route that declares no access (registered without secureRoute/addRoute). */
export function assertEveryRouteGuarded(app: Hono<AppEnv>): void {
  const bare = servedRoutes(app).filter((r) => !r.policy);
  if (bare.length) throw new Error(`Routes without an access policy (register them with secureRoute or addRoute): ${bare.map((r) => `${r.method} ${r.path}`).join(", ")}`);
}

/** A served path (Hono's syntax: `:name`, `:name?`, `:name{regex}`, `*`) as a regular expression of request paths. */
function pathPattern(path: string): RegExp {
  const segment = (seg: string): string => {
    if (seg === "*") return ".*";
    if (!seg.startsWith(":")) return seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const brace = seg.indexOf("{");
    if (brace > 0 && seg.endsWith("}")) return `(?:${seg.slice(brace + 1, -1)})`;
    return seg.endsWith("?") ? "[^/]*" : "[^/]+";
  };
  return new RegExp(`^${path.split("/").map(segment).join("/")}$`);
}

/**
 * The methods the app serves at a request path (none: no route has that path), read from the app
 * once, when first asked: a request no route took is 405 with them where its path is served by
 * other methods (a GET of a tool route), 404 otherwise. Matched as the router matches (strictly: a
 * trailing slash is another path), so a path is never said to take a method the router refuses there,
 * nor one its route takes only to refuse (RoutePolicy.refuses: MCP's GET and DELETE).
 */
export function methodsAt(app: Hono<AppEnv>): (path: string) => string[] {
  let routes: { method: string; re: RegExp }[] | null = null;
  return (path) => {
    routes ??= servedRoutes(app).filter((r) => r.method !== "ALL" && !r.policy?.refuses?.includes(r.method)).map((r) => ({ method: r.method, re: pathPattern(r.path) }));
    return [...new Set(routes.filter((r) => r.re.test(path)).map((r) => r.method))];
  };
}
