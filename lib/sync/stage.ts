/**
 * Packed write-back, the wire format of both ends (server: lib/sync/stage-server.ts; the layer
 * switch: lib/layers/commit-staged.ts; the runner: infra/container/writeback-packed.ts):
 *
 *   POST /v1/sync/stage   the frames of a put batch (lib/sync/put-batch.ts), up to STAGE_MAX_FILES
 *                         files / STAGE_MAX_BYTES: the bytes go into ONE new pack, nothing becomes
 *                         visible. → { files: [{path, etag} | {path, error}], receipt }
 *   POST /v1/sync/commit  { receipts: [receipt] } → { files: [{path, etag} | {path, conflict: true}
 *                         | {path, alone: true} | {path, error}] }, every staged file in the order
 *                         staged: written (in the new lower layer), a conflict (the condition no
 *                         longer holds, or a writer landed on the path around the switch), or
 *                         `alone`: its condition holds but an upper object stands at the path, so
 *                         the ordinary per-file conditional write (POST /v1/sync/put) must do it.
 *
 * A stage request carries the write-back's plan in its query (WriteBackPlan: what the whole
 * write-back writes, and what the run staged before this request): the server refuses with
 * QUOTA_EXCEEDED, before it writes this request's pack, when the plan or the running count would
 * pass what the storage quotas could accept (lib/sync/writeback-bound.ts).
 *
 * A receipt is `<base64url(JSON)>.<HMAC>` under the sync secret (domain-separated from tokens):
 * it binds tenant, workspace and run to the staged entries (path, condition, etag, size, pack,
 * offset). The commit takes nothing else from the runner, so a runner cannot point a manifest
 * at bytes it did not stage in this run, nor at another workspace's packs.
 */
import { ToolError } from "../shared/errors.js";
import { safeEqual } from "../shared/hash.js";
import { sign, type SyncClaims } from "./token.js";
import type { HmacKeys } from "../shared/hmac-keys.js";
import { base64UrlToBytes, bytesToBase64Url } from "../shared/text.js";
import type { StagedFile } from "../layers/commit-staged.js";

export const STAGE_MAX_FILES = 2000;
export const STAGE_MAX_BYTES = 8 * 1024 * 1024;
/** A commit names at most this many files (the runner's max_writeback_files) in a body of at most COMMIT_MAX_BYTES. */
export const COMMIT_MAX_FILES = 100_000;
export const COMMIT_MAX_BYTES = 48 * 1024 * 1024;

export type StageResult = { path: string; ok: true; etag: string } | { path: string; ok: false; error: string };
export type CommitResult = { path: string; ok: true; etag: string } | { path: string; ok: false; conflict: true } | { path: string; ok: false; alone: true } | { path: string; ok: false; error: string };

type Row = [string, string | null, string, number, number, number, number];
interface ReceiptBody {
  v: 1;
  t: string;
  w: string;
  r: string;
  packs: string[];
  e: Row[];
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const PURPOSE = "toolshed-stage-receipt.";

/** Signs the entries staged by one request of run `claims.r`. */
export async function signReceipt(secret: string, claims: SyncClaims, files: StagedFile[], keys: HmacKeys | undefined): Promise<string> {
  const packs: string[] = [];
  const index = new Map<string, number>();
  const e = files.map((f): Row => {
    let p = -1;
    if (f.pack !== null) {
      p = index.get(f.pack) ?? packs.push(f.pack) - 1;
      index.set(f.pack, p);
    }
    return [f.path, f.cond, f.etag, f.size, p, f.offset, f.modified];
  });
  const body = bytesToBase64Url(enc.encode(JSON.stringify({ v: 1, t: claims.t, w: claims.w, r: claims.r, packs, e } satisfies ReceiptBody)));
  return `${body}.${await sign(secret, PURPOSE + body, keys)}`;
}

/** The staged files of a receipt of this run, or INVALID_ARGUMENT (forged, damaged, or another run's / workspace's). */
export async function openReceipt(secret: string, claims: SyncClaims, receipt: unknown, n: number, keys: HmacKeys | undefined): Promise<StagedFile[]> {
  const bad = (why: string) => new ToolError("INVALID_ARGUMENT", `Receipt ${n} ${why}; nothing was committed. Stage the files again in this run.`);
  if (typeof receipt !== "string") throw bad("is not a string");
  const [body, mac, extra] = receipt.split(".");
  if (!body || !mac || extra !== undefined || !safeEqual(await sign(secret, PURPOSE + body, keys), mac)) throw bad("is not a receipt of this API (bad signature)");
  const bytes = base64UrlToBytes(body);
  if (!bytes) throw bad("cannot be read");
  let j: ReceiptBody;
  try {
    j = JSON.parse(dec.decode(bytes)) as ReceiptBody;
  } catch {
    throw bad("cannot be read");
  }
  if (j.v !== 1 || j.t !== claims.t || j.w !== claims.w || j.r !== claims.r) throw bad("belongs to another run or workspace");
  return j.e.map(([path, cond, etag, size, p, offset, modified]) => ({ path, cond, etag, size, pack: p < 0 ? null : j.packs[p]!, offset, modified }));
}

const errorText = (e: { code: string; message: string }) => `${e.code}: ${e.message}`;

function filesOf(body: unknown, paths: string[], what: string): unknown[] {
  const files = (body as { files?: unknown } | null)?.files;
  if (!Array.isArray(files) || files.length !== paths.length) throw new ToolError("INTERNAL", `Workspace sync failed (${what}): malformed answer.`);
  files.forEach((a, i) => {
    if ((a as { path?: unknown } | null)?.path !== paths[i]) throw new ToolError("INTERNAL", `Workspace sync failed (${what}): answer ${i} is not ${JSON.stringify(paths[i])}.`);
  });
  return files;
}

/** A stage answer: a result per file in the order sent, and the receipt. */
export function stageResults(body: unknown, paths: string[]): { files: StageResult[]; receipt: string } {
  const receipt = (body as { receipt?: unknown } | null)?.receipt;
  if (typeof receipt !== "string") throw new ToolError("INTERNAL", "Workspace sync failed (stage): no receipt.");
  const files = filesOf(body, paths, "stage").map((a, i): StageResult => {
    const x = a as { etag?: unknown; error?: { code: string; message: string } };
    return typeof x.etag === "string" ? { path: paths[i]!, ok: true, etag: x.etag } : { path: paths[i]!, ok: false, error: x.error ? errorText(x.error) : "malformed answer" };
  });
  return { files, receipt };
}

/** A commit answer: a result per staged file, in the order staged. */
export function commitResults(body: unknown, paths: string[]): CommitResult[] {
  return filesOf(body, paths, "commit").map((a, i): CommitResult => {
    const path = paths[i]!;
    const x = a as { etag?: unknown; conflict?: unknown; alone?: unknown; error?: { code: string; message: string } };
    if (typeof x.etag === "string") return { path, ok: true, etag: x.etag };
    if (x.conflict === true) return { path, ok: false, conflict: true };
    if (x.alone === true) return { path, ok: false, alone: true };
    return { path, ok: false, error: x.error ? errorText(x.error) : "malformed answer" };
  });
}
