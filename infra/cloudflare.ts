/** Cloudflare Workers entry: the app over the R2 and KV bindings. */
import { tools } from "../functions/index.js";
import { createApp } from "../lib/app.js";
import { fromWorkersEnv, type WorkersEnv } from "../lib/env.js";

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
} satisfies ExportedHandler<WorkersEnv>;
