/**
 * The server side of batched write-back (wire format: lib/sync/put-batch.ts), mounted by
 * handleSync for a verified token: tenant and workspace come from the token only, every path
 * goes through normalizeFilePath, each file is written or deleted conditionally exactly as the
 * single routes do. The Workspace defers its changes, so the search index gets ONE segment per
 * batch (SearchIndexer.changedBatch), not one per file. A put batch with the write-back's plan in
 * its query is bounded first (lib/sync/writeback-bound.ts, one round trip to the limits object):
 * a write-back the storage quotas could not accept whole is refused (413 QUOTA_EXCEEDED) before
 * the body is read, so nothing of it is written. Its files are then charged at once before the
 * first is written (chargedAhead: one round trip for the batch, and a write-back racing for the
 * same room is refused whole here), each file taken from that charge, what is left given back.
 * A write-back of more requests holds its whole charge first (writeback-hold.ts: `reserve`, then
 * each request draws on the hold, the last releases it), its deletes credited and applied first;
 * `fill` makes the hold whole when one of them freed nothing.
 */
import { ToolError, errorBody, isToolError } from "../shared/errors.js";
import { normalizeFilePath } from "../layout/paths.js";
import { doorRecords } from "../workspace/records.js";
import { Workspace } from "../workspace/workspace.js";
import { quotaOf, quotaOpt } from "../workspace/quota.js";
import { DELETE_BATCH_MAX_FILES, PUT_BATCH_MAX_BYTES, PUT_BATCH_MAX_FILES, readPutFrames, type DeleteAnswer, type PutAnswer, type PutFrame } from "./put-batch.js";
import { bodyText, parseJson } from "./runs.js";
import { commitSyncJournal, syncJournal } from "./journal.js";
import type { SyncServerDeps } from "./server-deps.js";
import { writeBackCaller, type SyncClaims } from "./token.js";
import { readPlan } from "./writeback-bound.js";
import { readHoldTerms, writeBackCharge } from "./writeback-hold.js";

/** Files of one batch written at once. */
const PARALLEL = 6;

/** A delete batch: DELETE_BATCH_MAX_FILES paths of up to 768 bytes and their etags. */
const MAX_DELETE_BODY_BYTES = 512 * 1024;

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

const refusal = (e: unknown) => (isToolError(e) ? { code: e.code, message: e.message } : { code: "INTERNAL", message: `Write failed: ${String(e)}; write the file again.` });

const isConflict = (e: unknown) => isToolError(e) && (e.code === "FILE_MODIFIED" || e.code === "ALREADY_EXISTS");

/** Serves POST /v1/sync/put and POST /v1/sync/delete. */
export async function handleWriteBatch(req: Request, route: "put" | "delete", claims: SyncClaims, deps: SyncServerDeps): Promise<Response> {
  if (req.method !== "POST") throw new ToolError("INVALID_ARGUMENT", `Method ${req.method} not allowed on /v1/sync/${route}; use POST.`);
  const quota = quotaOf({ ...(deps.limits ? { limits: deps.limits } : {}) }, claims.t, claims.w, writeBackCaller(claims), deps.driver);
  const query = new URL(req.url).searchParams;
  const terms = readHoldTerms(query);
  // The write-back's plan (its first request; with a hold, a put batch's own share).
  const plan = route === "put" || terms.reserve ? readPlan(query) : null;
  // One change, a batch charged ahead, or a hold taken or drawn on (writeback-hold.ts): refused, nothing of it is written.
  const { hold, ahead, drawn } = await writeBackCharge(quota, plan, terms, claims.exp);
  // The run's call journals this batch (one record part per request, committed before the answer).
  const undo = syncJournal(deps.storage ?? deps.driver, claims);
  const ws = new Workspace({ driver: deps.driver, records: doorRecords(deps.kv, claims.t, claims.w, "sync"), tenant: claims.t, id: claims.w, listeners: deps.listeners ?? [], deferChanges: true, ...(undo ? { undo } : {}), ...quotaOpt(ahead?.quota ?? drawn ?? quota) });
  const answer = terms.reserve && hold ? { hold } : {};
  try {
    return route === "put" ? await putBatch(req, ws, plan !== null || hold !== null, ahead, answer) : await deleteBatch(req, ws, answer);
  } finally {
    // Whatever was written, even by a batch cut short, reaches the index as one segment and the undo record.
    await ws.flushChanges();
    await commitSyncJournal(undo);
    await ahead?.close();
    await drawn?.end();
  }
}

async function putOne(ws: Workspace, f: PutFrame): Promise<PutAnswer> {
  const shown = typeof f.path === "string" ? f.path : String(f.path);
  let path: string;
  try {
    path = normalizeFilePath(f.path);
  } catch (e) {
    return { path: shown, error: refusal(e) };
  }
  const ifMatch = typeof f.ifMatch === "string" ? f.ifMatch : undefined;
  const create = f.create === true;
  if ((ifMatch === undefined) === !create) return { path: shown, error: { code: "INVALID_ARGUMENT", message: "Each file of a batch needs exactly one condition: if_match (its etag) or create." } };
  try {
    const info = await ws.put(path, f.bytes, { placeChecked: true, length: f.bytes.length, ...(ifMatch !== undefined ? { ifMatch } : { create: true }) });
    return { path: shown, etag: info.etag };
  } catch (e) {
    if (isConflict(e)) return { path: shown, conflict: true };
    return { path: shown, error: refusal(e) };
  }
}

/**
 * Writes frames as they arrive, PARALLEL at a time; a broken body stops the batch where it is (400, with what was done).
 * `planned`: it carried the plan, and may hold no frame; `ahead`: the plan's charge, made before the first frame is written.
 */
async function putBatch(req: Request, ws: Workspace, planned: boolean, ahead: { open(): Promise<void> } | null, extra: Record<string, unknown>): Promise<Response> {
  const answers: PutAnswer[] = [];
  const running = new Set<Promise<void>>();
  let broken: ToolError | null = null;
  try {
    for await (const frame of readPutFrames(req.body, { files: PUT_BATCH_MAX_FILES, bytes: PUT_BATCH_MAX_BYTES, empty: planned })) {
      await ahead?.open(); // refused: nothing of the batch is written (413)
      while (running.size >= PARALLEL) await Promise.race(running);
      const i = answers.length;
      answers.push({ path: String(frame.path), error: { code: "INTERNAL", message: "not written" } });
      const p: Promise<void> = putOne(ws, frame).then((a) => {
        answers[i] = a;
        running.delete(p);
      });
      running.add(p);
    }
  } catch (e) {
    broken = isToolError(e) ? e : new ToolError("INVALID_ARGUMENT", `The put batch could not be read: ${String(e)}; send it again.`);
  }
  await Promise.all(running);
  if (broken) return json({ ok: false, error: errorBody(broken), files: answers, ...extra }, broken.status);
  return json({ files: answers, ...extra });
}

async function deleteBatch(req: Request, ws: Workspace, extra: Record<string, unknown>): Promise<Response> {
  const body = parseJson(await bodyText(req, MAX_DELETE_BODY_BYTES), "delete batch") as { files?: unknown } | null;
  const files = body?.files;
  if (!Array.isArray(files) || files.length < 1 || files.length > DELETE_BATCH_MAX_FILES) throw new ToolError("INVALID_ARGUMENT", `files must be an array of 1 to ${DELETE_BATCH_MAX_FILES} {path, etag}.`);
  const answers: DeleteAnswer[] = [];
  const items: { path: string; etag: string; i: number }[] = [];
  const seen = new Set<string>();
  for (const [i, f] of files.entries()) {
    const raw = (f as { path?: unknown } | null)?.path;
    const etag = (f as { etag?: unknown } | null)?.etag;
    const shown = typeof raw === "string" ? raw : String(raw);
    answers.push({ path: shown, error: { code: "INTERNAL", message: "not deleted" } });
    try {
      const path = normalizeFilePath(raw);
      if (typeof etag !== "string" || etag === "") throw new ToolError("INVALID_ARGUMENT", "Each file of a delete batch needs its etag (the version to delete).");
      if (seen.has(path)) throw new ToolError("INVALID_ARGUMENT", `${path} is twice in the batch; send it once.`);
      seen.add(path);
      items.push({ path, etag, i });
    } catch (e) {
      answers[i] = { path: shown, error: refusal(e) };
    }
  }
  if (items.length) {
    // Conditional in storage: a write that lands after the runner's snapshot is never deleted.
    const { refused } = await ws.deleteMany(items.map((x) => ({ path: x.path, etag: x.etag })));
    const no = new Set(refused);
    const still = new Set<string>();
    // Refused because someone else deleted it already is the outcome the runner wanted.
    const heads = [...no];
    for (let k = 0; k < heads.length; k += PARALLEL) {
      await Promise.all(heads.slice(k, k + PARALLEL).map(async (p) => {
        if (await ws.head(p)) still.add(p);
      }));
    }
    for (const x of items) answers[x.i] = still.has(x.path) ? { path: answers[x.i]!.path, conflict: true } : { path: answers[x.i]!.path, deleted: true, ...(no.has(x.path) ? { gone: true as const } : {}) };
  }
  return json({ files: answers, ...extra });
}
