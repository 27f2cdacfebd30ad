/**
 * The server side of packed write-back (wire: lib/sync/stage.ts), mounted by handleSync for a
 * verified token: tenant, workspace and run come from the token only.
 *
 * stage: bounded by the storage quotas first (writeback-bound.ts: the runner's plan in the query, where
 * the quotas stand, one round trip; with `hold=<id>`, the write-back's hold, writeback-hold.ts, its room counted as the run's): a write-back that would pass them is refused with
 * QUOTA_EXCEEDED before this request's pack is written (the packs of the run's earlier requests
 * are left unreferenced, as for any staged file never committed: GC deletes them). Then the frames' bytes go into one new pack (PackWriter: create-only under a fresh id; nothing
 * visible), each file's etag is the MD5 of its bytes (what its own R2/S3 object would have), and
 * the search index gets one segment for the request, as an import does. A staged version that
 * never becomes current (a conflict) leaves an entry no search uses: grep checks every entry's
 * path + etag against the listing. It costs coverage at most: a merge of segments keeps the newer
 * entry of a path (lib/search/indexer.ts mergeHeads), so the live file's entry may be dropped for
 * it, and grep then reads that file directly until it is indexed again. The answer signs what was
 * staged (the receipt).
 * commit: every receipt verified (a forged, damaged or other run's receipt → 400, nothing
 * switched), its charge (drawn on the write-back's hold with `hold=<id>`), then lib/layers/commit-staged.ts, journaled under the run's call for undo.
 */
import { ToolError, errorBody, isToolError } from "../shared/errors.js";
import { filesPrefix, normalizeFilePath, packKey } from "../layout/paths.js";
import { quotaOf } from "../workspace/quota.js";
import type { StorageDriver } from "../storage/types.js";
import { doorRecords } from "../workspace/records.js";
import { Workspace } from "../workspace/workspace.js";
import { commitStaged, type CommitAnswer, type StagedFile } from "../layers/commit-staged.js";
import { ManifestCache } from "../layers/manifest.js";
import { PackWriter } from "../layers/pack-writer.js";
import { readPutFrames } from "./put-batch.js";
import { bodyText, parseJson } from "./runs.js";
import { commitSyncJournal, syncJournal } from "./journal.js";
import { COMMIT_MAX_BYTES, COMMIT_MAX_FILES, openReceipt, signReceipt, STAGE_MAX_BYTES, STAGE_MAX_FILES } from "./stage.js";
import { readPlan, WriteBackBound } from "./writeback-bound.js";
import { drawingOn, readHoldTerms } from "./writeback-hold.js";
import type { SyncServerDeps } from "./server-deps.js";
import { writeBackCaller, type SyncClaims } from "./token.js";

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
const refusal = (e: unknown) => (isToolError(e) ? { code: e.code, message: e.message } : { code: "INTERNAL", message: String(e) });

/** The storage quotas the run's write-back is charged under (its key's too: writeBackCaller); none when the app counts nothing. */
const runQuota = (claims: SyncClaims, deps: SyncServerDeps) => quotaOf({ ...(deps.limits ? { limits: deps.limits } : {}) }, claims.t, claims.w, writeBackCaller(claims), deps.driver);

/** Serves POST /v1/sync/stage and POST /v1/sync/commit. `deps.driver` is the workspace's view, `deps.storage` the raw storage. */
export async function handleStaging(req: Request, route: "stage" | "commit", claims: SyncClaims, deps: SyncServerDeps): Promise<Response> {
  if (req.method !== "POST") throw new ToolError("INVALID_ARGUMENT", `Method ${req.method} not allowed on /v1/sync/${route}; use POST.`);
  const storage = deps.storage ?? deps.driver;
  return route === "stage" ? stage(req, claims, deps, storage) : commit(req, claims, deps, storage);
}

async function stage(req: Request, claims: SyncClaims, deps: SyncServerDeps, storage: SyncServerDeps["driver"]): Promise<Response> {
  // Where the storage quotas stand (a write-back holding its room: its hold's room as its own), and the runner's plan: what the run may stage at most (refused before the body is read when the plan cannot fit).
  const query = new URL(req.url).searchParams;
  const plan = readPlan(query);
  const hold = readHoldTerms(query).hold;
  const quota = runQuota(claims, deps);
  const standing = quota ? await quota.standing(hold ? { draw: hold } : undefined) : null;
  const bound = standing ? new WriteBackBound(standing, plan) : null;
  bound?.declared();
  const ws = new Workspace({ driver: deps.driver, records: doorRecords(deps.kv, claims.t, claims.w, "sync"), tenant: claims.t, id: claims.w, listeners: deps.listeners ?? [], deferChanges: true });
  const writer = new PackWriter(storage, claims.t);
  const answers: ({ path: string; etag: string } | { path: string; error: { code: string; message: string } })[] = [];
  const staged: StagedFile[] = [];
  const seen = new Set<string>();
  try {
    for await (const f of readPutFrames(req.body, { files: STAGE_MAX_FILES, bytes: STAGE_MAX_BYTES })) {
      const shown = typeof f.path === "string" ? f.path : String(f.path);
      try {
        const path = normalizeFilePath(f.path);
        const cond = typeof f.ifMatch === "string" ? f.ifMatch : null;
        if ((cond === null) === (f.create !== true)) throw new ToolError("INVALID_ARGUMENT", "Each staged file needs exactly one condition: if_match (its etag) or create.");
        if (seen.has(path)) throw new ToolError("INVALID_ARGUMENT", `${path} is twice in the stage request; send it once.`);
        seen.add(path);
        bound?.file(path, f.bytes.length, cond === null);
        const e = await writer.add(path, f.bytes);
        staged.push({ path, cond, etag: e.etag, size: e.size, pack: e.pack < 0 ? null : writer.packs[e.pack]!, offset: e.offset, modified: e.modified });
        await ws.announce(path, { path, size: e.size, etag: e.etag, modified: new Date(e.modified) }, f.bytes);
        answers.push({ path: shown, etag: e.etag });
      } catch (e) {
        if (!isToolError(e) || e.code === "QUOTA_EXCEEDED") throw e; // the bound refuses the whole request
        answers.push({ path: shown, error: refusal(e) });
      }
    }
    await writer.finish();
  } catch (e) {
    // Nothing was staged (a malformed body, the quotas' bound): the packs written are dropped (best effort; GC takes what is left).
    await writer.settle();
    await storage.delete(writer.packs.map((id) => packKey(claims.t, id))).catch(() => {});
    const err = isToolError(e) ? e : new ToolError("INVALID_ARGUMENT", `The stage request could not be read: ${String(e)}; send it again.`);
    return json({ ok: false, error: errorBody(err) }, err.status);
  }
  await ws.flushChanges();
  return json({ files: answers, receipt: await signReceipt(deps.secret, claims, staged, deps.hmacKeys) });
}

async function commit(req: Request, claims: SyncClaims, deps: SyncServerDeps, storage: SyncServerDeps["driver"]): Promise<Response> {
  const body = parseJson(await bodyText(req, COMMIT_MAX_BYTES), "commit") as { receipts?: unknown } | null;
  const receipts = body?.receipts;
  if (!Array.isArray(receipts) || receipts.length < 1) throw new ToolError("INVALID_ARGUMENT", "receipts must be a non-empty array of the receipts /v1/sync/stage answered.");
  const files: StagedFile[] = [];
  for (const [n, r] of receipts.entries()) files.push(...(await openReceipt(deps.secret, claims, r, n, deps.hmacKeys)));
  if (files.length > COMMIT_MAX_FILES) throw new ToolError("PAYLOAD_TOO_LARGE", `A commit holds at most ${COMMIT_MAX_FILES} files; nothing was committed.`);
  // A path staged twice (two stage requests): the later one is refused, the first committed.
  const answers: (CommitAnswer | null)[] = [];
  const unique: StagedFile[] = [];
  const seen = new Set<string>();
  for (const f of files) {
    if (seen.has(f.path)) answers.push({ path: f.path, error: { code: "INVALID_ARGUMENT", message: `${f.path} was staged twice; only the first is committed.` } });
    else {
      seen.add(f.path);
      unique.push(f);
      answers.push(null);
    }
  }
  // The storage quotas: the whole commit is charged before the switch (refused: nothing switched), what is not committed given back; drawn on the write-back's hold when it holds its room.
  const run = runQuota(claims, deps);
  const hold = readHoldTerms(new URL(req.url).searchParams).hold;
  const quota = run && hold ? drawingOn(run, hold) : run;
  const change = quota ? await commitChange(deps.driver, filesPrefix(claims.t, claims.w), unique) : null;
  if (quota && change) await quota.charge(change.total);
  const undo = syncJournal(storage, claims);
  let got: CommitAnswer[] | null = null;
  try {
    got = await commitStaged({ storage, manifests: deps.manifests ?? new ManifestCache() }, claims.t, claims.w, unique, undo);
    let k = 0;
    return json({ files: answers.map((a) => a ?? got![k++]!) });
  } finally {
    await commitSyncJournal(undo);
    if (quota && change) {
      const back = { files: 0, bytes: 0 };
      unique.forEach((f, i) => {
        if (got && "etag" in got[i]!) return;
        back.files -= change.each[i]!.files;
        back.bytes -= change.each[i]!.bytes;
      });
      await quota.settle(back);
    }
  }
}

/**
 * What committing `files` changes in the storage quotas: each file's size less the size of the
 * version at its path now (+1 file where there is none), from one listing of the workspace's tree
 * (one LIST per 1,000 files): no HEAD per file.
 */
async function commitChange(view: StorageDriver, prefix: string, files: readonly StagedFile[]): Promise<{ total: { files: number; bytes: number }; each: { files: number; bytes: number }[] }> {
  const wanted = new Set(files.map((f) => prefix + f.path));
  const sizes = new Map<string, number>();
  let cursor: string | undefined;
  do {
    const page = await view.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) if (wanted.has(o.key)) sizes.set(o.key.slice(prefix.length), o.size);
    cursor = page.cursor;
  } while (cursor);
  const each = files.map((f) => ({ files: sizes.has(f.path) ? 0 : 1, bytes: f.size - (sizes.get(f.path) ?? 0) }));
  return { total: each.reduce((a, b) => ({ files: a.files + b.files, bytes: a.bytes + b.bytes }), { files: 0, bytes: 0 }), each };
}
