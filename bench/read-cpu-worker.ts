/**
 * The Worker of bench/read-cpu.ts: the bench Worker (worker.ts), plus
 * - POST /__probe (admin token) {mode, tenant, ws, path}: the storage operations of a read done
 *   straight on the bindings, side by side: "get" (the file, as the floor), "meta" (meta.json),
 *   "kv" (one KV GET), "log" (one usage-sized console.log line), combined with "+"; "noop"; "kvput"
 *   writes the KV key "kv" reads; "body" answers the file's text in the JSON (as a read answers its
 *   content) instead of its length;
 * - any request with `x-probe-quiet: 1`: the same app, its usage records dropped (what the usage
 *   line costs).
 */
import { tools } from "../functions/index.js";
import { createApp } from "../lib/api/app.js";
import { fromWorkersEnv, type WorkersEnv } from "../lib/runtime/workers.js";
import { filesPrefix, workspaceMetaKey } from "../lib/layout/paths.js";
import worker from "./worker.js";

const quietApps = new WeakMap<WorkersEnv, ReturnType<typeof createApp>>();

async function probe(request: Request, env: WorkersEnv): Promise<Response> {
  if (!env.TOOLSHED_ADMIN_TOKEN || request.headers.get("authorization") !== `Bearer ${env.TOOLSHED_ADMIN_TOKEN}`) return Response.json({ ok: false }, { status: 401 });
  const q = (await request.json()) as { mode: string; tenant: string; ws: string; path: string };
  if (q.mode === "kvput") {
    await env.KV.put("probe/rec", JSON.stringify({ etag: "x", at: Date.now() }));
    return Response.json({ ok: true });
  }
  const parts = new Set(q.mode.split("+"));
  const jobs: Promise<unknown>[] = [];
  if (parts.has("get")) jobs.push(env.FILES.get(filesPrefix(q.tenant, q.ws) + q.path).then((o) => o!.text()));
  if (parts.has("meta")) jobs.push(env.FILES.get(workspaceMetaKey(q.tenant, q.ws)).then((o) => o?.text()));
  if (parts.has("kv")) jobs.push(env.KV.get("probe/rec"));
  if (parts.has("log")) console.log(JSON.stringify({ type: "toolshed.usage", at: new Date().toISOString(), tenant: q.tenant, workspace: q.ws, tool: "read", ok: true, ms: 1, bytes_read: 100, bytes_written: 0 }));
  const r = await Promise.all(jobs);
  if (parts.has("body")) return Response.json({ ok: true, output: r[0] });
  return Response.json({ ok: true, bytes: typeof r[0] === "string" ? r[0].length : 0 });
}

export default {
  async fetch(request: Request, env: WorkersEnv, ctx: ExecutionContext): Promise<Response> {
    if (request.headers.get("x-probe-quiet")) {
      let app = quietApps.get(env);
      if (!app) quietApps.set(env, (app = createApp({ ...fromWorkersEnv(env), onUsage: () => {} }, tools)));
      return app.fetch(request, env, ctx);
    }
    if (new URL(request.url).pathname === "/__probe") return probe(request, env);
    return worker.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<WorkersEnv>;
