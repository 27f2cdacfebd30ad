/**
 * Usage you can query (#28 §1, docs/usage.md): the tenant's own with a `manage` key, any
 * tenant's with the admin token. Reads only the usage store (AppDeps.usageStore); records reach it
 * after each call (lib/run/metering/held-store.ts), so a call's usage shows within about a second.
 *
 *   GET /v1/usage?from&to&workspace&key&group_by        aggregates (hourly, summed into groups)
 *   GET /v1/usage/export?from&to&cursor&limit            raw records, NDJSON, a page at a time
 *   GET /v1/admin/tenants/{tenant}/usage[/export]        the same for any tenant
 */
import { assertTenantWide, workspaceAllowed } from "../auth/key-bounds.js";
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppDeps } from "../deps.js";
import type { AppEnv } from "../http.js";
import { ToolError } from "../../shared/errors.js";
import { getTenant } from "../auth/keys.js";
import { DAY_MS, EXPORT_PAGE_MAX, GROUP_BY, hourRange, RAW_RETENTION_MS, zeroSums, type GroupBy, type UsageStore } from "../../run/metering/store.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp } from "./common.js";

/** The longest range one query may cover. */
export const MAX_RANGE_MS = 400 * DAY_MS;
/** The range when `from` is not given. */
const DEFAULT_RANGE_MS = 7 * DAY_MS;

const time = (what: string) => z.string().max(64).optional().openapi({ description: `${what}: an ISO 8601 time (2026-11-28T10:00:00Z) or date (UTC), or epoch milliseconds` });
const Range = { from: time("Start, inclusive (default: `to` minus 7 days)"), to: time("End, exclusive (default: now)") };
const UsageQuerySchema = z.object({
  ...Range,
  workspace: z.string().max(100).optional().openapi({ description: "Only this workspace" }),
  key: z.string().max(64).optional().openapi({ description: "Only calls made with this API key id (the `<key id>` of tsk_<key id>_...)" }),
  group_by: z.string().max(100).optional().openapi({ description: `Comma-separated dimensions of each row, any of ${GROUP_BY.join(", ")} (default: none, one row of totals). \`tool\` groups tools (rows with \`tool\`) and routes (rows with \`route\`).`, example: "tool" }),
});
const ExportQuerySchema = z.object({
  ...Range,
  cursor: z.string().max(32).optional().openapi({ description: "The previous page's X-Next-Cursor" }),
  limit: z.coerce.number().int().min(1).max(EXPORT_PAGE_MAX).optional().openapi({ description: `Records per page (default and max ${EXPORT_PAGE_MAX})` }),
});
const Sums = { calls: z.number(), ok: z.number(), errors: z.number(), ms: z.number(), bytes_read: z.number(), bytes_written: z.number(), sandbox_ms: z.number(), net_bytes_in: z.number(), net_bytes_out: z.number() };
const UsageRowSchema = z.object({ tool: z.string().optional(), route: z.string().optional(), workspace: z.string().optional(), key: z.string().optional(), hour: z.string().optional(), day: z.string().optional(), ...Sums }).openapi("UsageRow");
const UsageReportSchema = z
  .object({ from: z.string(), to: z.string(), group_by: z.array(z.enum(GROUP_BY)), rows: z.array(UsageRowSchema), totals: z.object(Sums) })
  .openapi("UsageReport", { description: "Aggregates are hourly: `from` and `to` are widened to whole hours (shown here)." });
const TenantParam = z.object({ tenant: z.string().openapi({ param: { name: "tenant", in: "path" } }) });

function parseTime(raw: string | undefined, what: string): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const ms = /^\d{1,15}$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(ms)) throw new ToolError("INVALID_ARGUMENT", `${what} must be an ISO 8601 time (e.g. 2026-11-28T10:00:00Z), a date, or epoch milliseconds; got ${JSON.stringify(raw)}.`, { [what]: raw });
  return ms;
}

function parseRange(q: { from?: string | undefined; to?: string | undefined }): { from: number; to: number } {
  const to = parseTime(q.to, "to") ?? Date.now();
  const from = parseTime(q.from, "from") ?? to - DEFAULT_RANGE_MS;
  if (from >= to) throw new ToolError("INVALID_ARGUMENT", "from must be before to.", { from: q.from, to: q.to });
  if (to - from > MAX_RANGE_MS) throw new ToolError("INVALID_ARGUMENT", `A query covers at most ${MAX_RANGE_MS / DAY_MS} days; split the range.`, { from: q.from, to: q.to });
  return { from, to };
}

function parseGroupBy(raw: string | undefined): GroupBy[] {
  const names = (raw ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  const bad = names.find((n) => !(GROUP_BY as readonly string[]).includes(n));
  if (bad !== undefined) throw new ToolError("INVALID_ARGUMENT", `group_by: unknown dimension ${JSON.stringify(bad)}; use any of ${GROUP_BY.join(", ")}, comma-separated.`, { group_by: raw });
  return [...new Set(names)] as GroupBy[];
}

function storeOf(deps: AppDeps): UsageStore {
  if (!deps.usageStore) throw new ToolError("UNAVAILABLE", "This deployment keeps no usage store (no USAGE binding: usage records go to its logs only; or its operator turned metering off: TOOLSHED_BUSINESS_OFF); ask its operator.", {});
  return deps.usageStore;
}

async function report(deps: AppDeps, tenant: string, q: z.infer<typeof UsageQuerySchema>) {
  const range = parseRange(q);
  const groupBy = parseGroupBy(q.group_by);
  const rows = await storeOf(deps).query(tenant, { ...range, groupBy, ...(q.workspace !== undefined ? { workspace: q.workspace } : {}), ...(q.key !== undefined ? { key: q.key } : {}) });
  const totals = zeroSums();
  for (const r of rows) for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r[k];
  const { first, end } = hourRange(range);
  return { from: new Date(first).toISOString(), to: new Date(end).toISOString(), group_by: groupBy, rows, totals };
}

async function exportPage(c: Context<AppEnv>, deps: AppDeps, tenant: string, q: z.infer<typeof ExportQuerySchema>): Promise<Response> {
  const range = parseRange({ from: q.from ?? new Date(Date.now() - RAW_RETENTION_MS).toISOString(), to: q.to });
  if (q.cursor !== undefined && !/^\d{1,15}$/.test(q.cursor)) throw new ToolError("INVALID_ARGUMENT", "cursor: pass the X-Next-Cursor of the previous page as it was.", { cursor: q.cursor });
  const page = await storeOf(deps).exportRecords(tenant, { ...range, ...(q.cursor !== undefined ? { cursor: q.cursor } : {}), ...(q.limit !== undefined ? { limit: q.limit } : {}) });
  const body = page.records.map((r) => `${JSON.stringify({ ...r, at: new Date(r.at).toISOString() })}\n`).join("");
  return c.body(body, 200, { "content-type": "application/x-ndjson", ...(page.next_cursor ? { "x-next-cursor": page.next_cursor } : {}) });
}

const reportDoc = { 200: { description: "Usage, summed per group", content: { "application/json": { schema: UsageReportSchema } } } };
const exportDoc = {
  200: {
    description: `One JSON record per line, in the order stored (\`seq\`). \`X-Next-Cursor\`: pass it as \`cursor\` for the next page; absent on the last. Raw records are kept ${RAW_RETENTION_MS / DAY_MS} days.`,
    content: { "application/x-ndjson": { schema: z.string() } },
  },
};

export function usageApp(deps: AppDeps) {
  const app = newApp();
  const manage = { auth: "tenant", scope: "manage" } as const;
  const admin = { auth: "admin" } as const;
  app.openapi(
    // A limited key may ask for one of its workspaces (keyBounded); the export covers the tenant (the guard refuses it such a key).
    createRoute(secureRoute(deps, { ...manage, keyBounded: true }, {
      method: "get", path: "/v1/usage", tags: ["usage"], operationId: "usage_query",
      summary: "This tenant's usage, summed per tool, workspace, key, hour or day",
      description: "Every tool call (every door) and every changing route (file writes, import, workspace create/delete, ...) counts once, success or failure. Needs the `manage` scope. docs/usage.md says what is recorded.",
      request: { query: UsageQuerySchema },
      responses: { ...reportDoc, ...errorResponses(400, 401, 403, 429, 503) },
    })),
    async (c) => {
      const auth = c.get("auth");
      const q = c.req.valid("query");
      // A workspace-limited key sees the usage of one of its workspaces, never the tenant's.
      if (q.workspace === undefined || !workspaceAllowed(auth.workspaces, q.workspace)) assertTenantWide(auth, "GET /v1/usage without ?workspace= (or with one this key does not cover)", "Ask for one of its workspaces with ?workspace=.");
      return c.json(await report(deps, auth.tenant, q), 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, manage, {
      method: "get", path: "/v1/usage/export", tags: ["usage"], operationId: "usage_export",
      summary: "This tenant's raw usage records, NDJSON, paged (for billing pipelines)",
      request: { query: ExportQuerySchema },
      responses: { ...exportDoc, ...errorResponses(400, 401, 403, 429, 503) },
    })),
    async (c) => {
      return (await exportPage(c, deps, c.get("auth").tenant, c.req.valid("query"))) as never; // NDJSON: no typed body
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "get", path: "/v1/admin/tenants/{tenant}/usage", tags: ["admin"],
      summary: "A tenant's usage (as GET /v1/usage)",
      request: { params: TenantParam, query: UsageQuerySchema },
      responses: { ...reportDoc, ...errorResponses(400, 401, 403, 404, 429, 503) },
    })),
    async (c) => c.json(await report(deps, (await getTenant(deps.storage, c.req.valid("param").tenant)).id, c.req.valid("query")), 200),
  );
  app.openapi(
    createRoute(secureRoute(deps, admin, {
      method: "get", path: "/v1/admin/tenants/{tenant}/usage/export", tags: ["admin"],
      summary: "A tenant's raw usage records (as GET /v1/usage/export)",
      request: { params: TenantParam, query: ExportQuerySchema },
      responses: { ...exportDoc, ...errorResponses(400, 401, 403, 404, 429, 503) },
    })),
    async (c) => (await exportPage(c, deps, (await getTenant(deps.storage, c.req.valid("param").tenant)).id, c.req.valid("query"))) as never,
  );
  return app;
}
