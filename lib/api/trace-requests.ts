/**
 * The root span of every request (docs/tracing.md): a server span named by method and route,
 * child of the caller's W3C `traceparent` header, or, on the MCP door, of the JSON-RPC message's
 * `params._meta.traceparent` (it wins over the header: it names the one call). Storage, KV, the
 * runner invocation and web requests open their spans under it through the decorators createApp
 * puts around the deps. The spans are exported when the response is ready: in waitUntil on
 * Workers, awaited before the response on Lambda and Node (a frozen Lambda sends nothing).
 *
 * Attributes: method, route, path, status, tenant, key id, workspace, tool; never a header's
 * value, a token or a body.
 */
import type { MiddlewareHandler } from "hono";
import { parseTraceparent, type SpanContext, type Tracer } from "../shared/trace.js";
import { backgroundOf } from "./routes/common.js";
import { isMcpPath, mcpBodyToTrace } from "./routes/mcp-body.js";
import { afterAnswer } from "../shared/after-answer.js";
import { APP_WIDE } from "./routes/served-routes.js";
import type { AppEnv } from "./http.js";
import type { AppDeps } from "./deps.js";
import { tracedStorage, tracedKeyValue } from "../storage/traced.js";
import { tracedExecutor } from "../exec/traced.js";
import { tracedLiveCoordinator } from "../exec/live/traced.js";
import { tracedFetcher } from "../tools/web/traced.js";
import { literalOnlyFetcher } from "../tools/web/transport.js";

/** The traceparent of an MCP message (or of the first message of a batch that has one). */
export function mcpTraceparent(body: unknown): SpanContext | null {
  for (const m of Array.isArray(body) ? body : [body]) {
    const meta = (m as { params?: { _meta?: { traceparent?: unknown } } } | null)?.params?._meta;
    const found = typeof meta?.traceparent === "string" ? parseTraceparent(meta.traceparent) : null;
    if (found) return found;
  }
  return null;
}

/** The runner's sync routes share one registered route: named by their operation (manifest, files, put, run/claim, live/next...). */
const syncRoute = (path: string): string => {
  const [first = "", second = ""] = path.slice("/v1/sync/".length).split("/");
  return `/v1/sync/${first}${(first === "run" || first === "live") && second ? `/${second}` : ""}`;
};

export function traceRequests(tracer: Tracer): MiddlewareHandler<AppEnv> {
  const middleware: MiddlewareHandler<AppEnv> = async (c, next) => {
    const method = c.req.method;
    let parent = parseTraceparent(c.req.header("traceparent"));
    // Only with tracing on, only the MCP door: its body, read here once for the route too, and parsed here only when small (routes/mcp-body.ts).
    if (method === "POST" && isMcpPath(c.req.path)) parent = mcpTraceparent(await mcpBodyToTrace(c)) ?? parent;
    await tracer.span(
      `${method} ${c.req.path}`,
      async (span) => {
        await next();
        // After next(), the index of the handler that answered (hono/compose sets it as it dispatches).
        const route = c.req.routePath;
        span.set("http.route", route);
        span.set("http.response.status_code", c.res.status);
        const auth = c.get("auth") as { tenant?: string; key_id?: string } | undefined; // absent on public routes
        span.set("toolshed.tenant", auth?.tenant);
        span.set("toolshed.key_id", auth?.key_id);
        span.rename(`${method} ${route === "/v1/sync/*" ? syncRoute(c.req.path) : route}`);
        const named = /^\/v1\/workspaces\/([^/]+)(?:\/tools\/([^/]+))?/.exec(c.req.path);
        span.set("toolshed.workspace", named?.[1]);
        span.set("toolshed.tool", named?.[2]);
        if (c.res.status >= 500) span.fail(`HTTP ${c.res.status}`);
      },
      { kind: "server", parent, attributes: { "http.request.method": method, "url.path": c.req.path } },
    );
    await afterAnswer(backgroundOf(c), "trace export", () => tracer.flush(), "await");
  };
  return Object.assign(middleware, { [APP_WIDE]: true });
}

/** The deps with their storage, KV, executor, live coordinator and web transport traced; the same deps when tracing is off. */
export function tracedDeps(deps: AppDeps): AppDeps {
  const tracer = deps.tracer;
  if (!tracer) return deps;
  return {
    ...deps,
    storage: tracedStorage(deps.storage, tracer),
    kv: tracedKeyValue(deps.kv, tracer),
    ...(deps.executor ? { executor: tracedExecutor(deps.executor, tracer) } : {}),
    ...(deps.live ? { live: { ...deps.live, coordinator: tracedLiveCoordinator(deps.live.coordinator, tracer) } } : {}),
    webFetch: { ...deps.webFetch, fetcher: tracedFetcher(deps.webFetch?.fetcher ?? literalOnlyFetcher, tracer) },
  };
}
