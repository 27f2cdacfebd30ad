/** Cloudflare Workers entry: the app over the R2 and KV bindings; the cron trigger runs GC, the audit log's retention and the rest of the housekeeping tick. */
import { tools } from "../functions/index.js";
import { createApp } from "../lib/api/app.js";
import { fromWorkersEnv, type WorkersEnv } from "../lib/runtime/workers.js";
import { housekeepingTick } from "../lib/runtime/housekeeping.js";
import { appLiveService } from "../lib/api/live-events.js";

/** The usage store's Durable Object class (wrangler.toml binds it as USAGE). */
export { UsageObject } from "../lib/runtime/usage-object.js";
/** The Durable Object class of the LIMITS binding (wrangler.toml): one per tenant. */
export { LimitsObject } from "../lib/limits/durable-object.js";
/** The Durable Object class of the LIVE binding (wrangler.toml): one per live session (docs/live-sessions.md). */
export { LiveObject } from "../lib/runtime/live-object.js";

// One app per env object: bindings are fixed for the isolate's life, routes are built once.
const apps = new WeakMap<WorkersEnv, ReturnType<typeof createApp>>();

export default {
  fetch(request: Request, env: WorkersEnv, ctx: ExecutionContext) {
    let app = apps.get(env);
    if (!app) {
      app = createApp(fromWorkersEnv(env), tools);
      apps.set(env, app);
    }
    return app.fetch(request, env, ctx);
  },
  /** `[triggers] crons` in wrangler.toml: GC of packs and manifests and the audit log's retention, a few tenants per tick (README "GC", docs/audit.md). */
  scheduled(_controller: ScheduledController, env: WorkersEnv, ctx: ExecutionContext) {
    const deps = fromWorkersEnv(env);
    // With the live service: forgotten live ends billed from their markers (lib/exec/live/forgotten-end.ts).
    ctx.waitUntil(housekeepingTick({ storage: deps.storage, kv: deps.kv, live: appLiveService(deps) }, env).then(() => undefined));
  },
} satisfies ExportedHandler<WorkersEnv>;
