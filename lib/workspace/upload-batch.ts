/**
 * Batch uploads (POST /v1/workspaces/{ws}/uploads, lib/api/routes/files-batch.ts): many files in
 * one request, written into packs + one manifest switch instead of one object per file.
 *
 *  1. add(): each file's bytes go into packs (PackWriter: ≤ 8 MiB per PUT, fresh ids, nothing
 *     visible) and its version is announced to the search index (deferred: written by index(),
 *     after the answer where the runtime allows, only when something landed). A file refused here (a bad path, twice in the batch, too large) keeps its
 *     error.
 *  2. finish(): one listing of the merged view (one LIST per 1,000 files of the workspace) gives
 *     each path's current version and the places taken: a condition (if_match: that etag;
 *     create: absent) that fails → FILE_MODIFIED / ALREADY_EXISTS; a file over a directory →
 *     IS_DIRECTORY; a file below a file → NOT_A_DIRECTORY; at or below a symlink → SYMLINK_REFUSED. The storage quotas are charged for the
 *     whole change (refused: nothing is written).
 *     mode "all": any failure → nothing is written (the packs are deleted). mode "each": the
 *     failed files are left out.
 *  3. The files whose path has an upper object (an earlier per-file write) are written the
 *     ordinary per-file way, conditional on the version seen (the per-file object stays the unit of
 *     conditional writes there): in mode "all" before the switch, each undone (conditionally) when
 *     a later step fails. The others go into the manifest with lib/layers/commit-staged.ts, each
 *     conditional on the version seen in 2; in mode "all" the switch is refused when any of them
 *     changed meanwhile, and taken back (If-Match) when a writer landed on one around it.
 *
 * Storage operations for n small files (no upper objects at their paths): ceil(bytes / 8 MiB) pack
 * PUTs, W/1000 LISTs (W: files in the workspace), 1 LIST of the upper layer (twice: before and
 * after the switch), 1 manifest PUT, 1 record PUT (the switch), the index segment PUT(s). No
 * per-file object is written, so the files never need sealing (no first-run seal cliff).
 */
import { isToolError, ToolError } from "../shared/errors.js";
import { ancestorsOf, filesPrefix, packKey } from "../layout/paths.js";
import { normalizeFileToWrite } from "../layout/write-path.js";
import { commitStaged, type StagedFile } from "../layers/commit-staged.js";
import { PackWriter } from "../layers/pack-writer.js";
import { upperAmong } from "../layers/upper-range.js";
import { LinkOnPath } from "./links.js";
import { readLinks } from "../layout/links.js";
import { pool } from "./transfer-run.js";
import { changedMeanwhile, errorOf, type Staged, type UploadDeps, type UploadMode, type UploadResult } from "./upload-results.js";

export class UploadBatch {
  private readonly writer: PackWriter;
  private readonly results: (UploadResult | undefined)[] = [];
  private readonly staged: Staged[] = [];
  private readonly seen = new Set<string>();
  private finished = false;
  private landed = 0;

  constructor(private readonly deps: UploadDeps, private readonly tenant: string, private readonly id: string) {
    this.writer = new PackWriter(deps.layers.storage, tenant);
  }

  /** Files seen so far (written or refused). */
  get count(): number {
    return this.results.length;
  }

  /** Whether a file was refused so far. */
  get failed(): boolean {
    return this.results.some((r) => r && !r.ok);
  }

  /** A file the request could not give (a line that is not a file): its result is this error. */
  refuse(shown: string, error: ToolError): void {
    this.results.push({ path: shown, ok: false, error: errorOf(error) });
  }

  /** Stages one file (its path as sent). A storage failure throws (the batch is then aborted). */
  async add(given: string, bytes: Uint8Array, cond: Staged["cond"]): Promise<void> {
    const i = this.results.push(undefined) - 1;
    let path: string;
    try {
      path = normalizeFileToWrite(given, "path");
      if (this.seen.has(path)) throw new ToolError("INVALID_ARGUMENT", `${path} is twice in the batch; send each file once.`, { path });
    } catch (e) {
      if (!isToolError(e)) throw e;
      this.results[i] = { path: given, ok: false, error: errorOf(e) };
      return;
    }
    this.seen.add(path);
    const e = await this.writer.add(path, bytes);
    const pack = e.pack < 0 ? null : this.writer.packs[e.pack]!;
    this.staged.push({ i, path, cond, file: { path, cond: null, etag: e.etag, size: e.size, pack, offset: e.offset, modified: e.modified } });
    await this.deps.ws.announce(path, { path, size: e.size, etag: e.etag, modified: new Date(e.modified) }, bytes);
  }

  /**
   * The search index's upkeep for the files written: one segment (or a few) for the batch, not
   * merged on this path (as an import's; a later upkeep merges). The route runs it after its
   * answer where the runtime allows (as the raw PUT's upkeep): grep reads a file no segment covers
   * directly, so results stay exact meanwhile. Never fails (the indexer reports its own errors).
   */
  index(): Promise<void> {
    return this.landed ? this.deps.ws.flushChanges({ keys: [] }) : Promise.resolve();
  }

  /** Deletes what was staged (nothing of it is visible). */
  async abort(): Promise<void> {
    await this.writer.settle().catch(() => {});
    await this.deps.layers.storage.delete(this.writer.packs.map((id) => packKey(this.tenant, id))).catch(() => {});
  }

  /** Writes the batch as `mode` says; every file's result, in the order sent. Refused as a whole (mode "all"): throws, nothing written. */
  async finish(mode: UploadMode): Promise<UploadResult[]> {
    if (this.finished) throw new Error("UploadBatch.finish called twice");
    this.finished = true;
    try {
      await this.writer.finish();
      return await this.commit(mode);
    } catch (e) {
      await this.abort();
      throw e;
    }
  }

  private async commit(mode: UploadMode): Promise<UploadResult[]> {
    const fp = filesPrefix(this.tenant, this.id);
    const current = await this.placeAndConditions(fp);
    if (mode === "all" && this.failed) throw this.refusal();
    let go = this.staged.filter((s) => !this.results[s.i]);
    // The storage quotas, for the whole change: refused → nothing written.
    const delta = (s: Staged) => ({ files: current.has(s.path) ? 0 : 1, bytes: s.file.size - (current.get(s.path)?.size ?? 0) });
    const sum = (ds: { files: number; bytes: number }[], sign = 1) => ds.reduce((a, b) => ({ files: a.files + sign * b.files, bytes: a.bytes + sign * b.bytes }), { files: 0, bytes: 0 });
    const charged = go;
    if (this.deps.quota && charged.length) await this.deps.quota.charge(sum(charged.map(delta)));
    const landed = new Set<Staged>();
    try {
      // Paths with an upper object: the per-file conditional write.
      const upper = await upperAmong(this.deps.layers.storage, go.map((s) => fp + s.path));
      const alone = go.filter((s) => upper.has(fp + s.path));
      go = go.filter((s) => !upper.has(fp + s.path));
      const undo = mode === "all" ? await this.writeAlone(alone, current, landed, true) : null;
      try {
        const answers = go.length ? await commitStaged(this.deps.layers, this.tenant, this.id, go.map((s) => ({ ...s.file, cond: current.get(s.path)?.etag ?? null })), undefined, { all: mode === "all" }) : [];
        const late: Staged[] = [];
        answers.forEach((a, k) => {
          const s = go[k]!;
          if ("etag" in a) {
            this.results[s.i] = { path: s.path, ok: true, etag: a.etag, size: s.file.size, created: !current.has(s.path) };
            landed.add(s);
          } else if ("withdrawn" in a) return; // mode "all": another file failed, nothing of the commit stands
          else if ("alone" in a && mode === "each") late.push(s);
          else this.results[s.i] = { path: s.path, ok: false, error: errorOf(changedMeanwhile(s.path, "error" in a ? a.error : null)) };
        });
        if (mode === "all" && this.failed) {
          await undo?.();
          throw this.refusal();
        }
        if (mode === "each") await this.writeAlone([...alone, ...late], current, landed, false);
      } catch (e) {
        if (undo && !(e instanceof ToolError && e.details?.batch === "refused")) await undo();
        throw e;
      }
    } finally {
      // Give back what was charged for files not written.
      const back = charged.filter((s) => !landed.has(s));
      if (this.deps.quota && back.length) await this.deps.quota.settle(sum(back.map(delta), -1)).catch(() => {});
    }
    this.landed = landed.size;
    return this.results.map((r) => r!);
  }

  /** One listing of the merged view: each batch path's current version; the place and the condition of each file checked. */
  private async placeAndConditions(fp: string): Promise<Map<string, { etag: string; size: number }>> {
    const wanted = new Map(this.staged.filter((s) => !this.results[s.i]).map((s) => [s.path, s]));
    const dirsWanted = new Set<string>();
    for (const s of wanted.values()) for (const a of ancestorsOf(s.path)) dirsWanted.add(a);
    const current = new Map<string, { etag: string; size: number }>();
    const filesAtDirs = new Set<string>();
    const isDir = new Set<string>();
    const note = (p: string) => {
      for (const a of ancestorsOf(p)) if (wanted.has(a)) isDir.add(a);
    };
    const links = readLinks(this.deps.ws);
    links.catch(() => {});
    let cursor: string | undefined;
    do {
      const page = await this.deps.view.list({ prefix: fp, ...(cursor ? { cursor } : {}) });
      for (const o of page.objects) {
        const p = o.key.slice(fp.length);
        if (p.endsWith("/")) {
          const dir = p.slice(0, -1);
          if (wanted.has(dir)) isDir.add(dir);
          note(dir);
          continue;
        }
        if (wanted.has(p)) current.set(p, { etag: o.etag, size: o.size });
        if (dirsWanted.has(p)) filesAtDirs.add(p);
        note(p);
      }
      cursor = page.cursor;
    } while (cursor);
    const linked = await links;
    for (const s of wanted.values()) {
      const cur = current.get(s.path);
      const link = linked.size ? [s.path, ...ancestorsOf(s.path)].find((p) => linked.has(p)) : undefined;
      if (link !== undefined) {
        this.results[s.i] = { path: s.path, ok: false, error: errorOf(new LinkOnPath(s.path, link, linked)) };
        continue;
      }
      const below = ancestorsOf(s.path).find((a) => filesAtDirs.has(a) || wanted.has(a));
      let err: ToolError | null = null;
      if (below) err = new ToolError("NOT_A_DIRECTORY", `${below} is a file${wanted.has(below) && !filesAtDirs.has(below) ? " in this batch" : ""}, so ${s.path} cannot be below it. Upload it elsewhere, or delete ${below} first.`, { path: s.path, file: below });
      else if (isDir.has(s.path)) err = new ToolError("IS_DIRECTORY", `${s.path} is a directory; give a file path inside it.`, { path: s.path });
      else if (s.cond && "ifMatch" in s.cond && cur?.etag !== s.cond.ifMatch) err = new ToolError("FILE_MODIFIED", cur ? `${s.path} is not the version if_match names (it is ${cur.etag}). Read it again, then retry.` : `${s.path} does not exist, so if_match cannot hold. Send create: true to create it.`, { path: s.path, current_etag: cur?.etag ?? null });
      else if (s.cond && "create" in s.cond && cur) err = new ToolError("ALREADY_EXISTS", `${s.path} already exists (etag ${cur.etag}); create: true writes only new files. Send if_match with its etag to replace it.`, { path: s.path, current_etag: cur.etag });
      if (err) this.results[s.i] = { path: s.path, ok: false, error: errorOf(err) };
    }
    return current;
  }

  /** Writes `files` one by one (bytes read back from their pack), each conditional on the version seen. Mode "all" (`strict`): the first failure undoes those done and refuses the batch; returns the undo. */
  private async writeAlone(files: Staged[], current: Map<string, { etag: string; size: number }>, landed: Set<Staged>, strict: boolean): Promise<(() => Promise<void>) | null> {
    const done: { s: Staged; etag: string; previous: Uint8Array | null; was: string | null }[] = [];
    const undo = async () => {
      for (const d of done.reverse()) {
        try {
          if (d.previous === null) await this.deps.ws.delete(d.s.path, d.etag);
          else await this.deps.ws.put(d.s.path, d.previous, { ifMatch: d.etag, placeChecked: true });
        } catch (e) {
          console.warn(`upload batch: could not undo ${d.s.path} (another call changed it meanwhile)`, e);
        }
        landed.delete(d.s);
      }
    };
    const one = async (s: Staged) => {
      const was = current.get(s.path)?.etag ?? null;
      const previous = strict && was !== null ? await this.readBack(s.path) : null;
      const bytes = await this.bytesOf(s.file);
      try {
        const info = await this.deps.ws.put(s.path, bytes, { ...(was === null ? { create: true } : { ifMatch: was }), placeChecked: true, replaces: current.get(s.path)?.size ?? null });
        this.results[s.i] = { path: s.path, ok: true, etag: info.etag, size: info.size, created: was === null };
        landed.add(s);
        done.push({ s, etag: info.etag, previous, was });
      } catch (e) {
        if (!isToolError(e)) throw e;
        this.results[s.i] = { path: s.path, ok: false, error: errorOf(e) };
        if (strict) throw e;
      }
    };
    try {
      if (strict) for (const s of files) await one(s);
      else await pool(files, 8, one);
    } catch (e) {
      await undo();
      if (isToolError(e)) throw this.refusal();
      throw e;
    }
    return strict ? undo : null;
  }

  private async readBack(path: string): Promise<Uint8Array> {
    const r = await this.deps.ws.get(path);
    if (!r) throw new ToolError("FILE_MODIFIED", `${path} was deleted meanwhile.`, { path, current_etag: null });
    return new Uint8Array(await new Response(r.body).arrayBuffer());
  }

  private async bytesOf(f: StagedFile): Promise<Uint8Array> {
    if (f.pack === null) return new Uint8Array();
    const r = await this.deps.layers.storage.get(packKey(this.tenant, f.pack), { range: { offset: f.offset, length: f.size } });
    if (!r) throw new ToolError("INTERNAL", `The staged pack of ${f.path} is gone; send the batch again.`);
    return new Uint8Array(await new Response(r.body).arrayBuffer());
  }

  /** Mode "all", a file failed: nothing was written. */
  private refusal(): ToolError {
    const failed = this.results.flatMap((r) => (r && !r.ok ? [r] : []));
    const first = failed[0]!;
    const written = this.results.filter((r) => r?.ok).length;
    const what = written ? `${written} file${written === 1 ? " was" : "s were"} written before the failure and could not be taken back (a concurrent change moved the workspace; details.written_paths)` : "Nothing was written";
    const code = failed.every((f) => f.error.code === first.error.code) ? first.error.code : failed.some((f) => f.error.code === "FILE_MODIFIED" || f.error.code === "ALREADY_EXISTS") ? "FILE_MODIFIED" : first.error.code;
    return new ToolError(code, `${what}: ${failed.length} of ${this.results.length} file${this.results.length === 1 ? "" : "s"} failed (${first.path}: ${first.error.message}). Fix them (details.failed) and send the batch again, or send mode=each to write the others.`, {
      batch: "refused",
      written,
      ...(written ? { written_paths: this.results.flatMap((r) => (r?.ok ? [r.path] : [])) } : {}),
      failed: failed.map((f) => ({ path: f.path, ...f.error })),
    });
  }
}
