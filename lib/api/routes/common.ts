/** Schemas and helpers shared by the route files. */
import { z } from "@hono/zod-openapi";
import { OpenAPIHono } from "@hono/zod-openapi";
import { ToolError } from "../../shared/errors.js";
import { workspaceNotFound } from "../../layout/workspace-meta.js";
import { onError, validationHook, type AppEnv } from "../http.js";
import { workspacePrefix } from "../../layout/paths.js";
import type { StorageDriver } from "../../storage/types.js";
import type { AppDeps } from "../deps.js";
import { filesDriver, openWorkspace, readMeta, type MetaRecord, type OpenedWorkspace } from "../../layers/open.js";
import { layerDeps } from "../../run/run-tool.js";
import type { Context } from "hono";
import type { WaitUntil } from "../../shared/after-answer.js";
import { knownWorkspaceKey, type KnownWorkspaces } from "./known-workspace.js";

export const newApp = () => {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.onError(onError);
  return app;
};

export const ErrorSchema = z
  .object({
    ok: z.literal(false),
    tool: z.string().optional(),
    error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }),
  })
  .openapi("Error");

export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { description: "Error", content: { "application/json": { schema: ErrorSchema } } }]));

export const WsParam = z.object({ ws: z.string().openapi({ param: { name: "ws", in: "path" }, example: "my-project" }) });

/**
 * The workspace exists and belongs to the caller's tenant, else NOT_FOUND (no difference between
 * the two). Returns its record (meta.json, one GET): the guard keeps it for the handler, which
 * opens the workspace from it (requestWorkspace) instead of reading it again.
 */
export async function requireWorkspace(storage: StorageDriver, tenant: string, ws: string, known?: KnownWorkspaces): Promise<MetaRecord> {
  let rec: MetaRecord | null = null;
  try {
    workspacePrefix(tenant, ws);
    rec = await readMeta(storage, tenant, ws);
  } catch (e) {
    if (e instanceof ToolError) rec = null;
    else throw e;
  }
  if (!rec) {
    known?.forget(knownWorkspaceKey(tenant, ws));
    throw workspaceNotFound(ws);
  }
  known?.set(knownWorkspaceKey(tenant, ws), rec);
  return rec;
}

/**
 * The runtime's waitUntil for this request (Workers; Lambda: lib/runtime/lambda-stream.ts), or undefined (tests without an
 * execution context). Found once per request: without one, Hono's `executionCtx` throws, and an
 * Error with its stack on every ask was ~3 % of a read's CPU in a Node profile.
 */
export function backgroundOf(c: Context<AppEnv>): WaitUntil | undefined {
  const found = c.get("background");
  if (found !== undefined) return found ?? undefined;
  let ctx: { waitUntil(p: Promise<unknown>): void } | undefined;
  try {
    ctx = c.executionCtx;
  } catch {
    ctx = undefined;
  }
  // The one place the request's waitUntil is wrapped; work goes to it through lib/shared/after-answer.ts.
  const background: WaitUntil | undefined = typeof ctx?.waitUntil === "function" ? (p) => ctx!.waitUntil(p) : undefined;
  c.set("background", background ?? null);
  return background;
}

/**
 * The request's workspace opened from the record its guard read (one read of meta.json per call);
 * read anew when the guard did not bind this workspace.
 */
export async function requestWorkspace(c: Context<AppEnv>, deps: AppDeps, tenant: string, ws: string): Promise<OpenedWorkspace> {
  const seen = c.get("workspace");
  if (seen && seen.tenant === tenant && seen.id === ws) return { ...seen.record, driver: await filesDriver(layerDeps(deps), tenant, ws, seen.record.meta) };
  return openWorkspace(layerDeps(deps), tenant, ws);
}
