/**
 * createApp(deps): the whole API. Each piece is its own OpenAPIHono app (admin, workspaces,
 * raw files, one per tool), mounted here; the OpenAPI document is generated from their schemas.
 * Every route declares its access (routes/access.ts); the app refuses to start with one that does not.
 */
import { createAuthBackoff } from "./auth/backoff.js";
import { JwksCache } from "./auth/jwks.js";
import type { AuthInfo } from "../contract/caller.js";
import { KNOWN_RECORDS_TTL_MS, type FileRecord } from "../workspace/records.js";
import { forgetOnWrite } from "./routes/known-workspace.js";
import type { MetaRecord } from "../layers/open.js";
import type { AppDeps } from "./deps.js";
import { ManifestCache } from "../layers/manifest.js";
import { IsolateCache } from "../shared/isolate-cache.js";
import { IsolateMemory } from "../shared/isolate-memory.js";
import { HmacKeys } from "../shared/hmac-keys.js";
import { VersionCache } from "../workspace/version-cache.js";
import { SegmentCache } from "../search/segment-cache.js";
import { ListingCache } from "../search/listing-cache.js";
import { docsApp } from "./docs/docs-app.js";
import { traceRequests, tracedDeps } from "./trace-requests.js";
import { ToolError } from "../shared/errors.js";
import { limitedExecutor } from "../exec/limited.js";
import { addRoute } from "./routes/access.js";
import { assertEveryRouteGuarded, methodsAt } from "./routes/served-routes.js";
import { adminApp } from "./routes/admin.js";
import { tenantKeysApp } from "./routes/keys.js";
import { keyStands } from "./auth/keys.js";
import { limitsApp } from "./routes/limits.js";
import { CallLeases } from "../limits/call-leases.js";
import { StorageAllowances } from "../limits/storage-allowance.js";
import { archiveApp } from "./routes/archive.js";
import { versionsApp } from "./routes/versions.js";
import { undoApp } from "./routes/undo.js";
import { auditApp } from "./routes/audit.js";
import { backgroundOf, newApp } from "./routes/common.js";
import { pendingApp } from "./routes/pending.js";
import { policyApp } from "./routes/policy.js";
import { gcApp } from "./routes/gc.js";
import { usageApp } from "./routes/usage.js";
import { modelApp } from "./routes/model.js";
import { oauthApp } from "./routes/oauth.js";
import { filesApp } from "./routes/files.js";
import { filesBatchApp } from "./routes/files-batch.js";
import { sessionsApp } from "./routes/sessions.js";
import { toolApp, unknownToolApp } from "./routes/tools.js";
import { catalogApp } from "./routes/tool-catalog.js";
import { compatApp } from "./routes/compat.js";
import { customToolsApp } from "./routes/custom-tools.js";
import { mcpApp, mcpMethodNotAllowed } from "./routes/mcp.js";
import { isMcpPath } from "./routes/mcp-body.js";
import { secretsApp } from "./routes/secrets.js";
import { workspacesApp } from "./routes/workspaces.js";
import { handleSync } from "../sync/server.js";
import type { RunEnded } from "../sync/server-deps.js";
import { sandboxApp } from "./routes/sandbox.js";
import { appLiveService } from "./live-events.js";
import { emitUsage } from "../run/metering/usage.js";
import { backgroundRunUsage } from "../run/metering/detached-work.js";
import { liveHub } from "../exec/live/hub.js";
import { toolsServed, type Tool } from "../contract/tool.js";
import { API_VERSION } from "../run/version.js";

const OPENAPI_INFO = {
  title: "Toolshed",
  version: API_VERSION,
  description:
    "Hosted tools for AI agents: file, search and shell tools over isolated workspaces. Every tool call returns `{ ok, tool, title, output, data, usage }` or `{ ok: false, tool, error: { code, message, details }, usage }`. `x-toolshed-access` on each operation says what it needs: `public`, `admin` (the admin token) or `tenant:<scope>` (an API key with that scope).",
};

export function createApp(inputDeps: AppDeps, defined: readonly Tool[]) {
  // Where live sessions are off (no coordinator), every door lists and takes the tools without keep_alive.
  const tools = toolsServed(defined, inputDeps.liveCoordinator !== undefined);
  // Per-isolate state is made here, never at module level (lib/ holds no state): the backoff for
  // failed authentication and the manifest cache, unless the caller brings them.
  // Every write of a workspace record through this isolate forgets what it knew of it (known-workspace.ts).
  const knownWorkspaces = inputDeps.knownWorkspaces ?? new IsolateCache<MetaRecord>();
  // Manifests, segments and versions share one byte budget (lib/shared/isolate-memory.ts).
  const memory = inputDeps.memory ?? new IsolateMemory();
  // Live sessions (docs/live-sessions.md): the coordinator, the tenant's concurrent_runs, and the app's usage and audit of each sandbox.
  const live = appLiveService(inputDeps);
  // concurrent_runs: the executor holds a slot of the tenant's limits object while a command runs; past the limit, the slots of live sandboxes whose runner is gone and of runs whose result is stored are freed (lib/exec/limited.ts).
  const executor = inputDeps.executor && inputDeps.limits ? limitedExecutor(inputDeps.executor, inputDeps.limits, live, inputDeps.storage) : inputDeps.executor;
  // Tracing (docs/tracing.md): off without deps.tracer, and then nothing is wrapped.
  // calls_per_minute's token of most calls comes from this isolate's pool (lib/limits/call-leases.ts).
  const callLeases = inputDeps.callLeases ?? (inputDeps.limits ? new CallLeases(inputDeps.limits) : undefined);
  // A write's storage-quota charge from this isolate's allowance (lib/limits/storage-allowance.ts).
  const storageAllowances = inputDeps.storageAllowances ?? (inputDeps.limits ? new StorageAllowances(inputDeps.limits) : undefined);
  const deps: AppDeps = tracedDeps({ ...inputDeps, ...(executor ? { executor } : {}), ...(callLeases ? { callLeases } : {}), ...(storageAllowances ? { storageAllowances } : {}), ...(live ? { live } : {}), storage: forgetOnWrite(inputDeps.storage, knownWorkspaces), knownWorkspaces, authBackoff: inputDeps.authBackoff ?? createAuthBackoff(), memory, manifests: inputDeps.manifests ?? new ManifestCache(memory), segmentCache: inputDeps.segmentCache ?? new SegmentCache(memory), listingCache: inputDeps.listingCache ?? new ListingCache(memory), versions: inputDeps.versions ?? new VersionCache(memory), policies: inputDeps.policies ?? new IsolateCache(), hmacKeys: inputDeps.hmacKeys ?? new HmacKeys(), apiKeys: inputDeps.apiKeys ?? new IsolateCache<AuthInfo | null>(), oauthKeys: inputDeps.oauthKeys ?? new JwksCache(), oauthTrusts: inputDeps.oauthTrusts ?? new IsolateCache(), customTools: inputDeps.customTools ?? new IsolateCache<readonly Tool[]>(), knownRecords: inputDeps.knownRecords ?? new IsolateCache<FileRecord>(KNOWN_RECORDS_TTL_MS), tools });
  const app = newApp();
  if (deps.tracer) app.use("*", traceRequests(deps.tracer));
  app.openAPIRegistry.registerComponent("securitySchemes", "Bearer", { type: "http", scheme: "bearer", description: "A tenant API key (tsk_...), or an OAuth access token of an issuer the tenant trusts (docs/oauth.md)." });
  app.openAPIRegistry.registerComponent("securitySchemes", "AdminBearer", { type: "http", scheme: "bearer", description: "TOOLSHED_ADMIN_TOKEN." });

  const meta = (summary: string) => ({ tags: ["meta"], summary, responses: { 200: { description: "OK" } } });
  const open = { auth: "public" } as const;
  addRoute(app, deps, { method: "get", path: "/", access: open, doc: meta("Where to start: links to the docs, the OpenAPI document and the tools") }, (c) =>
    c.json({ name: "toolshed", version: API_VERSION, docs: "/docs", openapi: "/openapi.json", tools: "/v1/tools" }),
  );
  addRoute(app, deps, { method: "get", path: "/healthz", access: open, doc: meta("Liveness") }, (c) => c.json({ ok: true }));
  app.route("/", adminApp(deps, tools));
  app.route("/", tenantKeysApp(deps, tools));
  app.route("/", limitsApp(deps));
  app.route("/", policyApp(deps));
  app.route("/", gcApp(deps));
  app.route("/", usageApp(deps));
  app.route("/", modelApp(deps));
  app.route("/", oauthApp(deps));
  app.route("/", workspacesApp(deps, tools));
  app.route("/", filesApp(deps));
  app.route("/", filesBatchApp(deps));
  app.route("/", archiveApp(deps));
  app.route("/", versionsApp(deps));
  app.route("/", undoApp(deps));
  app.route("/", auditApp(deps));
  app.route("/", sessionsApp(deps));
  app.route("/", sandboxApp(deps));
  app.route("/", customToolsApp(deps, tools));
  app.route("/", secretsApp(deps));
  app.route("/", catalogApp(tools, deps));
  deps.callerStands ??= keyStands(deps, deps.apiKeys);
  for (const tool of tools) app.route("/", toolApp(tool, deps));
  app.route("/", compatApp(deps, tools));
  app.route("/", pendingApp(deps, tools));
  app.route("/", mcpApp(deps, tools));
  app.route("/", unknownToolApp(tools, deps));
  // The bash runner's narrow window on one workspace (a short-lived HMAC token, not an API key).
  const syncSecret = deps.syncSecret;
  if (syncSecret) {
    const keyAlive = deps.callerStands;
    addRoute(app, deps, { method: "all", path: "/v1/sync/*", access: { auth: "sync" }, undocumented: "the bash runner's internal API, authenticated by its own per-run token" }, (c) => {
      const bg = backgroundOf(c);
      // A background run's sandbox time is billed where its result is stored, once (docs/usage.md), after the answer where there is a waitUntil;
      // a live sandbox's end (the runner's POST .../live/ended) is recorded under this request's waitUntil too (liveHub).
      const onRunEnded = deps.onUsage ? (end: RunEnded) => emitUsage(deps.onUsage, backgroundRunUsage(end), bg) : undefined;
      return handleSync(c.req.raw, { driver: deps.storage, manifests: deps.manifests!, kv: deps.kv, secret: syncSecret, ...(deps.hmacKeys ? { hmacKeys: deps.hmacKeys } : {}), listeners: deps.listeners ?? [], ...(bg ? { background: bg } : {}), ...(live ? { live: liveHub(live, bg) } : {}), keyAlive, ...(deps.limits ? { limits: deps.limits } : {}), ...(onRunEnded ? { onRunEnded } : {}) });
    });
  }
  addRoute(app, deps, { method: "get", path: "/openapi.json", access: open, doc: meta("This document (OpenAPI 3.1)") }, (c) => c.json(app.getOpenAPI31Document({ openapi: "3.1.0", info: OPENAPI_INFO })));
  // The reference UI is served from here (no CDN): it works offline and behind a locked-down network.
  app.route("/", docsApp(deps, { specUrl: "/openapi.json", title: "Toolshed API reference" }));
  const served = methodsAt(app);
  app.notFound((c) => {
    const path = new URL(c.req.url).pathname;
    if (isMcpPath(path)) return mcpMethodNotAllowed(c);
    const allow = served(path);
    if (allow.length) throw new ToolError("METHOD_NOT_ALLOWED", `${c.req.method} is not served on ${path.slice(0, 200)}: it takes ${allow.join(", ")}. See GET /openapi.json or /docs for the API.`, { allow });
    const trimmed = path.replace(/\/+$/, "");
    const trimmedAllow = trimmed !== path ? served(trimmed) : [];
    if (trimmedAllow.length) {
      const send = trimmedAllow.includes(c.req.method) ? `: send ${c.req.method} ${trimmed.slice(0, 200)}` : "";
      throw new ToolError("NOT_FOUND", `No route at ${path.slice(0, 200)}; ${trimmed.slice(0, 200)} (without the trailing slash) takes ${trimmedAllow.join(", ")}${send}.`, { path: trimmed.slice(0, 200), methods: trimmedAllow });
    }
    throw new ToolError("NOT_FOUND", "No such route. See GET /openapi.json or /docs for the API, GET /v1/tools for the tools.");
  });
  assertEveryRouteGuarded(app);
  return app;
}
