/**
 * createApp(deps): the whole API. Each piece is its own OpenAPIHono app (admin, workspaces,
 * raw files, one per tool), mounted here; the OpenAPI document is generated from their schemas.
 */
import type { AppDeps } from "./deps.js";
import { ManifestCache } from "./layers/manifest.js";
import { docsApp } from "./docs/docs-app.js";
import { ToolError } from "./errors.js";
import { adminApp } from "./routes/admin.js";
import { archiveApp } from "./routes/archive.js";
import { versionsApp } from "./routes/versions.js";
import { newApp } from "./routes/common.js";
import { policyApp } from "./routes/policy.js";
import { filesApp } from "./routes/files.js";
import { sessionsApp } from "./routes/sessions.js";
import { catalogApp, toolApp } from "./routes/tools.js";
import { workspacesApp } from "./routes/workspaces.js";
import { handleSync } from "./exec/sync-server.js";
import type { Tool } from "./tool.js";

export const API_VERSION = "0.1.0";

export function createApp(input: AppDeps, tools: readonly Tool[]) {
  // Per-isolate caches are made here, never at module level (lib/ holds no state).
  const deps: AppDeps = { ...input, manifests: input.manifests ?? new ManifestCache() };
  const app = newApp();
  app.openAPIRegistry.registerComponent("securitySchemes", "Bearer", { type: "http", scheme: "bearer", description: "A tenant API key (tsk_...)." });
  app.openAPIRegistry.registerComponent("securitySchemes", "AdminBearer", { type: "http", scheme: "bearer", description: "TOOLSHED_ADMIN_TOKEN." });

  app.get("/", (c) => c.json({ name: "toolshed", version: API_VERSION, docs: "/docs", openapi: "/openapi.json", tools: "/v1/tools" }));
  app.get("/healthz", (c) => c.json({ ok: true }));
  app.route("/", adminApp(deps));
  app.route("/", policyApp(deps));
  app.route("/", workspacesApp(deps));
  app.route("/", filesApp(deps));
  app.route("/", archiveApp(deps));
  app.route("/", versionsApp(deps));
  app.route("/", sessionsApp(deps));
  app.route("/", catalogApp(tools));
  for (const tool of tools) app.route("/", toolApp(tool, deps));
  // The bash runner's narrow window on one workspace (a short-lived HMAC token, not an API key).
  const syncSecret = deps.syncSecret;
  if (syncSecret) app.all("/v1/sync/*", (c) => handleSync(c.req.raw, { driver: deps.storage, manifests: deps.manifests!, kv: deps.kv, secret: syncSecret, listeners: deps.listeners ?? [] }));

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Toolshed",
      version: API_VERSION,
      description: "Hosted tools for AI agents: file, search and shell tools over isolated workspaces. Every tool call returns `{ ok, tool, title, output, data, usage }` or `{ ok: false, tool, error: { code, message, details } }`.",
    },
  });
  // The reference UI is served from here (no CDN): it works offline and behind a locked-down network.
  app.route("/", docsApp({ specUrl: "/openapi.json", title: "Toolshed API reference" }));
  app.notFound(() => {
    throw new ToolError("NOT_FOUND", "No such route. See GET /openapi.json or /docs for the API, GET /v1/tools for the tools.");
  });
  return app;
}
