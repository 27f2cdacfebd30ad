/**
 * Every route declares who may call it, and one guard enforces it.
 *
 * A route's Access is part of its definition: `secureRoute()` (zod-openapi routes) and
 * `addRoute()` (raw routes) put the guard first in the route's handler chain, set the OpenAPI
 * `security` and `x-toolshed-access` from it, and read the JSON body (json-body.ts) when the
 * route declares one. createApp ends with `assertEveryRouteGuarded(app)`: a route registered
 * any other way (a bare app.get) makes the app refuse to start, and
 * test/lib/api/routes/access.test.ts walks every route the app serves with keys of every scope set.
 *
 *   public   anyone (/, /healthz, /openapi.json, /docs, /v1/tools)
 *   admin    the admin token (TOOLSHED_ADMIN_TOKEN)
 *   tenant   an API key that may act with `scope` ("any": any valid key; each tool call is then
 *            checked by itself): the key holds the scope AND its tool list needs it (a `readonly`
 *            key writes by no route; lib/run/toolset.ts keyScopeRefusal). `workspace: true` also binds
 *            the {ws} of the path: it must exist and belong to the key's tenant (else NOT_FOUND),
 *            and the workspace's tool list must need the scope too (workspaceScopeRefusal)
 *   sync     the bash runner's own HMAC token, checked by the sync handler itself
 *
 * The guard also writes the audit entry of every mutating call it sees (audit-calls.ts); a route
 * whose calls run tools says `runsTools`, and its tool calls are recorded where they run (lib/run/audit/).
 */
import type { Context, Handler, Hono, MiddlewareHandler } from "hono";
import type { RouteConfig } from "@hono/zod-openapi";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { authenticateAdmin, authenticateTenant, withBearerChallenge } from "../auth/middleware.js";
import { setRateHeaders, takeCall } from "../auth/rate-limit.js";
import type { AppDeps } from "../deps.js";
import type { AppEnv } from "../http.js";
import type { MetaRecord } from "../../layers/open.js";
import { keyScopeRefusal, workspaceScopeRefusal } from "../../run/toolset.js";
import { catalogForLists } from "../../tools/custom/tool.js";
import { backgroundOf, requireWorkspace } from "./common.js";
import { knownAnyRecord, knownPlainRecord } from "./known-workspace.js";
import { readJsonBody } from "./json-body.js";
import { assertTenantWide, workspaceAllowed } from "../auth/key-bounds.js";
import { workspaceNotFound } from "../../layout/workspace-meta.js";
import { ZodType } from "zod";
import { idempotencyKeyOf, idempotent, keptAnswers, scopedKeyHash, KEEP_MS, RUNNING_LEASE_MS, type IdempotencyScope, type ObjectClaim } from "../idempotency.js";
import { onError } from "../http.js";
import { IDEMPOTENCY_ADMIN } from "../../layout/paths.js";
import { meteredAccess, meterRoute } from "./route-usage.js";
import { auditRouteCall } from "./audit-calls.js";
import { accessLabel, openApiPathOf, POLICY, type Access, type RoutePolicy } from "./route-policy.js";
import { queryNamesOf, refuseUnknownQuery, TENANT_ROUTE_QUERY, type QueryNames } from "./query-rule.js";

type Guard = MiddlewareHandler<AppEnv> & { [POLICY]: RoutePolicy };

const securityOf = (a: Access) => (a.auth === "tenant" ? [{ Bearer: [] }] : a.auth === "admin" ? [{ AdminBearer: [] }] : []);

/** An Idempotency-Key's scope (lib/api/idempotency.ts): the admin token's own, or the tenant's sending key's. */
const idempotencyScopeOf = (access: Access, c: Context<AppEnv>): IdempotencyScope =>
  access.auth === "admin" ? { tenant: IDEMPOTENCY_ADMIN } : { tenant: c.get("auth").tenant, keyId: c.get("auth").key_id };

/** What the guard's checks left to the rest of the call: the workspace record's read (started), the Idempotency-Key and its claim. */
interface Enforced {
  bindWorkspace?: () => Promise<void>;
  idempotencyKey?: string;
  claim?: ObjectClaim;
}

/** Authenticates and authorizes; for a `workspace: true` route, returns its record's read, started (not awaited). */
async function enforce(deps: AppDeps, access: Access, c: Context<AppEnv>, body: BodyRule): Promise<Enforced> {
  if (access.auth === "public" || access.auth === "sync") return {};
  if (access.auth === "admin") {
    await authenticateAdmin(deps, c.req.raw.headers);
    const idempotencyKey = idempotencyKeyOf(c);
    return idempotencyKey === undefined ? {} : { idempotencyKey };
  }
  const auth = await authenticateTenant(deps, c.req.raw.headers, new URL(c.req.url));
  c.set("auth", auth);
  // A key limited to some workspaces meets any other as if it did not exist (lib/api/auth/key-bounds.ts),
  // on every route whose path names one, whether or not the route binds it, before anything else is checked.
  const named = c.req.param("ws");
  if (named !== undefined && !workspaceAllowed(auth.workspaces, named)) throw workspaceNotFound(named);
  const scope = access.scope;
  const builtins = deps.tools ?? [];
  // A key's or a workspace's list may name the tenant's custom tools, whose scopes then count (catalogForLists: no read without such a name).
  const catalog = await catalogForLists(deps, builtins, auth.tenant, [auth.tools]);
  const tool = c.get("tool");
  const what = () => (tool ? `The ${tool} tool` : `${c.req.method} ${c.req.routePath.replace(/:(\w+)/g, "{$1}").replace(/\/\*$/, "/{path}")}`);
  // ... and a route whose path names none covers the whole tenant, unless it bounds itself by the key (route-policy.ts keyBounded).
  if (named === undefined && !access.keyBounded) assertTenantWide(auth, what(), "Use a key without a workspace limit, or the routes of one of its workspaces (/v1/workspaces/{ws}/..., GET /v1/usage?workspace=).");
  // The key's scopes within its tool list (lib/run/toolset.ts, the one rule).
  const refusal = scope === "any" ? null : keyScopeRefusal(scope, auth, catalog, what());
  if (refusal) throw refusal;
  // Every mutating route takes an Idempotency-Key (lib/api/idempotency.ts); its claim rides on the rate limit's round trip,
  // or, when the isolate's pool gives the token, is a round trip of its own that the call's reads go beside.
  const idempotencyKey = idempotencyKeyOf(c);
  const ask = deps.limits && idempotencyKey !== undefined ? { key: await scopedKeyHash(idempotencyScopeOf(access, c), idempotencyKey), leaseMs: RUNNING_LEASE_MS, keepMs: KEEP_MS } : undefined;
  // calls_per_minute (auth/rate-limit.ts): a call of this isolate's pool, or one round trip to the tenant's limits object, beside the record's read.
  const admitted = deps.callLeases ? takeCall(deps.callLeases, c, auth, ask, backgroundOf(c)) : undefined;
  const rate = admitted?.then((a) => void (a && c.set("rate", a.headers)));
  rate?.catch(() => {}); // awaited below
  const claim: ObjectClaim | undefined = ask && admitted ? { first: admitted.then((a) => a?.claim), limits: deps.limits!, tenant: auth.tenant } : undefined;
  const keyed = { ...(idempotencyKey !== undefined ? { idempotencyKey } : {}), ...(claim ? { claim } : {}) };
  if (!access.workspace) {
    await rate;
    return keyed;
  }
  const id = named ?? "";
  // ... and within the workspace's tool list, once its record is here.
  const bind = async (record: MetaRecord, known?: true) => {
    const refused = scope === "any" ? null : workspaceScopeRefusal(scope, record.meta.tools, await catalogForLists(deps, builtins, auth.tenant, [record.meta.tools]), what());
    if (refused) throw refused;
    c.set("workspace", { tenant: auth.tenant, id, record, ...(known ? { known } : {}) });
  };
  const known = body.knownWorkspace ? (body.knownLayered ? knownAnyRecord : knownPlainRecord)(deps.knownWorkspaces, auth.tenant, id) : undefined;
  if (known) {
    return {
      ...keyed,
      bindWorkspace: async () => {
        await rate;
        if (body.knownWorkspace!(c)) return bind(known, true);
        await bind(await requireWorkspace(deps.storage, auth.tenant, id, deps.knownWorkspaces));
      },
    };
  }
  const record = requireWorkspace(deps.storage, auth.tenant, id, deps.knownWorkspaces);
  record.catch(() => {}); // awaited by the guard, after the route's early reads have started
  return {
    ...keyed,
    bindWorkspace: async () => {
      await rate;
      await bind(await record);
    },
  };
}

export interface BodyRule {
  /** The query parameters the route takes (a documented route's): any other is refused (query-rule.ts). */
  query?: QueryNames;
  /** The route declares a JSON body: the guard reads it (json-body.ts). */
  jsonBody?: boolean;
  /** Its JSON body's schema (a zod-openapi route's): named in an unknown field's refusal (validationHook). */
  jsonSchema?: ZodType;
  /** Other media types the route declares (an archive upload): such a body is left to the handler, unread. */
  otherBodyTypes?: readonly string[];
  /**
   * Reads the route starts beside the guard's read of the workspace record, once the key is
   * authorized and the body read (a tool's first file: lib/workspace/early.ts). It sets
   * c.get("early"); when the workspace turns out missing, the guard cancels them unseen.
   */
  early?: (c: Context<AppEnv>) => void;
  /**
   * Whether the route's handler can run on a workspace record this isolate knows instead of reading
   * it (lib/api/routes/known-workspace.ts; c.get("workspace").known), and reads it when that is not
   * enough; asked once the body is read and the early reads started. When it says no, the record is read then.
   */
  knownWorkspace?: (c: Context<AppEnv>) => boolean;
  /** With knownWorkspace: a known layered record is enough too (the handler reads no file through it: a command). */
  knownLayered?: boolean;
}

const mediaTypeOf = (c: Context<AppEnv>) => (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();

/** The guard of one route: authenticate and authorize as its policy says, then read its JSON body if it has one. */
export function guard(deps: AppDeps, policy: RoutePolicy, opts: BodyRule = {}): Guard {
  const mw: MiddlewareHandler<AppEnv> = async (c, next) => {
    if (opts.jsonSchema) c.set("bodySchema", opts.jsonSchema);
    const { bindWorkspace, idempotencyKey: key, claim } = await enforce(deps, policy.access, c, opts);
    if (key === undefined) {
      await prepare(c, bindWorkspace);
      return run(c, next);
    }
    const scope = idempotencyScopeOf(policy.access, c);
    // The reads go beside the key's claim; the rest of the call answers inside idempotent(), once the
    // key is claimed (an error is an answer too, and is kept: the reads' own errors included).
    let prepared: Promise<void> = Promise.resolve();
    await idempotent(
      deps.storage,
      scope,
      key,
      c,
      {
        prepare: () => (prepared = prepare(c, bindWorkspace)),
        discard: async () => void (await c.get("early")?.reads.discard()),
        run: async () => {
          try {
            await prepared;
            await run(c, next);
          } catch (e) {
            c.res = onError(e, c);
          }
        },
      },
      claim,
      keptAnswers(deps),
    );
    setRateHeaders(c); // a replay (or a refusal by the key) took a call too: the rate limit as it is now
  };
  /** What a call reads before it runs (nothing written): its JSON body, its early reads, the workspace record. */
  const prepare = async (c: Context<AppEnv>, bindWorkspace: (() => Promise<void>) | undefined) => {
    try {
      if (opts.query) refuseUnknownQuery(c, opts.query, policy.access.auth === "tenant" ? TENANT_ROUTE_QUERY : []);
      // The body is read while the workspace record is on its way; a missing workspace still answers NOT_FOUND first.
      if (opts.jsonBody && !opts.otherBodyTypes?.includes(mediaTypeOf(c))) await readJsonBody(c);
      opts.early?.(c);
    } catch (e) {
      await bindWorkspace?.();
      throw e;
    }
    try {
      await bindWorkspace?.();
    } catch (e) {
      await c.get("early")?.reads.discard();
      throw e;
    }
  };
  const run = async (c: Context<AppEnv>, next: () => Promise<void>) => {
    await next();
    setRateHeaders(c);
  };
  // Usage records of the routes that change something (route-usage.ts); tool calls meter themselves.
  // Neither wraps the route where the operator turned it off (TOOLSHED_BUSINESS_OFF: no usage sink, deps.audit false).
  // A tenant route's 401/403 carries the Bearer challenge, whoever refused: the guard or the handler.
  const challengedMw: MiddlewareHandler<AppEnv> = policy.access.auth === "tenant" ? (c, next) => withBearerChallenge(deps, c, () => mw(c, next) as Promise<void>) : mw;
  const metered: MiddlewareHandler<AppEnv> = deps.onUsage && meteredAccess(policy.access) ? (c, next) => meterRoute(deps, c, "scope" in policy.access ? policy.access.scope : undefined, () => challengedMw(c, next) as Promise<void>) : challengedMw;
  return Object.assign(deps.audit === false ? metered : audited(deps, policy, metered), { [POLICY]: policy });
}

/** Every mutating call the guard sees leaves an audit entry, refused or done (audit-calls.ts). */
function audited(deps: AppDeps, policy: RoutePolicy, mw: MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    let reached = false;
    try {
      await mw(c, async () => {
        reached = true;
        await next();
      });
    } catch (error) {
      await auditRouteCall(deps, policy, c, { reached, error });
      throw error;
    }
    await auditRouteCall(deps, policy, c, { reached });
  };
}

type WithBody = { request?: { body?: { content?: Record<string, { schema?: unknown } | undefined> } } };
/** What a route's definition says about its body: JSON (read by the guard, its schema kept) and any other declared types. */
function bodyRuleOf(routes: (WithBody | undefined)[]): BodyRule {
  const types = routes.flatMap((r) => Object.keys(r?.request?.body?.content ?? {}).map((t) => t.toLowerCase()));
  const schemas = routes.map((r) => r?.request?.body?.content?.["application/json"]?.schema).filter((s) => s instanceof ZodType);
  return { jsonBody: types.includes("application/json"), ...(schemas.length === 1 ? { jsonSchema: schemas[0] as ZodType } : {}), otherBodyTypes: types.filter((t) => t !== "application/json") };
}

/** A zod-openapi route with its access: `app.openapi(createRoute(secureRoute(deps, access, {...})), handler)`. */
export function secureRoute<R extends RouteConfig>(deps: AppDeps, access: Access, route: R): R {
  const own = route.middleware === undefined ? [] : Array.isArray(route.middleware) ? route.middleware : [route.middleware];
  return {
    ...route,
    security: securityOf(access),
    "x-toolshed-access": accessLabel(access),
    middleware: [guard(deps, { access }, { ...bodyRuleOf([route as WithBody]), query: queryNamesOf(route.path, [{ method: route.method, doc: route }]) }), ...own],
  } as R;
}

type Method = "get" | "post" | "put" | "delete" | "head";
type Doc = Omit<RouteConfig, "method" | "path" | "security" | "middleware">;

export interface RawRoute {
  method: Method | Method[] | "all";
  /** Hono path (`:param`, trailing `*` for the rest of the URL, documented as {path}, or as `wildcard` names it). */
  path: string;
  /** RoutePolicy.wildcard. */
  wildcard?: string;
  access: Access;
  /** The OpenAPI operation(s), keyed by method when they differ; required unless `undocumented` says why. */
  doc?: Doc | Partial<Record<Method, Doc>>;
  undocumented?: string;
  /** Methods routed only for the handler to refuse them (MCP's GET and DELETE: RoutePolicy.refuses). */
  refuses?: Method[];
  /** Handlers that run before the guard (the tool meter, so that refusals are metered too). */
  before?: MiddlewareHandler<AppEnv>[];
  /** Reads started beside the guard's read of the workspace record (BodyRule.early). */
  early?: BodyRule["early"];
  /** BodyRule.knownWorkspace, BodyRule.knownLayered. */
  knownWorkspace?: BodyRule["knownWorkspace"];
  knownLayered?: true;
}

/** A route without zod-openapi's validators (raw files, tools, the index, sync), guarded and documented the same way. */
export function addRoute(app: OpenAPIHono<AppEnv>, deps: AppDeps, spec: RawRoute, ...handlers: Handler<AppEnv>[]): void {
  const methods = spec.method === "all" ? [] : Array.isArray(spec.method) ? spec.method : [spec.method];
  if (!spec.doc && !spec.undocumented) throw new Error(`Route ${spec.path}: document it (doc) or say why not (undocumented).`);
  const docs = methods.map((m) => {
    const d = spec.doc && m in spec.doc ? (spec.doc as Record<Method, Doc>)[m] : (spec.doc as Doc | undefined);
    return { m, d };
  });
  const g = guard(deps, { access: spec.access, ...(spec.undocumented ? { undocumented: spec.undocumented } : {}), ...(spec.wildcard ? { wildcard: spec.wildcard } : {}), ...(spec.refuses ? { refuses: spec.refuses.map((m) => m.toUpperCase()) } : {}) }, { ...bodyRuleOf(docs.map(({ d }) => d as WithBody | undefined)), ...(spec.undocumented ? {} : { query: queryNamesOf(spec.path, docs.map(({ m, d }) => ({ method: m, doc: d }))) }), ...(spec.early ? { early: spec.early } : {}), ...(spec.knownWorkspace ? { knownWorkspace: spec.knownWorkspace } : {}), ...(spec.knownLayered ? { knownLayered: true } : {}) });
  const chain = [...(spec.before ?? []), g, ...handlers] as Handler<AppEnv>[];
  const on = app.on.bind(app) as unknown as (method: string | string[], path: string, ...h: Handler<AppEnv>[]) => void;
  on(spec.method === "all" ? "ALL" : methods.map((m) => m.toUpperCase()), spec.path, ...chain);
  if (spec.undocumented) return;
  for (const { m, d } of docs) {
    app.openAPIRegistry.registerPath({ ...(d as Doc), method: m, path: openApiPathOf(spec.path, spec.wildcard), security: securityOf(spec.access), "x-toolshed-access": accessLabel(spec.access) } as RouteConfig);
  }
}
