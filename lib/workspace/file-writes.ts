/**
 * Writing a file through a Workspace: the place checked (not a directory, not below a file), undo's
 * before-image captured first, the write conditional on the version the caller saw, storage
 * conditions turned into tool errors. The Workspace's put is this function (its contract is
 * documented there).
 */
import { ToolError } from "../shared/errors.js";
import { tenantContentType } from "../layers/whiteout.js";
import { LinkOnPath } from "./links.js";
import { readLinks } from "../layout/links.js";
import { ancestorsOf } from "../layout/paths.js";
import { md5Hex } from "../storage/md5.js";
import { isConditionFailed, type PutBody } from "../storage/types.js";
import { utf8 } from "../shared/text.js";
import type { WorkspaceCore as Workspace } from "./workspace-types.js";
import type { FileInfo } from "../layout/files.js";

export interface PutFileOptions {
  ifMatch?: string;
  create?: boolean;
  length?: number;
  contentType?: string;
  /** The caller has already checked the place (e.g. once for a whole directory copy). */
  placeChecked?: boolean;
  record?: boolean;
  last?: boolean;
  /** The size of the version the write replaces (null: none), when the caller has it: the storage quotas' charge needs no HEAD then. */
  replaces?: number | null;
}

/** What the Workspace gives a write: the session (the version's writer) and who hears of the version that landed. */
export interface PutHooks {
  writer: string;
  landed: (path: string, info: FileInfo, bytes: Uint8Array | undefined) => Promise<void>;
}

export async function putFile(ws: Workspace, path: string, body: PutBody, opts: PutFileOptions, hooks: PutHooks): Promise<FileInfo> {
  const bytes = typeof body === "string" ? utf8.encode(body) : body instanceof Uint8Array ? body : undefined;
  // The place is checked (reads only) beside the storage quotas' charge of a create: the charge's round trip costs no time of its own.
  const place = opts.ifMatch === undefined && !opts.placeChecked ? checkPlace(ws, path) : null;
  place?.catch(() => {});
  if (ws.undo && opts.ifMatch === undefined && !opts.create) {
    // Undo needs the version replaced: an unconditional write becomes conditional on what is there now.
    const now = await ws.head(path);
    opts = now ? { ...opts, ifMatch: now.etag, replaces: now.size } : { ...opts, create: true };
  }
  // The storage quotas: the change is charged before anything (the undo capture included) is written.
  const charging = ws.quota ? chargeWrite(ws, path, bytes?.length ?? opts.length, opts) : undefined;
  const [placed, charge] = await Promise.allSettled([place, charging]);
  const charged = charge.status === "fulfilled" ? charge.value : undefined;
  let written = false;
  const giveBack = () => (charged && ws.quota && !written ? ws.quota.settle({ files: -charged.files, bytes: -charged.bytes }) : Promise.resolve());
  if (placed.status === "rejected" || charge.status === "rejected") {
    await giveBack();
    if (body instanceof ReadableStream) await body.cancel().catch(() => {});
    throw placed.status === "rejected" ? placed.reason : (charge as PromiseRejectedResult).reason;
  }
  if (ws.undo && !(await ws.undo.capture(ws.driver, ws.key(path), path, opts.ifMatch ?? null))) {
    await giveBack();
    if (body instanceof ReadableStream) await body.cancel().catch(() => {});
    throw await modified(ws, path);
  }
  const contentType = tenantContentType(opts.contentType);
  if (bytes && opts.last && ws.undo && ws.driver.contentEtags) ws.undo.writeBeside(path, md5Hex(bytes));
  try {
    const o = await ws.driver.put(ws.key(path), bytes ?? body, {
      ...(opts.ifMatch !== undefined ? { ifMatch: opts.ifMatch } : {}),
      ...(opts.create ? { ifNoneMatch: "*" as const } : {}),
      ...(opts.length !== undefined ? { length: opts.length } : {}),
      ...(contentType ? { contentType } : {}),
      ...(opts.record ? { writer: hooks.writer } : {}),
    });
    written = true;
    const info = ws.toInfo(o);
    // A stream of unknown length was charged nothing: its size is known now.
    if (charged && bytes === undefined && opts.length === undefined) await ws.quota!.settle({ files: 0, bytes: info.size });
    ws.undo?.landed(path, info.etag); // a record written beside that named another etag is replaced at commit
    if (opts.record) ws.records.notedOwnWrite(path, info.etag);
    ws.bytesWritten += info.size;
    await hooks.landed(path, info, bytes);
    return info;
  } catch (e) {
    await giveBack();
    await ws.undo?.refused(path);
    if (!isConditionFailed(e)) throw e;
    if (opts.create) throw new ToolError("ALREADY_EXISTS", `${path} already exists (another call created it). Read it before changing it.`, { path });
    throw await modified(ws, path);
  }
}

/**
 * Charges a write to the storage quotas before it is written: its new size less the size of the
 * version it replaces, and one file when the path is new. The replaced size comes from the caller
 * (`replaces`), or one HEAD.
 */
async function chargeWrite(ws: Workspace, path: string, size: number | undefined, opts: PutFileOptions): Promise<{ files: number; bytes: number }> {
  let replaced: number | null = null;
  if (!opts.create) replaced = opts.replaces !== undefined ? opts.replaces : ((await ws.head(path))?.size ?? null);
  const delta = { files: replaced === null ? 1 : 0, bytes: (size ?? 0) - (replaced ?? 0) };
  await ws.quota!.charge(delta);
  return delta;
}

/** FILE_MODIFIED for a write refused because `path` changed since the caller read it, with its current version. */
async function modified(ws: Workspace, path: string): Promise<ToolError> {
  const current = await ws.head(path);
  return new ToolError("FILE_MODIFIED", `${path} was modified since you read it. Read it again, then retry.`, { path, current_etag: current?.etag ?? null });
}

/**
 * A new file may not be a directory, nor lie below a file, nor be (or lie below) a symlink (docs/symlinks.md).
 * Reads only: a caller that checks it itself (beside its other reads) puts with `placeChecked`.
 */
export async function checkPlace(ws: Workspace, path: string): Promise<void> {
  const ancestors = ancestorsOf(path);
  const [dir, parents, links] = await Promise.all([ws.isDirectory(path), Promise.all(ancestors.map((p) => ws.head(p))), readLinks(ws)]);
  const link = [path, ...ancestors].find((p) => links.has(p));
  if (link !== undefined) throw new LinkOnPath(path, link, links);
  if (dir) throw new ToolError("IS_DIRECTORY", `${path} is a directory; give a file path inside it.`, { path });
  const file = parents.find((p) => p !== null);
  if (file) throw new ToolError("NOT_A_DIRECTORY", `Cannot create ${path}: ${file.path} is a file, not a directory.`, { path, file: file.path });
}
