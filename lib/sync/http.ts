/**
 * SyncClient over HTTP: what the container function uses to reach the workspace.
 * Talks to `${url}/v1/sync/...` with `Authorization: Bearer <token>`; tenant and
 * workspace come from the token only. fetch-based: bundles for Workers and runs in Node.
 *
 *   GET    /v1/sync/manifest[?cursor=]  → { files: [{path, etag, size}], cursor? }
 *   POST   /v1/sync/manifest  {buckets, digests?, modes?, layer?, claim?} → { v: 2, count, buckets, same: [bucket],
 *                                      files: [[path, etag, size]], modes?, layer, claim? }  (conditional, one request;
 *                                      claim: the run's claim carried along, its outcome answered: lib/sync/types.ts ClaimRider;
 *                                      { v: 2, paged: true }: too large, use GET; see lib/sync/manifest.ts)
 *   GET    /v1/sync/files/<path>        → bytes, ETag            | 404
 *   POST   /v1/sync/fetch  {paths, etags?, order?} → frames of many small files, streamed (lib/sync/batch.ts)
 *   PUT    /v1/sync/files/<path>        If-Match / If-None-Match → { etag } | 412
 *   DELETE /v1/sync/files/<path>        If-Match                 → 204 | 412
 *   PUT    /v1/sync/files/<dir>/        (empty body)             → { etag } | 412  (an explicit directory: its marker)
 *   DELETE /v1/sync/files/<dir>/        If-Match                 → 204 | 412
 *   POST   /v1/sync/modes  {add, remove} → { etag, exec }  (executable files, lib/layout/modes.ts)
 *   POST   /v1/sync/put[?<plan>] frames of many small files → a result per file  (lib/sync/put-batch.ts; the plan: writeback-bound.ts)
 *   POST   /v1/sync/delete {files: [{path, etag}]}    → a result per file
 *   POST   /v1/sync/delete/check {files: [{path, etag}]} → current | changed | gone per file, nothing written (lib/sync/delete-check.ts)
 *   POST   /v1/sync/stage?<plan> frames (as put), into one pack → a result per file + receipt  (lib/sync/stage.ts)
 *   POST   /v1/sync/commit {receipts}                  → a result per staged file (one layer switch)
 */
import { ToolError } from "../shared/errors.js";
import { normalizeFilePath } from "../layout/paths.js";
import { quoteEtag, unquoteEtag } from "../storage/types.js";
import { BATCH_CONTENT_TYPE, readFrames } from "./batch.js";
import { deleteResults, putBatchBody, putResults } from "./put-batch.js";
import { deleteCheckResults } from "./delete-check.js";
import type { ConditionalSync } from "./manifest.js";
import { claimOutcomeOf, manifestAnswerOf } from "./manifest-wire.js";
import { commitResults, stageResults } from "./stage.js";
import { writeBackQuery } from "./writeback-hold.js";
import { missingRoute, syncRefusal, throwSyncRefusal } from "./refusal.js";
import type { SyncAccess, SyncClient, SyncEntry } from "./types.js";
import type { ExecModes } from "../layout/modes.js";

export interface HttpSyncOptions extends SyncAccess {
  fetch?: typeof fetch;
  /** Attempts of idempotent requests (GET) on network errors and 5xx (default 3). */
  attempts?: number;
}

export const encodeSyncPath = (path: string): string => path.split("/").map(encodeURIComponent).join("/");

export function httpSyncClient(opts: HttpSyncOptions): SyncClient & Required<ConditionalSync> {
  const doFetch = opts.fetch ?? fetch;
  const base = opts.url.replace(/\/+$/, "") + "/v1/sync";
  const auth = { authorization: `Bearer ${opts.token}` };
  const attempts = opts.attempts ?? 3;

  /** Set once the server answered that it has no conditional manifest (an older API). */
  let noConditional = false;
  /** Set once the server answered that it has no batch fetch (an older API). */
  let noBatches = false;
  /** Set once the server answered that it has no batched write-back (an older API). */
  let noWriteBatches = false;
  /** Set once the server answered that it has no packed write-back (an older API). */
  let noStaging = false;
  /** Set once the server answered that it has no delete check (an older API). */
  let noDeleteCheck = false;

  /**
   * A stage or commit answer's body; null when the API has no such route (404/405). Not retried: a
   * commit sent twice would conflict with itself. A refusal by the storage quotas (or the workspace
   * gone) is thrown as the API's own error (its message and details: what the model reads): refused().
   */
  async function staging(route: "stage" | "commit", init: RequestInit, query = ""): Promise<unknown> {
    if (noStaging) return null;
    const res = await call("POST", `${base}/${route}${query}`, init);
    if (res.ok) return res.json();
    const text = await res.text().catch(() => "");
    if (missingRoute(res.status, text)) {
      noStaging = true;
      return null;
    }
    throw refused(res.status, text, route);
  }

  /**
   * A write batch's answer: null (no such route: older API), or the per-file answer. Not retried
   * (a conditional write sent twice would conflict with itself). A refused batch (4xx) that
   * still lists what happened to its first files keeps those outcomes.
   */
  async function writeBatch(route: string, init: RequestInit, query = ""): Promise<{ body: unknown; why: string } | null> {
    if (noWriteBatches) return null;
    const res = await call("POST", `${base}/${route}${query}`, init);
    if (res.ok) return { body: await res.json(), why: "no answer for this file" };
    const text = await res.text().catch(() => "");
    if (missingRoute(res.status, text)) {
      noWriteBatches = true;
      return null;
    }
    const refusal = refused(res.status, text, `${route} batch`);
    if (refusal.code === "QUOTA_EXCEEDED") throw refusal; // the write-back's plan refused: nothing of it was written
    let body: { files?: unknown; error?: { message?: string } } | null = null;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON: fail below */
    }
    if (res.status >= 400 && res.status < 500 && Array.isArray(body?.files)) return { body, why: `batch refused: ${body?.error?.message ?? `HTTP ${res.status}`}` };
    throw refusal;
  }

  async function call(method: string, url: string, init: RequestInit = {}, idempotent = method === "GET"): Promise<Response> {
    const tries = idempotent ? attempts : 1;
    let last: unknown;
    for (let i = 0; i < tries; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100 * 2 ** i));
      try {
        const res = await doFetch(url, { ...init, method, headers: { ...auth, ...(init.headers as Record<string, string>) } });
        if (res.status >= 500 && i < tries - 1) {
          await res.body?.cancel();
          last = new Error(`HTTP ${res.status}`);
          continue;
        }
        return res;
      } catch (e) {
        last = e;
      }
    }
    throw new ToolError("UNAVAILABLE", `The workspace sync endpoint is unreachable: ${String(last)}`, { method });
  }

  /** A refused answer of any route (lib/sync/refusal.ts): the API's own error the model can act on, else a sync failure. */
  const refused = (status: number, text: string, what: string) => syncRefusal(status, text, `Workspace sync failed (${what})`);
  const fail = (res: Response, what: string) => throwSyncRefusal(res, `Workspace sync failed (${what})`);

  /**
   * POST /manifest's answer body; null when the API has none (an older one). Retried like a GET: it
   * only reads, and a claim it carries is the same attempt's (lib/sync/types.ts ClaimRequest), told
   * `claimed` again on a repeat.
   */
  async function conditional(body: unknown): Promise<unknown> {
    if (noConditional) return null;
    const res = await call("POST", `${base}/manifest`, { body: JSON.stringify(body), headers: { "content-type": "application/json" } }, true);
    if (res.ok) return res.json();
    const text = await res.text().catch(() => "");
    if (missingRoute(res.status, text)) {
      noConditional = true;
      return null;
    }
    throw refused(res.status, text, "manifest");
  }

  // Canonical paths only (INVALID_PATH otherwise): "..", "//", backslashes never reach the wire.
  const fileUrl = (path: string) => `${base}/files/${encodeSyncPath(normalizeFilePath(path))}`;
  const dirUrl = (dir: string) => `${fileUrl(dir)}/`;

  return {
    async manifestSince(q) {
      const body = await conditional(q);
      return body === null ? null : manifestAnswerOf(body);
    },
    async manifestWithClaim(q, claim) {
      const body = await conditional({ ...q, claim });
      return body === null ? null : { answer: manifestAnswerOf(body), claim: claimOutcomeOf(body) };
    },
    async manifest() {
      const out: SyncEntry[] = [];
      let cursor: string | undefined;
      do {
        const res = await call("GET", `${base}/manifest${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""}`);
        if (!res.ok) await fail(res, "manifest");
        const page = (await res.json()) as { files: SyncEntry[]; cursor?: string };
        out.push(...page.files);
        cursor = page.cursor;
      } while (cursor);
      return out;
    },
    async fetch(path) {
      const res = await call("GET", fileUrl(path));
      if (res.status === 404) {
        await res.body?.cancel();
        return null;
      }
      if (!res.ok || !res.body) await fail(res, `fetch ${path}`);
      return { body: res.body!, etag: unquoteEtag(res.headers.get("etag") ?? ""), size: Number(res.headers.get("content-length") ?? -1) };
    },
    async fetchMany(paths, etags) {
      if (noBatches) return null;
      // With the etags, frames may come in any order (the server's: packed files by pack and offset).
      const res = await call("POST", `${base}/fetch`, { body: JSON.stringify(etags ? { paths, etags, order: "any" } : { paths }), headers: { "content-type": "application/json" } }, true);
      if (!res.ok) {
        const text = await res.text().catch(() => "");
        if (!missingRoute(res.status, text)) throw refused(res.status, text, "batch fetch");
        noBatches = true;
        return null;
      }
      if (!res.body) await fail(res, "batch fetch");
      return readFrames(res.body!, paths.map((p) => normalizeFilePath(p)), !!etags);
    },
    async putMany(files, plan, terms) {
      const paths = files.map((f) => normalizeFilePath(f.path));
      const init = { body: putBatchBody(files.map((f, i) => ({ ...f, path: paths[i]! }))), headers: { "content-type": BATCH_CONTENT_TYPE }, duplex: "half" } as RequestInit;
      const a = await writeBatch("put", init, writeBackQuery(plan, terms));
      return a && putResults(a.body, paths, a.why);
    },
    async hold(plan) {
      const a = await writeBatch("put", { body: putBatchBody([]), headers: { "content-type": BATCH_CONTENT_TYPE }, duplex: "half" } as RequestInit, writeBackQuery(plan, { reserve: true }));
      const hold = (a?.body as { hold?: unknown } | undefined)?.hold;
      return typeof hold === "string" ? hold : null;
    },
    async stage(files, plan, terms) {
      const paths = files.map((f) => normalizeFilePath(f.path));
      const body = await staging("stage", { body: putBatchBody(files.map((f, i) => ({ ...f, path: paths[i]! }))), headers: { "content-type": BATCH_CONTENT_TYPE }, duplex: "half" } as RequestInit, writeBackQuery(plan, terms));
      return body === null ? null : stageResults(body, paths);
    },
    async commit(receipts, paths, terms) {
      const body = await staging("commit", { body: JSON.stringify({ receipts }), headers: { "content-type": "application/json" } }, writeBackQuery(undefined, terms));
      return body === null ? null : commitResults(body, paths);
    },
    async checkDeletes(files) {
      if (noDeleteCheck) return null;
      const paths = files.map((f) => normalizeFilePath(f.path));
      // Reads only: retried like a GET.
      const res = await call("POST", `${base}/delete/check`, { body: JSON.stringify({ files: files.map((f, i) => ({ path: paths[i], etag: f.ifMatch })) }), headers: { "content-type": "application/json" } }, true);
      if (res.ok) return deleteCheckResults(await res.json(), paths);
      const text = await res.text().catch(() => "");
      if (missingRoute(res.status, text)) {
        noDeleteCheck = true;
        return null;
      }
      throw refused(res.status, text, "delete check");
    },
    async deleteMany(files, terms) {
      const paths = files.map((f) => normalizeFilePath(f.path));
      const a = await writeBatch("delete", { body: JSON.stringify({ files: files.map((f, i) => ({ path: paths[i], etag: f.ifMatch })) }), headers: { "content-type": "application/json" } }, writeBackQuery(undefined, terms));
      return a && deleteResults(a.body, paths, a.why);
    },
    async put(path, body, o) {
      const headers: Record<string, string> = { "content-type": "application/octet-stream" };
      if (o.ifMatch !== undefined) headers["if-match"] = quoteEtag(o.ifMatch);
      if (o.ifNoneMatch) headers["if-none-match"] = "*";
      if (o.size !== undefined) headers["content-length"] = String(o.size);
      // Streams need duplex: "half" in Node's fetch; Workers ignore the field.
      const init = { body, headers, ...(body instanceof ReadableStream ? { duplex: "half" } : {}) } as RequestInit;
      const res = await call("PUT", `${fileUrl(path)}${writeBackQuery(undefined, o.hold ? { hold: o.hold } : {})}`, init);
      if (res.status === 412) {
        await res.body?.cancel();
        return { ok: false, conflict: true };
      }
      if (!res.ok) await fail(res, `put ${path}`);
      const { etag } = (await res.json()) as { etag: string };
      return { ok: true, etag };
    },
    async putOutputLog(_runId, body, size) {
      // The run is the token's: the server names the log by it.
      const init = { body, headers: { "content-type": "text/plain; charset=utf-8", "content-length": String(size) }, duplex: "half" } as RequestInit;
      const res = await call("PUT", `${base}/run/log`, init);
      if (!res.ok) await fail(res, "output log");
      return ((await res.json()) as { name: string }).name;
    },
    async delete(path, o) {
      const res = await call("DELETE", fileUrl(path), { headers: { "if-match": quoteEtag(o.ifMatch) } });
      await res.body?.cancel();
      if (res.status === 412) return { ok: false, conflict: true };
      if (!res.ok && res.status !== 404) await fail(res, `delete ${path}`);
      return { ok: true };
    },
    async mkdir(dir, o) {
      // Idempotent (a marker made twice is one marker, charged once): retried like a GET. `hold`: its entry drawn on the write-back's hold.
      const res = await call("PUT", `${dirUrl(dir)}${writeBackQuery(undefined, o?.hold ? { hold: o.hold } : {})}`, { headers: { "content-length": "0" } }, true);
      if (res.status === 412) {
        await res.body?.cancel();
        return { ok: false, conflict: true };
      }
      if (!res.ok) await fail(res, `mkdir ${dir}`);
      const { etag } = (await res.json()) as { etag: string };
      return { ok: true, etag };
    },
    async rmdir(dir, o) {
      const res = await call("DELETE", `${dirUrl(dir)}${writeBackQuery(undefined, o.hold ? { hold: o.hold } : {})}`, { headers: { "if-match": quoteEtag(o.ifMatch) } });
      if (!res.ok && res.status !== 404 && res.status !== 412) await fail(res, `rmdir ${dir}`);
      // 204: removed by this request; 200 {"gone":true} (or 404): another writer removed it first; 412: in another version.
      const body = res.status === 200 ? ((await res.json().catch(() => null)) as { gone?: unknown } | null) : (await res.body?.cancel(), null);
      if (res.status === 412) return { ok: false, conflict: true };
      return res.status === 404 || body?.gone === true ? { ok: true, gone: true } : { ok: true };
    },
    async updateModes(delta) {
      // Idempotent (a delta applied twice is applied once): retried like a GET.
      const res = await call("POST", `${base}/modes`, { body: JSON.stringify(delta), headers: { "content-type": "application/json" } }, true);
      if (!res.ok) await fail(res, "update modes");
      return (await res.json()) as ExecModes;
    },
  };
}
