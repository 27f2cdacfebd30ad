/**
 * `toolshed/client`: a thin typed client for the Toolshed API, over openapi-fetch and the types
 * rendered from /openapi.json (api/*.generated.ts, one file per OpenAPI tag: `npm run client:types`). It runs wherever `fetch`
 * does (Workers, Node 18+, browsers) and holds no state beyond its options.
 *
 *   const ts = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.TOOLSHED_KEY! });
 *   const ws = await ts.workspaces.create({ id: "demo" });
 *   await ts.tools.call("demo", "write", { file_path: "a.txt", content: "hi\n" });
 *   const r = await ts.tools.call("demo", "read", { file_path: "a.txt" }); // r.data.etag: string
 *
 * Every failure throws ToolshedError {code, message, details, status}; success returns the body
 * (for tools: the envelope {ok, tool, title, output, data, usage}, `data` typed per tool).
 */
import createFetchClient from "openapi-fetch";
import type { components, paths } from "./api/index.generated.js";
import { errorFromBody, errorFromResponse, isErrorEnvelope, ToolshedError } from "./errors.js";
import { readSse } from "./sse.js";
import { uploadBatch, uploadDirectory, type UploadDirectoryOptions, type UploadFile, type UploadOptions, type UploadReport } from "./uploads.js";

export { ToolshedError, type ToolshedErrorCode } from "./errors.js";
export type { UploadDirectoryOptions, UploadFile, UploadOptions, UploadReport } from "./uploads.js";
export type { components, paths } from "./api/index.generated.js";

type ToolPath = Extract<keyof paths, `/v1/workspaces/{ws}/tools/${string}`>;
/** Every tool the API documents ("read", "edit", "grep", "bash", …). */
export type ToolName = ToolPath extends `/v1/workspaces/{ws}/tools/${infer N}` ? N : never;
type ToolOperation<N extends ToolName> = paths[`/v1/workspaces/{ws}/tools/${N}`]["post"];
/** A tool's arguments (its JSON request body). */
export type ToolArgs<N extends ToolName> = ToolOperation<N>["requestBody"]["content"]["application/json"];
/** A tool's success envelope: {ok: true, tool, title, output, data, usage}. */
export type ToolResult<N extends ToolName> = ToolOperation<N>["responses"][200]["content"]["application/json"];
/** A tool's structured result (`data` of its envelope). */
export type ToolData<N extends ToolName> = ToolResult<N>["data"];
export type Workspace = components["schemas"]["Workspace"];
type CreateWorkspaceBody = NonNullable<paths["/v1/workspaces"]["post"]["requestBody"]>["content"]["application/json"];
/** What a streaming tool reports while it runs (lib/contract/tool.ts ProgressEvent; "merged": stdout and stderr in arrival order). */
export type ProgressEvent =
  | { kind: "output"; stream: "stdout" | "stderr" | "merged"; text: string }
  | { kind: "status"; message: string; done?: number; total?: number };

export interface ClientOptions {
  /** The API root, e.g. "https://toolshed.example.com" (no trailing /v1). */
  baseUrl: string;
  /** A tenant API key (tsk_...). */
  apiKey: string;
  /** A fetch to use instead of globalThis.fetch (a Worker's service binding, a test's app.fetch). */
  fetch?: (request: Request) => Response | Promise<Response>;
}

export interface CallOptions {
  /** The agent's conversation (X-Session-Id): read/write/edit records are kept per session (default: "default"). */
  session?: string;
  /** Repeat a NEEDS_INPUT / NEEDS_APPROVAL call by its pending_id to get its outcome (X-Pending-Id). */
  pendingId?: string;
  signal?: AbortSignal;
}

export interface FileDownload {
  bytes: Uint8Array;
  etag: string;
  contentType: string;
  size: number;
  /** The bytes decoded as UTF-8. */
  text(): string;
}

export interface FileUpload {
  path: string;
  size: number;
  etag: string;
  created: boolean;
}

const TOOL_PATH = "/v1/workspaces/{ws}/tools/{name}";

/** A file path as URL segments: each segment percent-encoded, the slashes kept ("src/a b.ts" → "src/a%20b.ts"). */
const filePathForUrl = (path: string) => path.replace(/^\/+/, "").split("/").map(encodeURIComponent).join("/");
/** An etag as If-Match sends it: `files.get`'s (bare) quoted, one already quoted (a Response's ETag header) as it is. */
const entityTag = (etag: string) => (/^(?:W\/)?".*"$/.test(etag) ? etag : `"${etag}"`);

export function createClient(options: ClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const custom = options.fetch;
  const fetchImpl = custom ? async (request: Request) => custom(request) : (request: Request) => fetch(request);
  const authorization = `Bearer ${options.apiKey}`;
  const api = createFetchClient<paths>({ baseUrl, fetch: fetchImpl, headers: { authorization } });

  /** openapi-fetch's answer as data, or the ToolshedError its body (or its 202 envelope) describes. */
  const unwrap = <T>(r: { data?: T; error?: unknown; response: Response }): T => {
    if (r.error !== undefined || !r.response.ok) throw errorFromBody(r.error, r.response.status, r.response.headers.get("content-type"));
    if (isErrorEnvelope(r.data)) throw errorFromBody(r.data, r.response.status, r.response.headers.get("content-type"));
    return r.data as T;
  };
  const callHeaders = (o: CallOptions = {}): Record<string, string> => ({
    ...(o.session !== undefined ? { "x-session-id": o.session } : {}),
    ...(o.pendingId !== undefined ? { "x-pending-id": o.pendingId } : {}),
  });
  /** A raw request for routes openapi-fetch does not model well (file bytes, SSE). */
  const raw = (method: string, path: string, init: { headers?: Record<string, string>; body?: RequestInit["body"]; signal?: AbortSignal } = {}) =>
    fetchImpl(new Request(`${baseUrl}${path}`, { method, headers: { authorization, ...init.headers }, ...(init.body !== undefined ? { body: init.body } : {}), ...(init.signal ? { signal: init.signal } : {}) }));
  const fileUrl = (ws: string, path: string) => `/v1/workspaces/${encodeURIComponent(ws)}/files/${filePathForUrl(path)}`;

  const tools = {
    /** Calls tool `name` in workspace `ws`; resolves to its success envelope, throws ToolshedError otherwise. */
    async call<N extends ToolName>(ws: string, name: N, args: ToolArgs<N>, opts: CallOptions = {}): Promise<ToolResult<N>> {
      const r = await api.POST(TOOL_PATH as never, {
        params: { path: { ws, name }, header: callHeaders(opts) },
        body: args,
        ...(opts.signal ? { signal: opts.signal } : {}),
      } as never);
      return unwrap<ToolResult<N>>(r as never);
    },

    /**
     * Calls tool `name` as a Server-Sent Events stream: yields `{event: "progress", data}` while the
     * tool runs and returns its success envelope (throws ToolshedError for an error result). Leaving
     * the loop early (break, or opts.signal) ends the request, which cancels the call on the server.
     */
    async *stream<N extends ToolName>(ws: string, name: N, args: ToolArgs<N>, opts: CallOptions = {}): AsyncGenerator<{ event: "progress"; data: ProgressEvent }, ToolResult<N>, void> {
      const res = await raw("POST", `/v1/workspaces/${encodeURIComponent(ws)}/tools/${encodeURIComponent(name)}`, {
        headers: { ...callHeaders(opts), "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify(args),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      // Refusals before the stream starts (key, scope, workspace, arguments) come as plain JSON;
      // so would the whole answer of a server (or proxy) that does not stream: no progress, then the result.
      if (!res.headers.get("content-type")?.startsWith("text/event-stream") || !res.body) {
        if (!res.ok || !res.headers.get("content-type")?.includes("json")) throw await errorFromResponse(res);
        const envelope = (await res.json()) as unknown;
        if (isErrorEnvelope(envelope) || (envelope as { ok?: unknown } | null)?.ok !== true) throw errorFromBody(envelope, res.status, res.headers.get("content-type"));
        return envelope as ToolResult<N>;
      }
      for await (const m of readSse(res.body, opts.signal)) {
        if (m.event === "progress") yield { event: "progress", data: JSON.parse(m.data) as ProgressEvent };
        else if (m.event === "result") {
          const envelope = JSON.parse(m.data) as unknown;
          if (isErrorEnvelope(envelope)) throw errorFromBody(envelope, res.status, res.headers.get("content-type"));
          return envelope as ToolResult<N>;
        }
      }
      throw errorFromBody("(the event stream ended without a result event)", res.status, res.headers.get("content-type"));
    },
  };

  return {
    /** The typed openapi-fetch client underneath, for routes without a helper here (checkpoints, import, pending…). */
    api,
    tools,
    /** `client.tool("read")`: the tool as a function of (ws, args, opts). */
    tool<N extends ToolName>(name: N) {
      return (ws: string, args: ToolArgs<N>, opts?: CallOptions) => tools.call(ws, name, args, opts);
    },

    workspaces: {
      async create(body: CreateWorkspaceBody = {}): Promise<Workspace> {
        return unwrap(await api.POST("/v1/workspaces", { body }));
      },
      /** One page (pass `cursor` back for the next). */
      async list(query: NonNullable<paths["/v1/workspaces"]["get"]["parameters"]["query"]> = {}): Promise<{ workspaces: Workspace[]; cursor?: string }> {
        return unwrap(await api.GET("/v1/workspaces", { params: { query } }));
      },
      async get(ws: string): Promise<Workspace> {
        return unwrap(await api.GET("/v1/workspaces/{ws}", { params: { path: { ws } } }));
      },
      async delete(ws: string): Promise<{ deleted: true; id: string; deleted_objects: number }> {
        return unwrap(await api.DELETE("/v1/workspaces/{ws}", { params: { path: { ws } } }));
      },
    },

    /** Raw files (the app's own bytes, not the model's view): binary-safe, ETag-guarded. */
    files: {
      /** A file's bytes. NOT_FOUND when there is none; IS_DIRECTORY for a directory (list it with files.list). */
      async get(ws: string, path: string): Promise<FileDownload> {
        const res = await raw("GET", fileUrl(ws, path));
        if (!res.ok) throw await errorFromResponse(res);
        const etag = res.headers.get("etag");
        if (etag === null) {
          await res.body?.cancel();
          throw new ToolshedError({ code: "IS_DIRECTORY", message: `${path} is a directory: list it with files.list(ws, "${path}").`, details: { path }, status: res.status });
        }
        const bytes = new Uint8Array(await res.arrayBuffer());
        return { bytes, etag: etag.replace(/^(?:W\/)?"|"$/g, ""), contentType: res.headers.get("content-type") ?? "application/octet-stream", size: bytes.byteLength, text: () => new TextDecoder().decode(bytes) };
      },
      /** Writes a file. `ifMatch`: only over this etag, bare or quoted (else FILE_MODIFIED); `create`: only if absent (else ALREADY_EXISTS). */
      async put(ws: string, path: string, body: string | Uint8Array | ArrayBuffer | Blob, opts: { ifMatch?: string; create?: boolean; contentType?: string } = {}): Promise<FileUpload> {
        // The server needs Content-Length (no chunked uploads); a fetch that is not a network one (a
        // Worker binding, app.fetch) would not add it, and browsers replace it with the same value.
        const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
        const length = bytes instanceof Blob ? bytes.size : bytes.byteLength;
        const headers: Record<string, string> = { "content-type": opts.contentType ?? (typeof body === "string" ? "text/plain; charset=utf-8" : "application/octet-stream"), "content-length": String(length) };
        if (opts.ifMatch !== undefined) headers["if-match"] = entityTag(opts.ifMatch);
        if (opts.create) headers["if-none-match"] = "*";
        const res = await raw("PUT", fileUrl(ws, path), { headers, body: bytes as RequestInit["body"] });
        if (!res.ok) throw await errorFromResponse(res);
        return (await res.json()) as FileUpload;
      },
      /** Many files in one request (POST …/uploads): `mode` "all" (default) writes every file or none, "each" each on its own; a result per file. */
      upload(ws: string, files: readonly UploadFile[], opts?: UploadOptions): Promise<UploadReport> {
        return uploadBatch(raw, ws, files, opts);
      },
      /** A directory tree (any number of files, e.g. from a walk of the disk) in batches of `batchFiles` / `batchBytes`; the reports merged. */
      uploadDirectory(ws: string, files: Iterable<UploadFile> | AsyncIterable<UploadFile>, opts?: UploadDirectoryOptions): Promise<UploadReport> {
        return uploadDirectory(raw, ws, files, opts);
      },
      /** Deletes a file (`ifMatch`: only this version). */
      async delete(ws: string, path: string, opts: { ifMatch?: string } = {}): Promise<unknown> {
        const res = await raw("DELETE", fileUrl(ws, path), { headers: opts.ifMatch !== undefined ? { "if-match": entityTag(opts.ifMatch) } : {} });
        if (!res.ok) throw await errorFromResponse(res);
        return res.json();
      },
      /** One page of a directory listing (`dir` "" is the root). */
      async list(ws: string, dir = "", query: { cursor?: string; recursive?: boolean; limit?: number } = {}) {
        const q = new URLSearchParams();
        if (query.cursor) q.set("cursor", query.cursor);
        if (query.recursive) q.set("recursive", "true");
        if (query.limit !== undefined) q.set("limit", String(query.limit));
        const d = filePathForUrl(dir).replace(/\/+$/, "");
        const res = await raw("GET", `/v1/workspaces/${encodeURIComponent(ws)}/files/${d ? `${d}/` : ""}${q.size ? `?${q}` : ""}`);
        if (!res.ok) throw await errorFromResponse(res);
        return (await res.json()) as paths["/v1/workspaces/{ws}/files/"]["get"]["responses"][200]["content"]["application/json"];
      },
    },
  };
}

export type ToolshedClient = ReturnType<typeof createClient>;
