/**
 * The bench's Worker: the real Toolshed app, plus POST /__floor (admin token only), which does
 * the same storage operations straight on the same R2 binding with nothing around them.
 */
import toolshed from "../infra/cloudflare.js";
import type { WorkersEnv } from "../lib/runtime/workers.js";
import { floorOp, type FloorRequest } from "./floor-ops.js";

/** The usage store's Durable Object, as in the real entry (wrangler.toml beside this binds it). */
export { UsageObject } from "../infra/cloudflare.js";
/** The limits Durable Object, as in the real entry (the LIMITS binding). */
export { LimitsObject } from "../infra/cloudflare.js";
/** The live sessions' Durable Object (the LIVE binding: bench/live.ts). */
export { LiveObject } from "../infra/cloudflare.js";

export default {
  async fetch(request: Request, env: WorkersEnv, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname !== "/__floor") return toolshed.fetch(request, env, ctx);
    if (!env.TOOLSHED_ADMIN_TOKEN || request.headers.get("authorization") !== `Bearer ${env.TOOLSHED_ADMIN_TOKEN}`) {
      return Response.json({ ok: false, error: "admin token required" }, { status: 401 });
    }
    try {
      return Response.json({ ok: true, data: await floorOp(env.FILES, (await request.json()) as FloorRequest) });
    } catch (e) {
      return Response.json({ ok: false, error: String((e as Error)?.stack ?? e) }, { status: 500 });
    }
  },
} satisfies ExportedHandler<WorkersEnv>;
