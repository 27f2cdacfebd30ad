/**
 * The server side of the sync API (see lib/sync/http.ts for the routes). A plain fetch
 * handler so it mounts anywhere: `app.all("/v1/sync/*", (c) => handleSync(c.req.raw, deps))`.
 * Tenant and workspace come from the verified token only; paths go through normalizeFilePath.
 */
import { ToolError, errorBody, isToolError } from "../shared/errors.js";
import { noSyncRoute } from "./refusal.js";
import { filesPrefix, normalizeFilePath } from "../layout/paths.js";
import { doorRecords } from "../workspace/records.js";
import { quoteEtag, unquoteEtag, type ObjectInfo, type StorageDriver } from "../storage/types.js";
import { quotaOf, quotaOpt } from "../workspace/quota.js";
import { Workspace } from "../workspace/workspace.js";
import { parseModesDelta, readModes, updateModes } from "../layout/modes.js";
import { BATCH_CONTENT_TYPE, FETCH_MAX_QUERY_BYTES } from "./batch.js";
import { fetchBatch, parseFetchRequest } from "./fetch.js";
import { handleWriteBatch } from "./put-server.js";
import { checkDeletes } from "./delete-check.js";
import { drawingOn, readHoldTerms } from "./writeback-hold.js";
import { handleStaging } from "./stage-server.js";
import { bodyText, claimRequestOf, handleSyncRun, parseJson, tokenRunRecords } from "./runs.js";
import { answerManifest, parseManifestQuery, type ManifestAnswer, type ManifestQuery } from "./manifest.js";
import { manifestAnswerBody } from "./manifest-wire.js";
import { verifySyncToken, writeBackCaller, type SyncClaims } from "./token.js";
import { workspaceAsMinted } from "./workspace-instance.js";
import { commitSyncJournal, syncJournal } from "./journal.js";
import { ManifestCache } from "../layers/manifest.js";
import { openFiles, type LayerDeps, type LowerLayer, type MetaRecord } from "../layers/open.js";
import { autoSeal } from "../layers/auto-seal.js";
import { Whiteouts } from "../layers/whiteout.js";
import type { SyncServerDeps } from "./server-deps.js";
import { handleSyncLive } from "./live-server.js";
import { carryable, readCarried, type CarriedFile } from "./carried-files.js";

/** A query holds one digest (43 characters) per bucket, at most MAX_BUCKETS. */
const MAX_MANIFEST_QUERY_BYTES = 512 * 1024;

/** Writes up to this size arrive whole (the search index packs text files up to 1 MiB); larger ones stream. */
const INLINE_PUT_BYTES = 1024 * 1024;

/** A delete check: as a delete batch, DELETE_BATCH_MAX_FILES paths of up to 768 bytes and their etags. */
const MAX_DELETE_CHECK_BYTES = 512 * 1024;

/** A modes delta: up to MAX_EXEC_FILES paths of up to 768 bytes, twice. */
const MAX_MODES_BYTES = 16 * 1024 * 1024;

const conflict = (e: unknown) => isToolError(e) && (e.code === "FILE_MODIFIED" || e.code === "ALREADY_EXISTS");

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

const fail = (e: ToolError) => json({ ok: false, error: errorBody(e) }, e.status);

const modified = (path: string) => json({ ok: false, error: { code: "FILE_MODIFIED", message: `${path} changed.` } }, 412);

/**
 * PUT (make, idempotent) and DELETE (If-Match) of an explicit directory's marker; a marker made or removed is journaled for undo (by the Workspace: lib/workspace/directories.ts).
 * DELETE answers 204 when it removed the marker, 200 `{"gone":true}` when another writer had (it freed no entry: a write-back's hold it draws on gets none).
 */
async function syncDirectory(req: Request, ws: Workspace, dir: string): Promise<Response> {
  if (req.method === "PUT") {
    await req.body?.cancel();
    try {
      return json({ etag: (await ws.makeDirectory(dir)).etag });
    } catch (e) {
      // A file has the path or a parent path, or the marker vanished meanwhile: the workspace changed.
      if (isToolError(e) && (e.code === "ALREADY_EXISTS" || e.code === "NOT_A_DIRECTORY" || e.code === "CONFLICT")) return modified(dir);
      throw e;
    }
  }
  if (req.method === "DELETE") {
    const ifMatch = req.headers.get("if-match");
    if (!ifMatch) throw new ToolError("INVALID_ARGUMENT", "DELETE needs If-Match.");
    const etag = unquoteEtag(ifMatch);
    const { refused, gone } = await ws.deleteMarkers([{ path: dir, etag }]);
    if (refused.length) return modified(dir);
    return gone.length ? json({ gone: true }) : new Response(null, { status: 204 });
  }
  throw new ToolError("INVALID_ARGUMENT", `Method ${req.method} not allowed on a directory.`);
}

export async function handleSync(req: Request, deps: SyncServerDeps): Promise<Response> {
  try {
    const url = new URL(req.url);
    const auth = req.headers.get("authorization") ?? "";
    const claims = auth.startsWith("Bearer ") ? await verifySyncToken(deps.secret, auth.slice(7), { keys: deps.hmacKeys }) : null;
    if (!claims) throw new ToolError("UNAUTHORIZED", "Missing, invalid or expired sync token.");
    const prefix = filesPrefix(claims.t, claims.w);
    // The run's own record (claim, output, kill flag, result: lib/sync/runs.ts) lies outside
    // the files: no lower layer is needed to reach it; only the workspace record, whether it is still the token's.
    if (url.pathname === "/v1/sync/run" || url.pathname.startsWith("/v1/sync/run/")) return await handleSyncRun(req, url, claims, deps.driver, async () => (await workspaceAsMinted(deps.driver, claims)) !== null, deps.onRunEnded, deps.keyAlive);
    // A live runner's channel to its session's coordinator (lib/sync/live-server.ts): no workspace
    // read, but for the conditional manifest a poll that receives a command carries back.
    if (url.pathname.startsWith("/v1/sync/live/")) return await handleSyncLive(req, url, claims, deps.live, { manifestNow: (q, held) => workspaceManifest(deps, claims, prefix, q, held), keyAlive: deps.keyAlive, workspaceHere: async () => (await workspaceAsMinted(deps.driver, claims)) !== null });
    // Every route reads this workspace's files through the driver openWorkspace gives (the merged
    // view when it is layered). Keys outside the files (run records, modes) pass through it unchanged.
    // The conditional manifest's own reads (the upper listing's first page, the execute bits) start
    // beside the workspace record's: one round trip per run instead of two (manifestReads).
    const manifestBody = url.pathname === "/v1/sync/manifest" && req.method === "POST" ? (parseJson(await bodyText(req, MAX_MANIFEST_QUERY_BYTES), "manifest query") as { claim?: unknown } | null) : undefined;
    const manifest = manifestBody !== undefined ? manifestReads(parseManifestQuery(manifestBody), deps.driver, prefix, claims) : null;
    // A fresh run's claim rides on its manifest request (lib/sync/types.ts ClaimRider): taken beside the reads, answered with them.
    const claimed = manifestBody?.claim !== undefined ? tokenRunRecords(claims, deps.driver).claim(claimRequestOf(manifestBody.claim)) : null;
    claimed?.catch(() => {}); // awaited with the answer; a request that fails before leaves the runner to claim alone
    // A workspace deleted while a run was under way: nothing is listed or written back under its prefix
    // (the files would come back in a workspace made again with the same id, and nothing collects them).
    const rec = await workspaceAsMinted(deps.driver, claims);
    if (!rec) throw new ToolError("NOT_FOUND", `Workspace ${claims.w} no longer exists (it was deleted, perhaps made again since this run started); nothing was read or written back.`, { workspace: claims.w });
    const layerDeps = { storage: deps.driver, manifests: deps.manifests ?? new ManifestCache() };
    const files = await openFiles(layerDeps, claims.t, claims.w, rec.meta);
    const driver = files.driver;
    // Writes go through a Workspace, so listeners (the search index) see them like any write.
    const undo = syncJournal(deps.driver, claims);
    // A write-back's file sent alone draws on its hold when it has one (writeback-hold.ts).
    const quota = quotaOf({ ...(deps.limits ? { limits: deps.limits } : {}) }, claims.t, claims.w, writeBackCaller(claims), driver);
    const hold = readHoldTerms(url.searchParams).hold;
    const ws = new Workspace({ driver, records: doorRecords(deps.kv, claims.t, claims.w, "sync"), tenant: claims.t, id: claims.w, listeners: deps.listeners ?? [], ...(undo ? { undo } : {}), ...quotaOpt(quota && hold ? drawingOn(quota, hold) : quota) });

    if (url.pathname === "/v1/sync/manifest" && req.method === "GET") {
      const cursor = url.searchParams.get("cursor") ?? undefined;
      const page = await driver.list({ prefix, ...(cursor ? { cursor } : {}) });
      const files = page.objects.map((o) => ({ path: o.key.slice(prefix.length), etag: o.etag, size: o.size }));
      return json({ files, ...(page.cursor ? { cursor: page.cursor } : {}) });
    }
    if (manifest) {
      const answer = manifestAnswerBody(await answerWorkspaceManifest(deps, layerDeps, claims, prefix, manifest, rec, files));
      return json(claimed ? { ...answer, claim: await claimed } : answer);
    }

    if (url.pathname === "/v1/sync/modes" && req.method === "POST") {
      const delta = parseModesDelta(parseJson(await bodyText(req, MAX_MODES_BYTES), "modes delta"));
      // The run's link changes are journaled under its call (this request's undo part).
      try {
        return json(await updateModes(driver, claims.t, claims.w, delta, { undo }));
      } finally {
        await commitSyncJournal(undo);
      }
    }

    if (url.pathname === "/v1/sync/fetch" && req.method === "POST") {
      // Many small files in one streamed answer (lib/sync/fetch.ts), from this workspace's files only; packed ones in a few range reads.
      const body = await fetchBatch(driver, claims.t, claims.w, parseFetchRequest(parseJson(await bodyText(req, FETCH_MAX_QUERY_BYTES), "fetch batch")));
      return new Response(body, { headers: { "content-type": BATCH_CONTENT_TYPE } });
    }

    // A write-back's deletes looked at before its hold (lib/sync/delete-check.ts): nothing written.
    if (url.pathname === "/v1/sync/delete/check" && req.method === "POST") return json(await checkDeletes((p) => ws.head(p), parseJson(await bodyText(req, MAX_DELETE_CHECK_BYTES), "delete check")));

    // Batched write-back (lib/sync/put-server.ts): many files per request, one index segment per batch.
    if (url.pathname === "/v1/sync/put" || url.pathname === "/v1/sync/delete") return await handleWriteBatch(req, url.pathname === "/v1/sync/put" ? "put" : "delete", claims, { ...deps, driver, storage: deps.driver });

    // Packed write-back (lib/sync/stage-server.ts): stage into packs, then one commit switches the layer pointer.
    if (url.pathname === "/v1/sync/stage" || url.pathname === "/v1/sync/commit") return await handleStaging(req, url.pathname === "/v1/sync/stage" ? "stage" : "commit", claims, { ...deps, driver, storage: deps.driver });

    const m = /^\/v1\/sync\/files\/(.+)$/.exec(url.pathname);
    if (!m) throw noSyncRoute(req.method, url.pathname);
    const path = normalizeFilePath(m[1]!.split("/").map(decodeURIComponent).join("/"));
    // A path ending in "/" is an explicit directory (its marker), never the file of that name.
    if (m[1]!.endsWith("/")) {
      try {
        return await syncDirectory(req, ws, path);
      } finally {
        await commitSyncJournal(undo);
      }
    }

    // The single-file write routes commit this request's undo part before answering.
    if (req.method === "PUT" || req.method === "DELETE") {
      try {
        return await syncFile(req, ws, path);
      } finally {
        await commitSyncJournal(undo);
      }
    }
    return await syncFile(req, ws, path);
  } catch (e) {
    if (isToolError(e)) return fail(e);
    return fail(new ToolError("INTERNAL", `Sync failed: ${String(e)}`));
  }
}

/**
 * The conditional manifest's reads started now, beside the workspace record's read: the first page
 * of the raw listing of the files prefix (the upper layer) and, when the query asks, the execute
 * bits (their key is outside the files: raw storage reads it as the merged view would). Started
 * from the token's tenant and workspace only. Safe against a concurrent seal: the listing then
 * predates the record, and a seal keeps every sealed file's etag in the new lower layer, so upper
 * objects listed before a switch hold the same bytes as their lower entries after it (as
 * layered-driver.ts's stillLower relies on). A failure surfaces where each is awaited; when the
 * record turns out missing, nothing read here is answered.
 */
type ManifestReads = ReturnType<typeof manifestReads>;
function manifestReads(query: ManifestQuery, storage: StorageDriver, prefix: string, claims: { t: string; w: string }) {
  const firstPage = storage.list({ prefix });
  firstPage.catch(() => {});
  // answerManifest asks for the bits exactly when the query does: read them now in that case.
  let bits = query.modes !== undefined ? readModes(storage, claims.t, claims.w) : undefined;
  bits?.catch(() => {});
  return { query, firstPage, modes: () => (bits ??= readModes(storage, claims.t, claims.w)) };
}

/**
 * Conditional manifest, one request (lib/sync/manifest.ts): one listing of the files prefix (the
 * upper layer); "all the same" when the runner's layer state is current, else only buckets that
 * differ from the runner's digests are sent. A large upper layer (raw uploads) is sealed into packs
 * first (lib/layers/auto-seal.ts). null: past the answer's bound (the runner pages).
 */
function answerWorkspaceManifest(deps: SyncServerDeps, layerDeps: LayerDeps, claims: SyncClaims, prefix: string, reads: ManifestReads, rec: MetaRecord, files: { layer: LowerLayer | null }): Promise<ManifestAnswer | null> {
  const seal = deps.autoSeal !== false ? (listed: readonly ObjectInfo[]) => autoSeal(layerDeps, claims.t, claims.w, rec, files.layer, listed, deps.background) : undefined;
  const src = { storage: deps.driver, prefix, layer: files.layer, whiteouts: Whiteouts.of(deps.driver, rec.meta), modes: reads.modes, firstPage: reads.firstPage, ...(seal ? { seal } : {}) };
  return answerManifest(src, reads.query);
}

/**
 * The conditional manifest for `query` as POST /v1/sync/manifest would answer it now (the answer a
 * live poll carries back with its command: lib/sync/live-server.ts), and with `held` (the marks of the
 * runner's view, decoded only when the answer lists files) the bytes of the few small files it lacks, read through the token's workspace as the
 * batch route reads (lib/sync/carried-files.ts). null when it cannot be given here (the workspace is
 * gone, the answer too large): the runner then asks itself, and hears why.
 */
async function workspaceManifest(deps: SyncServerDeps, claims: SyncClaims, prefix: string, query: ManifestQuery, held: () => Set<number> | null): Promise<{ answer: ManifestAnswer; files: [string, CarriedFile][] } | null> {
  const reads = manifestReads(query, deps.driver, prefix, claims);
  const rec = await workspaceAsMinted(deps.driver, claims);
  if (!rec) return null;
  const layerDeps = { storage: deps.driver, manifests: deps.manifests ?? new ManifestCache() };
  const files = await openFiles(layerDeps, claims.t, claims.w, rec.meta);
  const answer = await answerWorkspaceManifest(deps, layerDeps, claims, prefix, reads, rec, files);
  if (!answer) return null;
  // Nothing listed (every bucket the same: a no-change command) has nothing to carry: the marks are not decoded.
  const marks = answer.files.length ? held() : null;
  const want = marks && carryable(query, answer, marks);
  return { answer, files: want ? await readCarried(files.driver, claims.t, claims.w, want) : [] };
}

/** GET, PUT (conditional) and DELETE (If-Match) of one file. */
async function syncFile(req: Request, ws: Workspace, path: string): Promise<Response> {
    switch (req.method) {
      case "GET": {
        const file = await ws.get(path);
        if (!file) return json({ ok: false, error: { code: "NOT_FOUND", message: `No file ${path}.` } }, 404);
        return new Response(file.body, { headers: { etag: quoteEtag(file.etag), "content-length": String(file.size), "content-type": "application/octet-stream" } });
      }
      case "PUT": {
        const ifMatch = req.headers.get("if-match");
        const ifNoneMatch = req.headers.get("if-none-match");
        const length = req.headers.get("content-length");
        const size = length !== null ? Number(length) : NaN;
        let body: ReadableStream<Uint8Array> | Uint8Array = req.body ?? new Uint8Array(0);
        if (req.body && Number.isSafeInteger(size) && size <= INLINE_PUT_BYTES) {
          // Read whole: the write hands these bytes to the listeners, so the search index does
          // not read the file back from storage (one GET per written file less).
          const bytes = new Uint8Array(await req.arrayBuffer());
          if (bytes.length !== size) throw new ToolError("INVALID_ARGUMENT", `The body has ${bytes.length} bytes but Content-Length says ${size}; send the file again.`);
          body = bytes;
        }
        try {
          const info = await ws.put(path, body, {
            placeChecked: true,
            ...(ifMatch ? { ifMatch: unquoteEtag(ifMatch) } : {}),
            ...(ifNoneMatch === "*" ? { create: true } : {}),
            ...(length !== null ? { length: Number(length) } : {}),
          });
          return json({ etag: info.etag });
        } catch (e) {
          if (conflict(e)) return json({ ok: false, error: { code: "FILE_MODIFIED", message: `${path} changed.` } }, 412);
          throw e;
        }
      }
      case "DELETE": {
        const ifMatch = req.headers.get("if-match");
        if (!ifMatch) throw new ToolError("INVALID_ARGUMENT", "DELETE needs If-Match.");
        // Conditional in storage: a write that lands after the runner's snapshot is never deleted.
        const { refused } = await ws.deleteMany([{ path, etag: unquoteEtag(ifMatch) }]);
        // Refused because someone else deleted it already: the outcome the runner wanted.
        if (refused.length && (await ws.head(path))) return json({ ok: false, error: { code: "FILE_MODIFIED", message: `${path} changed.` } }, 412);
        return new Response(null, { status: 204 });
      }
      default:
        throw new ToolError("INVALID_ARGUMENT", `Method ${req.method} not allowed.`);
    }
}
