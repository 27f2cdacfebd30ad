/**
 * Raw files for the app (not the model): PUT | GET | HEAD | DELETE /v1/workspaces/{ws}/files/{path}.
 * Binary-safe and streaming; ETag, If-Match and If-None-Match honoured; GET supports one byte Range.
 * A path ending in "/" names a directory: PUT (empty body) makes it explicit (it stays when
 * empty), DELETE removes an empty one. GET of a directory (files/, files/<dir>/, or a path naming
 * a directory) lists it (files-list.ts).
 * Reading needs the 'read' scope, PUT and DELETE 'write' (the routes declare it; access.ts).
 * A PUT that creates a file tells the background sealer (lib/layers/background-seal.ts): many raw
 * uploads are folded into packs after the answers, not on the first run's path.
 * A PUT's cost (test/lib/api/routes/put-cost.test.ts): the workspace record, then the version there,
 * the place and a small body side by side, then the PUT; the search index's upkeep after the answer
 * where the runtime has waitUntil, from the bytes in hand.
 */
import type { Context } from "hono";
import { z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import { ToolError } from "../../shared/errors.js";
import type { AppEnv } from "../http.js";
import { normalizeFilePath, normalizePath } from "../../layout/paths.js";
import { doorRecords } from "../../workspace/records.js";
import { quoteEtag, unquoteEtag } from "../../storage/types.js";
import { Workspace } from "../../workspace/workspace.js";
import { checkPlace } from "../../workspace/file-writes.js";
import { linkNotFollowed } from "../../workspace/links.js";
import { callerOf, quotaOf } from "../../workspace/quota.js";
import type { FileInfo } from "../../layout/files.js";
import { addRoute } from "./access.js";
import { backgroundOf, errorResponses, newApp, requestWorkspace } from "./common.js";
import { BackgroundSealer } from "../../layers/background-seal.js";
import { layerDeps } from "../../run/run-tool.js";
import { LISTING_DOC, ListingSchema, ListQuery, listDirectory } from "./files-list.js";
import { downloadHeaders } from "./download-headers.js";

/** Largest body accepted by PUT (R2 single-part limit is 5 GB; the Workers plan may allow less). */
export const MAX_UPLOAD_BYTES = 5 * 1024 ** 3 - 1;

/**
 * Bodies up to this size are read whole before the write (bigger ones stream to storage): the bytes
 * then serve the search index after the answer (no GET of the file), the isolate's versions, and a
 * create-only write without a HEAD first (lib/storage/drivers/r2.ts).
 */
const MAX_BUFFERED_BYTES = 1024 * 1024;

/** The whole body of a request that declared `length` bytes (at most MAX_BUFFERED_BYTES). */
async function bodyBytes(c: Context<AppEnv>, length: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  if (bytes.length !== length) throw new ToolError("INVALID_ARGUMENT", `The body has ${bytes.length} bytes where Content-Length says ${length}: send the length of the body you send.`, { length, received: bytes.length });
  return bytes;
}

/** Whether the URL's path ends in "/": the request is about a directory. */
const namesDirectory = (c: Context<AppEnv>): boolean => /\/v1\/workspaces\/[^/]+\/files\/.+\/$/.test(new URL(c.req.url).pathname);

function pathFromUrl(c: Context<AppEnv>): string;
function pathFromUrl(c: Context<AppEnv>, opts: { allowDirectory: true }): { path: string; dir: boolean };
function pathFromUrl(c: Context<AppEnv>, opts?: { allowDirectory: true }): string | { path: string; dir: boolean } {
  // The raw (still percent-encoded) rest of the URL after the route's own /files/: matched on the
  // URL itself, not on the decoded ws param, which may be spelled differently (m%61in = main).
  const m = /\/v1\/workspaces\/[^/]+\/files\/(.*)$/.exec(new URL(c.req.url).pathname);
  const raw = m?.[1] ?? "";
  let decoded: string;
  try {
    decoded = raw.split("/").map(decodeURIComponent).join("/");
  } catch {
    throw new ToolError("INVALID_PATH", "The file path in the URL is not valid percent-encoding.", {});
  }
  if (!opts) return normalizeFilePath(decoded);
  // A trailing slash (or a path that normalizes to the root) asks for a directory.
  const path = normalizePath(decoded);
  return { path, dir: path === "" || raw.endsWith("/") };
}

/** A file's answer headers: its version, and the download headers of its stored type (download-headers.ts: nosniff, a CSP sandbox, active types as attachments). */
function fileHeaders(info: FileInfo, contentType?: string): Record<string, string> {
  return {
    etag: quoteEtag(info.etag),
    "last-modified": info.modified.toUTCString(),
    ...downloadHeaders(info.path, contentType),
    "accept-ranges": "bytes",
  };
}

const etagList = (h: string | undefined) => (h ? h.split(",").map((s) => unquoteEtag(s.trim())) : []);

type RawCall = "PUT" | "GET" | "DELETE";
const NOTHING_DONE: Record<RawCall, string> = { PUT: "nothing was written", GET: "nothing was sent", DELETE: "nothing was deleted" };

/**
 * FILE_MODIFIED for a raw call whose If-Match names another version than the one there (`current`,
 * null when no file is there), in the raw route's own terms: the tools' wording ("read it again")
 * names a tool this caller does not use.
 */
function ifMatchFailed(call: RawCall, path: string, current: string | null): ToolError {
  const message = current !== null
    ? `${path} is not the version If-Match names (its ETag is now "${current}"); ${NOTHING_DONE[call]}. Take the current ETag (HEAD or GET the file without If-Match), make sure that version is the one you mean, then retry with If-Match: "<that ETag>".`
    : `${path} does not exist, so no version of it matches If-Match; ${NOTHING_DONE[call]}.${call === "PUT" ? " To create it, send the PUT without If-Match (If-None-Match: * creates only)." : ""}`;
  return new ToolError("FILE_MODIFIED", message, { path, current_etag: current });
}

/** The raw wording for a FILE_MODIFIED the storage's own condition raised (the file changed after any check). */
const inRawTerms = (call: RawCall, path: string) => (e: unknown): never => {
  if (e instanceof ToolError && e.code === "FILE_MODIFIED") throw ifMatchFailed(call, path, (e.details.current_etag as string | null | undefined) ?? null);
  throw e;
};

export function filesApp(deps: AppDeps) {
  const app = newApp();
  const base = "/v1/workspaces/:ws/files/*";
  // The sealer takes the bytes of files this isolate just wrote from its versions, not from a GET.
  const sealer = new BackgroundSealer({ ...layerDeps(deps), ...(deps.versions ? { versions: deps.versions } : {}) });
  // The guard has checked the key's scope and that the workspace exists and is the tenant's.
  const workspace = async (c: Context<AppEnv>) => {
    const tenant = c.get("auth").tenant;
    const id = c.req.param("ws") ?? "";
    const { driver } = await requestWorkspace(c, deps, tenant, id);
    const quota = quotaOf(deps, tenant, id, callerOf(c.get("auth")), driver, backgroundOf(c));
    const background = backgroundOf(c);
    // With `background` (Workers), the search index hears of a change after the answer, held and batched with others (changedSoon).
    return new Workspace({ driver, records: doorRecords(deps.kv, tenant, id, "raw"), tenant, id, listeners: deps.listeners ?? [], ...(background ? { background } : {}), ...(deps.versions ? { versions: deps.versions } : {}), ...(quota ? { quota } : {}) });
  };
  const read = { auth: "tenant", scope: "read", workspace: true } as const;
  const write = { auth: "tenant", scope: "write", workspace: true } as const;
  const params = z.object({ ws: z.string(), path: z.string().openapi({ description: "File path inside the workspace, slashes allowed; a trailing slash names a directory" }) });
  const fileDoc = (summary: string, extra: Record<string, unknown> = {}) => ({
    tags: ["files"], summary, request: { params }, responses: { 200: { description: "OK" }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) }, ...extra,
  });

  addRoute(
    app, deps,
    { method: "get", path: "/v1/workspaces/:ws/files/", access: read, doc: { tags: ["files"], summary: "List the workspace root", description: LISTING_DOC, request: { params: z.object({ ws: z.string() }), query: ListQuery }, responses: { 200: { description: "A page of entries", content: { "application/json": { schema: ListingSchema } } }, ...errorResponses(400, 401, 403, 404, 429) } } },
    async (c) => c.json(await listDirectory(await workspace(c), "", c.req.query()), 200),
  );

  addRoute(app, deps, { method: "put", path: base, access: write, doc: fileDoc('Upload a file (streaming; If-Match / If-None-Match: *); a path ending in "/" with an empty body makes a directory') }, async (c) => {
    const ws = await workspace(c);
    const path = pathFromUrl(c);
    if (namesDirectory(c)) {
      const length = c.req.header("content-length");
      if (length !== undefined && length !== "0") throw new ToolError("INVALID_ARGUMENT", `A path ending in "/" names a directory: send an empty body to make ${path}/, or drop the trailing "/" to upload a file.`, { path });
      const made = await ws.makeDirectory(path);
      return c.json({ path, type: "directory", created: made.created }, made.created ? 201 : 200);
    }
    const lengthHeader = c.req.header("content-length");
    if (lengthHeader === undefined || !/^\d+$/.test(lengthHeader)) throw new ToolError("INVALID_ARGUMENT", "Send a Content-Length header with the body (chunked uploads are not supported).");
    const length = Number(lengthHeader);
    if (length > MAX_UPLOAD_BYTES) throw new ToolError("PAYLOAD_TOO_LARGE", `At most ${MAX_UPLOAD_BYTES} bytes per file.`, { max: MAX_UPLOAD_BYTES });
    const ifMatch = c.req.header("if-match");
    const create = c.req.header("if-none-match")?.trim() === "*";
    if (ifMatch && create) throw new ToolError("INVALID_ARGUMENT", "Send If-Match or If-None-Match: *, not both.");
    // The version there now (its size is the quota's charge), the place (unless If-Match: a file is
    // there) and a small body, side by side: one round trip before the charge and the PUT.
    const [existing, , body] = await Promise.all([
      create ? null : ws.head(path),
      ifMatch ? null : checkPlace(ws, path),
      length <= MAX_BUFFERED_BYTES ? bodyBytes(c, length) : (c.req.raw.body ?? new Uint8Array()),
    ]).catch(async (e: unknown) => {
      await c.req.raw.body?.cancel().catch(() => {});
      throw e;
    });
    const existed = existing !== null;
    // If-Match as DELETE reads it (a list, `*`, quoted or not): the version there is the one the write is conditional on, or
    // nothing is written. Never a tag as sent: one still in quotes (a client that quoted a quoted ETag) made R2 throw, a 500.
    const im = etagList(ifMatch);
    if (ifMatch && (!existing || !(im.includes("*") || im.includes(existing.etag)))) throw ifMatchFailed("PUT", path, existing?.etag ?? null);
    const contentType = c.req.header("content-type");
    const info = await ws.put(path, body, {
      length,
      placeChecked: true,
      replaces: existing?.size ?? null,
      ...(ifMatch && existing ? { ifMatch: existing.etag } : {}),
      ...(create ? { create: true } : {}),
      ...(contentType ? { contentType } : {}),
    }).catch(inRawTerms("PUT", path)); // without If-Match a raw PUT has no version condition to fail
    if (!existed) sealer.created(ws.tenant, ws.id, backgroundOf(c));
    return c.json({ path, size: info.size, etag: info.etag, created: !existed }, existed ? 200 : 201, { etag: quoteEtag(info.etag) });
  });

  addRoute(
    app, deps,
    {
      method: ["get", "head"], path: base, access: read,
      doc: {
        get: fileDoc("Download a file (Range, If-None-Match), or list a directory", { description: `A file answers with its bytes. A directory (a path ending in "/", or naming a directory) answers with a listing. ${LISTING_DOC}`, request: { params, query: ListQuery } }),
        head: fileDoc("File metadata"),
      },
    },
    async (c) => {
      const ws = await workspace(c);
      const { path, dir } = pathFromUrl(c, { allowDirectory: true });
      const head = dir ? null : await ws.head(path);
      if (!head) return c.json(await listDirectory(ws, path, c.req.query(), { explicit: dir }).catch(saidIfLink(ws, path)), 200);
      const inm = etagList(c.req.header("if-none-match"));
      if (inm.includes(head.etag) || inm.includes("*")) return c.body(null, 304, { etag: quoteEtag(head.etag) });
      const im = etagList(c.req.header("if-match"));
      if (im.length && !im.includes(head.etag) && !im.includes("*")) throw ifMatchFailed("GET", path, head.etag);
      const range = parseRange(c.req.header("range"), head.size);
      if (c.req.method === "HEAD") return c.body(null, 200, { ...fileHeaders(head, head.contentType), "content-length": String(head.size) });
      const r = await ws.get(path, range ?? undefined);
      if (!r) throw await ws.notFound(path);
      const headers: Record<string, string> = { ...fileHeaders({ path, size: r.size, etag: r.etag, modified: r.modified }, r.contentType), "content-length": String(r.range.length) };
      if (range) headers["content-range"] = `bytes ${r.range.offset}-${r.range.offset + r.range.length - 1}/${r.size}`;
      return c.body(r.body, range ? 206 : 200, headers);
    },
  );

  addRoute(app, deps, { method: "delete", path: base, access: write, doc: fileDoc('Delete a file (If-Match); a path ending in "/" deletes an empty directory') }, async (c) => {
    const ws = await workspace(c);
    const path = pathFromUrl(c);
    if (namesDirectory(c)) return deleteDirectory(c, ws, path);
    const head = await ws.requireFile(path).catch((e: unknown) => {
      // A directory's name without "/": say how a directory is deleted (the lookup's own message says how to list it).
      if (e instanceof ToolError && e.code === "IS_DIRECTORY") throw new ToolError("IS_DIRECTORY", `${path} is a directory. Delete it with DELETE /v1/workspaces/{ws}/files/${path}/ (the trailing "/") once it is empty, or with the delete tool and recursive: true.`, { path });
      return saidIfLink(ws, path)(e);
    });
    const im = etagList(c.req.header("if-match"));
    const conditional = im.length > 0 && !im.includes("*");
    if (conditional && !im.includes(head.etag)) throw ifMatchFailed("DELETE", path, head.etag);
    // With If-Match, only the version it named (conditional in storage, not only checked above).
    await (conditional ? ws.delete(path, head.etag).catch(inRawTerms("DELETE", path)) : ws.delete(path, null));
    return c.json({ deleted: true, path }, 200);
  });
  return app;
}

/** A miss at a symlink's path answers that it is one (these routes never follow links: docs/symlinks.md). */
const saidIfLink = (ws: Workspace, path: string) => async (e: unknown): Promise<never> => {
  throw await linkNotFollowed(ws, path, e);
};

/** DELETE of a path ending in "/": an empty directory only (its marker); never a file. */
async function deleteDirectory(c: Context<AppEnv>, ws: Workspace, path: string): Promise<Response> {
  const st = await ws.stat(path);
  if (st?.type === "file") throw new ToolError("NOT_A_DIRECTORY", `${path} is a file, not a directory. To delete it, send DELETE without the trailing "/".`, { path });
  if (!st) throw await ws.notFound(path, "Directory");
  if (await ws.hasEntries(path)) {
    throw new ToolError("IS_DIRECTORY", `${path}/ is not empty. Delete the files and directories inside it first (or call the delete tool with recursive: true), then delete it again.`, { path, empty: false });
  }
  await ws.removeDirectory(path);
  return c.json({ deleted: true, path, type: "directory" }, 200);
}

/** One `bytes=a-b` range, or null for the whole file. Unsatisfiable ranges are INVALID_ARGUMENT. */
function parseRange(header: string | undefined, size: number): { offset: number; length: number } | null {
  if (!header) return null;
  const m = header.match(/^bytes=(\d*)-(\d*)$/);
  if (!m || (m[1] === "" && m[2] === "")) throw new ToolError("INVALID_ARGUMENT", `Unsupported Range ${JSON.stringify(header)}: send one range like bytes=0-1023.`);
  // An empty file has no byte to range over: answer with the whole (empty) body.
  if (size === 0) return null;
  if (m[1] === "") {
    if (Number(m[2]) === 0) throw new ToolError("INVALID_ARGUMENT", `Range ${header} asks for no bytes.`, { size });
    const n = Math.min(Number(m[2]), size);
    return { offset: size - n, length: n };
  }
  const offset = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (offset >= size || end < offset) throw new ToolError("INVALID_ARGUMENT", `Range ${header} is outside the file (${size} bytes).`, { size });
  return { offset, length: end - offset + 1 };
}
