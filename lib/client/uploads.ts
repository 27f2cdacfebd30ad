/**
 * Batch uploads for the typed client (POST /v1/workspaces/{ws}/uploads, NDJSON, one file per
 * line): `files.upload` sends one batch; `files.uploadDirectory` sends many files (a directory
 * tree an app walked, a generator) in batches of at most `batchFiles` files / `batchBytes` bytes.
 */
import type { components } from "./api/index.generated.js";
import { errorFromResponse } from "./errors.js";

export type UploadReport = components["schemas"]["UploadReport"];

export interface UploadFile {
  path: string;
  content: string | Uint8Array;
  /** Only over this version (its etag). */
  ifMatch?: string;
  /** Only if nothing is at the path. */
  create?: boolean;
}

export interface UploadOptions {
  /** "all" (default): every file of a batch or none; "each": each file on its own. */
  mode?: "all" | "each";
  signal?: AbortSignal;
}

export interface UploadDirectoryOptions extends UploadOptions {
  /** Prepended to every path ("src" → "src/<path>"). */
  prefix?: string;
  /** Files per request (the server takes up to 10,000); default 1,000. */
  batchFiles?: number;
  /** Bytes of content per request (the server takes up to 64 MiB); default 16 MiB. */
  batchBytes?: number;
}

type Raw = (method: string, path: string, init: { headers?: Record<string, string>; body?: RequestInit["body"]; signal?: AbortSignal }) => Promise<Response>;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** One NDJSON line: text as `content` (bytes that are valid UTF-8 too), other bytes as `content_base64`. */
export function uploadLine(f: UploadFile): string {
  let content: { content: string } | { content_base64: string };
  if (typeof f.content === "string") content = { content: f.content };
  else {
    try {
      content = { content: utf8.decode(f.content) };
    } catch {
      content = { content_base64: base64(f.content) };
    }
  }
  return JSON.stringify({ path: f.path, ...content, ...(f.ifMatch !== undefined ? { if_match: f.ifMatch } : {}), ...(f.create ? { create: true } : {}) });
}

export async function uploadBatch(raw: Raw, ws: string, files: readonly UploadFile[], opts: UploadOptions = {}): Promise<UploadReport> {
  const res = await raw("POST", `/v1/workspaces/${encodeURIComponent(ws)}/uploads${opts.mode ? `?mode=${opts.mode}` : ""}`, {
    headers: { "content-type": "application/x-ndjson" },
    body: files.map(uploadLine).join("\n") + "\n",
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  if (!res.ok) throw await errorFromResponse(res);
  return (await res.json()) as UploadReport;
}

/** Uploads every file of `files` in batches; the reports merged (in the order sent). A refused batch (mode "all") throws: the batches before it are written. */
export async function uploadDirectory(raw: Raw, ws: string, files: Iterable<UploadFile> | AsyncIterable<UploadFile>, opts: UploadDirectoryOptions = {}): Promise<UploadReport> {
  const maxFiles = opts.batchFiles ?? 1000;
  const maxBytes = opts.batchBytes ?? 16 * 1024 * 1024;
  const prefix = (opts.prefix ?? "").replace(/^\/+|\/+$/g, "");
  const total: UploadReport = { mode: opts.mode ?? "all", written: 0, failed: 0, bytes: 0, files: [] };
  let batch: UploadFile[] = [];
  let bytes = 0;
  const send = async () => {
    if (!batch.length) return;
    const r = await uploadBatch(raw, ws, batch, opts);
    total.written += r.written;
    total.failed += r.failed;
    total.bytes += r.bytes;
    total.files.push(...r.files);
    batch = [];
    bytes = 0;
  };
  for await (const f of files) {
    const size = typeof f.content === "string" ? f.content.length : f.content.byteLength;
    if (batch.length >= maxFiles || (batch.length && bytes + size > maxBytes)) await send();
    batch.push(prefix ? { ...f, path: `${prefix}/${f.path.replace(/^\/+/, "")}` } : f);
    bytes += size;
  }
  await send();
  return total;
}
