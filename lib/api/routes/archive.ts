/**
 * Bulk import and export of workspaces (README "Import and export"):
 *   POST /v1/workspaces/{ws}/import?mode=merge|replace&prefix=   body: tar, tar.gz or zip (sniffed)
 *   GET  /v1/workspaces/{ws}/export?path=                        a tar.gz, ETag / If-None-Match
 *   POST /v1/workspaces?id=&name=&prefix=                        with an archive body (workspaces.ts hands it here)
 */
import type { Context } from "hono";
import { newWorkspaceId } from "../auth/key-bounds.js";
import { createRoute, z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../../shared/errors.js";
import type { AppEnv } from "../http.js";
import { internalPrefix, normalizePath } from "../../layout/paths.js";
import { doorRecords } from "../../workspace/records.js";
import { quoteEtag, unquoteEtag } from "../../storage/types.js";
import { createWorkspace, deleteWorkspace } from "../../workspace/registry.js";
import { callerOf, quotaOf, quotaOpt } from "../../workspace/quota.js";
import { Workspace } from "../../workspace/workspace.js";
import { archiveLimits } from "../../archive/limits.js";
import { exportEtag, exportStream, listForExport } from "../../archive/export.js";
import type { ImportMode, ImportReport } from "../../archive/import.js";
import { storageSpool } from "../../archive/spool.js";
import { importIntoLayers } from "../../layers/import.js";
import { readModes, updateModesRevertibly, type ExecModes, type ModesDelta } from "../../layout/modes.js";
import { parseToolList, PRESET_NAMES } from "../../run/toolset.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp, WsParam } from "./common.js";
import { layerDeps } from "../../run/run-tool.js";
import { openWorkspace } from "../../layers/open.js";
import { catalogForLists } from "../../tools/custom/tool.js";
import { downloadHeaders } from "./download-headers.js";

const binary = z.string().openapi({ format: "binary" });
/** Request bodies an import accepts; the format is sniffed from the bytes whatever the type says. */
export const ARCHIVE_CONTENT = {
  "application/gzip": { schema: binary },
  "application/x-tar": { schema: binary },
  "application/zip": { schema: binary },
  "application/octet-stream": { schema: binary },
};
/** Content types that make POST /v1/workspaces a create-and-import. */
export const isArchiveContentType = (ct: string | undefined) => /^application\/(gzip|x-tar|zip|octet-stream)\s*(;|$)/i.test(ct?.trim() ?? "");

const ImportQuery = z.object({
  mode: z.enum(["merge", "replace"]).default("merge").openapi({ description: "merge: add and overwrite; replace: also delete files under the prefix that the archive does not hold (only after every file landed)" }),
  prefix: z.string().max(3072).optional().openapi({ description: "Directory the archive's entries land in (default: the root)" }),
});
export const ImportReportSchema = z
  .object({
    workspace: z.string(), format: z.enum(["tar", "tar.gz", "zip"]), mode: z.enum(["merge", "replace"]), prefix: z.string(),
    entries: z.number(), files: z.number(), bytes: z.number().openapi({ description: "Bytes of the files that landed" }), created: z.number(), updated: z.number(), deleted: z.number().openapi({ description: "Files of the workspace removed (replace: under the prefix, not in the archive; either mode: where a link of the archive took their path)" }),
    links_deleted: z.number().openapi({ description: "Symlinks of the workspace removed (replace: under the prefix, not in the archive; either mode: where a file or directory of the archive took their path)" }),
    links_replaced: z.number().openapi({ description: "Symlinks of the workspace replaced by the archive's links at the same path" }),
    kept: z.array(z.string()), kept_count: z.number(),
    directories: z.number().openapi({ description: "Directory entries in the archive" }),
    empty_directories: z.number().openapi({ description: "Of those, the empty ones, kept as explicit directories (as mkdir leaves them)" }),
    symlinks: z.number().openapi({ description: "Symlinks kept as links (their targets as data, never followed)" }),
    executable: z.number().openapi({ description: "Files imported with the execute bit (the owner's x in the archive's mode)" }),
    skipped: z.array(z.object({ name: z.string(), reason: z.string() })), skipped_count: z.number(),
    message: z.string().openapi({ description: "The report as text: what landed, and every entry not kept (links, devices, unsafe names), by reason" }),
    ms: z.number(),
  })
  .openapi("ImportReport");

/** The workspace (NOT_FOUND when missing or another tenant's), its files through the merged view when layered. */
const workspaceOf = async (deps: AppDeps, tenant: string, id: string, deferChanges = false) =>
  new Workspace({ driver: (await openWorkspace(layerDeps(deps), tenant, id)).driver, records: doorRecords(deps.kv, tenant, id, "raw"), tenant, id, listeners: deps.listeners ?? [], deferChanges });

function contentLength(c: Context<AppEnv>): number | undefined {
  const h = c.req.header("content-length");
  return h !== undefined && /^\d+$/.test(h) ? Number(h) : undefined;
}

/** Runs one import of the request's body into an existing workspace of the caller's tenant. */
async function runImport(c: Context<AppEnv>, deps: AppDeps, id: string, mode: ImportMode, prefixInput: string | undefined): Promise<ImportReport> {
  const tenant = c.get("auth").tenant;
  const prefix = normalizePath(prefixInput ?? "");
  const body = c.req.raw.body;
  if (!body) throw new ToolError("INVALID_ARGUMENT", "Send the archive (tar, tar.gz or zip) as the request body.", { reason: "empty" });
  const opened = await openWorkspace(layerDeps(deps), tenant, id);
  const ws = new Workspace({ driver: opened.driver, records: doorRecords(deps.kv, tenant, id, "raw"), tenant, id, listeners: deps.listeners ?? [], deferChanges: true, ...quotaOpt(quotaOf({ ...(deps.limits ? { limits: deps.limits } : {}) }, tenant, id, callerOf(c.get("auth")), opened.driver)) });
  const length = contentLength(c);
  const opts = {
    mode,
    prefix,
    limits: archiveLimits(deps.archiveLimits),
    spool: storageSpool(deps.storage, internalPrefix(tenant, id)),
    recordModes: (build: (now: ExecModes) => ModesDelta) => updateModesRevertibly(deps.storage, tenant, id, build),
    ...(length !== undefined ? { contentLength: length } : {}),
  };
  // Into packs + a manifest, all or nothing (lib/layers/import.ts).
  return importIntoLayers(layerDeps(deps), ws, opened, body, opts);
}

/** `?tools=readonly` is a preset, `?tools=readonly,bash` a list (as the JSON body's `tools`). */
const toolsQuery = (v: string): string | string[] => {
  const items = v.split(",").map((x) => x.trim());
  return items.length === 1 && (PRESET_NAMES as readonly string[]).includes(items[0]!) ? items[0]! : items;
};

/** POST /v1/workspaces with an archive body (the route needs 'write'): creates the workspace, imports into it; a failed import deletes it again. */
export async function createWithArchive(c: Context<AppEnv>, deps: AppDeps): Promise<Response> {
  const q = c.req.query();
  const tenant = c.get("auth").tenant;
  // `tools` (a preset, or names joined by commas): the way to load a workspace no route may write to afterwards.
  const asked = q.tools !== undefined ? toolsQuery(q.tools) : undefined;
  const list = asked !== undefined ? parseToolList(asked, await catalogForLists(deps, deps.tools ?? [], tenant, [asked]), "tools") : undefined;
  const id = newWorkspaceId(c.get("auth"), q.id);
  const meta = await createWorkspace(deps.storage, tenant, { ...(id !== undefined ? { id } : {}), ...(q.name !== undefined ? { name: q.name.slice(0, 200) } : {}), ...(list !== undefined ? { tools: list } : {}) });
  try {
    const report = await runImport(c, deps, meta.id, "merge", q.prefix);
    return c.json({ ...meta, import: { workspace: meta.id, ...report } }, 201);
  } catch (e) {
    await deleteWorkspace(deps.storage, tenant, meta.id).catch((err) => console.error("could not delete a workspace whose import failed", err));
    await deps.limits?.setStorage(tenant, meta.id, null).catch(() => {});
    throw e;
  }
}

export function archiveApp(deps: AppDeps) {
  const app = newApp();
  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "write", workspace: true }, {
      method: "post", path: "/v1/workspaces/{ws}/import", tags: ["workspaces"],
      summary: "Import an archive (tar, tar.gz or zip; streamed)",
      description: "Each file lands whole or not at all, with its execute bit; empty directories are kept; symlinks are kept as links (never followed); hard links, devices and unsafe names are skipped, listed, and named in `message`. All or nothing: an import that stops (a bound, a damaged or cut archive, a zip entry whose CRC-32 or size does not match, a concurrent change) leaves the workspace and its storage as they were; its error says why and names the entry.",
      request: { params: WsParam, query: ImportQuery, body: { required: true, content: ARCHIVE_CONTENT } },
      responses: { 200: { description: "Imported", content: { "application/json": { schema: ImportReportSchema } } }, ...errorResponses(400, 401, 403, 404, 409, 413) },
    })),
    async (c) => {
      const { ws } = c.req.valid("param");
      const q = c.req.valid("query");
      const report = await runImport(c, deps, ws, q.mode, q.prefix);
      return c.json({ workspace: ws, ...report }, 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "read", workspace: true }, {
      method: "get", path: "/v1/workspaces/{ws}/export", tags: ["workspaces"],
      summary: "Export the workspace (or a directory) as a tar.gz, streamed",
      description: "Entry names are relative to `path`. Every directory is an entry (empty ones included); files are mode 0755 when executable, else 0644; symlinks are symlink entries (after the files). The ETag is a digest of the listed directories, files' paths, etags and execute bits, and symlinks: send it back in If-None-Match to get 304 without the archive being built.",
      request: { params: WsParam, query: z.object({ path: z.string().max(3072).optional().openapi({ description: "Directory (or file) to export; default the whole workspace" }) }) },
      responses: { 200: { description: "A gzip-compressed tar", content: { "application/gzip": { schema: binary } } }, 304: { description: "Not modified" }, ...errorResponses(400, 401, 403, 404, 413) },
    })),
    async (c) => {
      const { ws } = c.req.valid("param");
      const tenant = c.get("auth").tenant;
      const dir = normalizePath(c.req.valid("query").path ?? "");
      const workspace = await workspaceOf(deps, tenant, ws);
      const { exec, links } = await readModes(deps.storage, tenant, ws);
      const listing = await listForExport(workspace, dir, archiveLimits(deps.archiveLimits).maxExportFiles, new Set(exec), new Map(Object.entries(links ?? {})));
      const etag = await exportEtag(listing);
      const inm = (c.req.header("if-none-match") ?? "").split(",").map((s) => unquoteEtag(s.trim()));
      if (inm.includes(etag) || inm.includes("*")) return c.body(null, 304, { etag: quoteEtag(etag) });
      const name = `${ws}${dir ? `-${dir.replaceAll("/", "-")}` : ""}.tar.gz`.replace(/[^A-Za-z0-9._-]/g, "_");
      return c.body(exportStream(workspace, listing), 200, {
        ...downloadHeaders(name, "application/gzip", { attachment: true }),
        etag: quoteEtag(etag),
        "x-toolshed-files": String(listing.files.length),
      });
    },
  );
  return app;
}
