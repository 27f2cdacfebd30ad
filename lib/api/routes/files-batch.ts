/**
 * Batch uploads: POST /v1/workspaces/{ws}/uploads?mode=all|each, body NDJSON (application/x-ndjson),
 * one file per line:
 *
 *   {"path": "src/a.ts", "content": "text"}                    UTF-8 text
 *   {"path": "logo.png", "content_base64": "iVBORw0…"}          any bytes
 *   optional per file: "if_match": "<etag>" (only over that version) or "create": true (only new)
 *
 * → 200 {mode, written, failed, bytes, files: [{path, ok: true, etag, size, created} | {path, ok: false, error}]},
 * every line's result in the order sent. mode=all (the default): every file or none; a failed
 * file refuses the batch with its code (details.failed lists each failure), nothing written.
 * mode=each: the other files are written. The write: lib/workspace/upload-batch.ts (packs + one
 * manifest switch, not one object per file). Needs the 'write' scope, as PUT files does.
 */
import type { Context } from "hono";
import { createRoute, z } from "@hono/zod-openapi";
import type { AppDeps } from "../deps.js";
import type { AppEnv } from "../http.js";
import { ToolError } from "../../shared/errors.js";
import { formatZodError } from "../../contract/errors.js";
import { afterAnswer } from "../../shared/after-answer.js";
import { unquoteEtag } from "../../storage/types.js";
import { doorRecords } from "../../workspace/records.js";
import { Workspace } from "../../workspace/workspace.js";
import { callerOf, quotaOf } from "../../workspace/quota.js";
import { UploadBatch } from "../../workspace/upload-batch.js";
import type { UploadMode } from "../../workspace/upload-results.js";
import { layerDeps } from "../../run/run-tool.js";
import { secureRoute } from "./access.js";
import { backgroundOf, errorResponses, newApp, requestWorkspace, WsParam } from "./common.js";
import { ndjsonLines } from "./ndjson.js";

/** Files in one request. */
export const UPLOAD_MAX_FILES = 10_000;
/** Bytes of one file (decoded); a larger file takes PUT /files/{path}, which streams. */
export const UPLOAD_MAX_FILE_BYTES = 8 * 1024 * 1024;
/** Bytes of all files of one request (decoded). */
export const UPLOAD_MAX_BYTES = 64 * 1024 * 1024;
/** Longest line: a file of UPLOAD_MAX_FILE_BYTES in base64, and its path and condition. */
const MAX_LINE = Math.ceil(UPLOAD_MAX_FILE_BYTES / 3) * 4 + 64 * 1024;

export const UploadLine = z
  .object({
    path: z.string().min(1).openapi({ description: "File path inside the workspace" }),
    content: z.string().optional().openapi({ description: "The file's bytes as UTF-8 text" }),
    content_base64: z.string().optional().openapi({ description: "The file's bytes, base64 (for binary files)" }),
    if_match: z.string().min(1).max(200).optional().openapi({ description: "Write only over this version (the etag a read or upload answered)" }),
    create: z.literal(true).optional().openapi({ description: "Write only if nothing is at the path" }),
  })
  .strict()
  .refine((l) => (l.content === undefined) !== (l.content_base64 === undefined), { message: "give exactly one of content and content_base64" })
  .refine((l) => !(l.if_match !== undefined && l.create), { message: "give if_match or create, not both" })
  .openapi("UploadLine");

const UploadQuery = z.object({
  mode: z.enum(["all", "each"]).default("all").openapi({ description: "all: every file or none (default); each: the files that pass are written, the others answered with their error" }),
});

const UploadError = z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()).optional() });
export const UploadReportSchema = z
  .object({
    mode: z.enum(["all", "each"]),
    written: z.number(),
    failed: z.number(),
    bytes: z.number().openapi({ description: "Bytes of the files written" }),
    files: z.array(z.union([
      z.object({ path: z.string(), ok: z.literal(true), etag: z.string(), size: z.number(), created: z.boolean() }),
      z.object({ path: z.string(), ok: z.literal(false), error: UploadError }),
    ])),
  })
  .openapi("UploadReport");

const base64 = (s: string): Uint8Array => {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 === 1) throw new ToolError("INVALID_ARGUMENT", "content_base64 is not valid base64.");
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
};

const enc = new TextEncoder();

/** Reads the NDJSON body into `batch`; a bound of the whole request throws (the caller aborts the batch). */
async function readBatch(body: ReadableStream<Uint8Array>, batch: UploadBatch): Promise<void> {
  let total = 0;
  for await (const line of ndjsonLines(body, MAX_LINE)) {
    if (batch.count >= UPLOAD_MAX_FILES) throw new ToolError("PAYLOAD_TOO_LARGE", `A batch holds at most ${UPLOAD_MAX_FILES} files; nothing was written. Send the rest in another batch.`, { max_files: UPLOAD_MAX_FILES });
    const shown = `line ${line.n}`;
    if (line.text === null) {
      batch.refuse(shown, new ToolError("PAYLOAD_TOO_LARGE", `Line ${line.n} is longer than ${MAX_LINE} bytes: a file in a batch holds at most ${UPLOAD_MAX_FILE_BYTES} bytes; upload larger files with PUT /v1/workspaces/{ws}/files/{path}.`, { max_file_bytes: UPLOAD_MAX_FILE_BYTES }));
      continue;
    }
    let json: unknown;
    try {
      json = JSON.parse(line.text);
    } catch {
      batch.refuse(shown, new ToolError("INVALID_ARGUMENT", `Line ${line.n} is not JSON: send one JSON object per line, {"path": …, "content": …}.`));
      continue;
    }
    const parsed = UploadLine.safeParse(json);
    if (!parsed.success) {
      const path = typeof (json as { path?: unknown } | null)?.path === "string" ? (json as { path: string }).path : shown;
      // The API's own words for a field (an unknown one named with its closest known one), zod's for a rule of the whole line.
      const plain = formatZodError(parsed.error, { target: "json", input: json, schema: UploadLine }).issues;
      const issues = parsed.error.issues.map((i, k) => ({ path: plain[k]!.path, message: i.path.length || i.code === "unrecognized_keys" ? plain[k]!.message : i.message }));
      batch.refuse(path, new ToolError("INVALID_ARGUMENT", `Line ${line.n}: ${issues.map((i) => i.message).join("; ")}.`, { line: line.n, issues }));
      continue;
    }
    const f = parsed.data;
    let bytes: Uint8Array;
    try {
      bytes = f.content !== undefined ? enc.encode(f.content) : base64(f.content_base64!);
    } catch (e) {
      batch.refuse(f.path, e as ToolError);
      continue;
    }
    if (bytes.length > UPLOAD_MAX_FILE_BYTES) {
      batch.refuse(f.path, new ToolError("PAYLOAD_TOO_LARGE", `${f.path} has ${bytes.length} bytes; a file in a batch holds at most ${UPLOAD_MAX_FILE_BYTES}. Upload it with PUT /v1/workspaces/{ws}/files/{path}.`, { path: f.path, size: bytes.length, max_file_bytes: UPLOAD_MAX_FILE_BYTES }));
      continue;
    }
    total += bytes.length;
    if (total > UPLOAD_MAX_BYTES) throw new ToolError("PAYLOAD_TOO_LARGE", `A batch holds at most ${UPLOAD_MAX_BYTES} bytes of files; nothing was written. Send fewer files per batch.`, { max_bytes: UPLOAD_MAX_BYTES });
    await batch.add(f.path, bytes, f.if_match !== undefined ? { ifMatch: unquoteEtag(f.if_match) } : f.create ? { create: true } : null);
  }
}

export function filesBatchApp(deps: AppDeps) {
  const app = newApp();
  app.openapi(
    createRoute(secureRoute(deps, { auth: "tenant", scope: "write", workspace: true }, {
      method: "post", path: "/v1/workspaces/{ws}/uploads", tags: ["files"],
      summary: "Upload many files in one request (NDJSON, one file per line)",
      description: `One line per file: \`{"path", "content"}\` (UTF-8 text) or \`{"path", "content_base64"}\` (any bytes), with an optional condition \`"if_match": "<etag>"\` or \`"create": true\`. mode=all (default): every file or none; a file that fails (its condition, its path, a directory in the way) refuses the batch with that file's code, nothing written, details.failed naming each. mode=each: every file answered on its own. At most ${UPLOAD_MAX_FILES} files, ${UPLOAD_MAX_FILE_BYTES} bytes per file and ${UPLOAD_MAX_BYTES} in all per request; larger files take PUT /files/{path}. The storage quotas apply to the whole batch before anything is written.`,
      request: { params: WsParam, query: UploadQuery, body: { required: true, content: { "application/x-ndjson": { schema: z.string().openapi({ format: "binary" }) } } } },
      responses: { 200: { description: "Each file's result", content: { "application/json": { schema: UploadReportSchema } } }, ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
    })),
    async (c) => c.json(await upload(c, deps, c.req.valid("param").ws, c.req.valid("query").mode), 200),
  );
  return app;
}

async function upload(c: Context<AppEnv>, deps: AppDeps, id: string, mode: UploadMode) {
  const body = c.req.raw.body;
  if (!body) throw new ToolError("INVALID_ARGUMENT", 'Send the files as the body: one JSON object per line, {"path": …, "content": …}.');
  const auth = c.get("auth");
  const opened = await requestWorkspace(c, deps, auth.tenant, id);
  const quota = quotaOf(deps, auth.tenant, id, callerOf(auth), opened.driver, backgroundOf(c));
  const ws = new Workspace({ driver: opened.driver, records: doorRecords(deps.kv, auth.tenant, id, "raw"), tenant: auth.tenant, id, listeners: deps.listeners ?? [], deferChanges: true, ...(deps.versions ? { versions: deps.versions } : {}) });
  const batch = new UploadBatch({ layers: layerDeps(deps), view: opened.driver, ws, ...(quota ? { quota } : {}) }, auth.tenant, id);
  try {
    await readBatch(body, batch);
  } catch (e) {
    await batch.abort();
    throw e;
  }
  if (!batch.count) throw new ToolError("INVALID_ARGUMENT", 'The body holds no file: send one JSON object per line, {"path": …, "content": …}.');
  const files = await batch.finish(mode);
  // The index's segment build is CPU on the isolate's one thread: after the answer (afterAnswer's timer turn lets it go first).
  await afterAnswer(backgroundOf(c), "batch upload's index", () => batch.index(), "await");
  const written = files.filter((f) => f.ok);
  return { mode, written: written.length, failed: files.length - written.length, bytes: written.reduce((n, f) => n + (f.ok ? f.size : 0), 0), files };
}
