/**
 * The commit of a packed write-back (POST /v1/sync/commit; wire: lib/sync/stage.ts). The
 * files were staged into packs under fresh ids (nothing visible); here they become the lower
 * layer with one conditional switch of the layer pointer, like an import:
 *
 *  a. read the workspace record and its base manifest; list the upper layer over the staged
 *     paths (one LIST per key range: upper-range.ts);
 *  b. each file's merged current version: an upper file → its etag; a whiteout → absent; else
 *     the lower entry; else absent. Its condition (if_match = that etag; create = absent) fails →
 *     conflict. It holds but an upper object stands at the path → `alone` (the ordinary per-file
 *     conditional write over that object stays the one rule there). Else → into the manifest;
 *  c. manifest = base ⊕ accepted, written under a new id, then the pointer switched If-Match the
 *     record read in (a). A concurrent checkpoint/restore/import/commit (CONFLICT) → redo a–c (the
 *     packs stay valid), at most ATTEMPTS times; then every file is answered `alone`, so the runner
 *     writes it the ordinary way (conditional per file), never lost;
 *  d. after the switch, list the upper layer over the committed paths again: an object there (a
 *     writer landed on the path between (a) and now) shadows the committed entry → that file is
 *     answered conflict (the runner saves its copy; neither change is lost). A writer landing
 *     after this listing re-reads the pointer (layered-driver.ts confirm, plain-driver.ts) and
 *     undoes itself, so it is refused, never acknowledged over a committed file;
 *  e. the undo journal of the run's call: for each committed file its version before (the old
 *     base's entry as a pack reference, free; or none) and the etag after.
 */
import { ToolError } from "../shared/errors.js";
import { filesPrefix, packKey } from "../layout/paths.js";
import { compareKeys } from "../layout/key-order.js";
import { Manifest, writeManifest, type ManifestEntry } from "./manifest.js";
import { filesDriver, readMeta, switchBase, type LayerDeps } from "./open.js";
import { mergeManifest } from "./seal.js";
import { upperAmong } from "./upper-range.js";
import { Whiteouts } from "./whiteout.js";
import type { StorageDriver } from "../storage/types.js";

/** One staged file (its receipt: lib/sync/stage.ts): what the commit may put into the manifest. */
export interface StagedFile {
  path: string;
  /** The condition: the etag the run started from (if_match), or null for a create. */
  cond: string | null;
  etag: string;
  size: number;
  /** The pack holding the bytes (null: an empty file). */
  pack: string | null;
  offset: number;
  modified: number;
}

export type CommitAnswer = { path: string; etag: string } | { path: string; conflict: true } | { path: string; alone: true } | { path: string; error: { code: string; message: string } } | { path: string; withdrawn: true };

/** What the commit tells the undo journal of the run's call (lib/workspace/undo-journal.ts UndoJournal), per committed file. */
export interface CommitJournal {
  capture(driver: StorageDriver, key: string, path: string, etag: string | null): Promise<boolean>;
  landed(path: string, etag: string | null): void;
}

const ATTEMPTS = 3;

const isConflict = (e: unknown) => e instanceof ToolError && e.code === "CONFLICT";

/**
 * `opts.all` (a batch upload's mode "all", lib/workspace/upload-batch.ts): every file or none. A
 * conflict or an upper object in (b) → no switch, the other files answered `withdrawn`; a writer
 * landed in (d) → the switch is taken back (If-Match the record it wrote), the others `withdrawn`
 * (when another switch came first, the commit stands: the others are answered as written).
 */
export async function commitStaged(deps: LayerDeps, tenant: string, ws: string, files: readonly StagedFile[], undo?: CommitJournal, opts: { all?: boolean } = {}): Promise<CommitAnswer[]> {
  const fp = filesPrefix(tenant, ws);
  const answers: (CommitAnswer | undefined)[] = new Array(files.length);
  // A staged pack GC took (a write-back that outlived GC's grace period) is never pointed at:
  // its files go the ordinary way. 1 HEAD per pack (≤ 8 MiB of files each).
  const packs = [...new Set(files.flatMap((f) => (f.pack ? [f.pack] : [])))];
  const gone = new Set<string>();
  await Promise.all(packs.map(async (id) => void ((await deps.storage.head(packKey(tenant, id))) ?? gone.add(id))));
  if (gone.size) {
    const kept = files.filter((f) => !(f.pack && gone.has(f.pack)));
    const got = kept.length ? await commitStaged(deps, tenant, ws, kept, undo) : [];
    let k = 0;
    return files.map((f) => (f.pack && gone.has(f.pack) ? { path: f.path, alone: true } : got[k++]!));
  }
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    // a. the record, its base, the upper layer over the staged paths
    const rec = await readMeta(deps.storage, tenant, ws);
    if (!rec) throw new ToolError("NOT_FOUND", `Workspace ${ws} is gone; nothing was committed.`);
    const base = rec.meta.base ? await deps.manifests.load(deps.storage, tenant, rec.meta.base) : Manifest.empty();
    const whiteouts = Whiteouts.of(deps.storage, rec.meta);
    const upper = await upperAmong(deps.storage, files.map((f) => fp + f.path), whiteouts);
    // b. each file against the merged current version
    const accepted: { i: number; f: StagedFile; before: string | null }[] = [];
    files.forEach((f, i) => {
      const u = upper.get(fp + f.path);
      const current = u ? (whiteouts.is(u) ? null : u.etag) : (base.find(f.path)?.etag ?? null);
      if (current !== f.cond) answers[i] = { path: f.path, conflict: true };
      else if (u) answers[i] = { path: f.path, alone: true };
      else accepted.push({ i, f, before: current });
    });
    if (!accepted.length) return answers as CommitAnswer[];
    if (opts.all && accepted.length < files.length) return withdraw(answers, files);
    // c. base ⊕ accepted, one conditional switch
    const packs: string[] = [];
    const packIndex = new Map<string, number>();
    const changes = accepted
      .map(({ f }): { path: string; entry: ManifestEntry } => {
        let pack = -1;
        if (f.pack !== null) {
          pack = packIndex.get(f.pack) ?? packs.push(f.pack) - 1;
          packIndex.set(f.pack, pack);
        }
        return { path: f.path, entry: { path: f.path, etag: f.etag, size: f.size, modified: f.modified, pack, offset: f.offset } };
      })
      .sort((a, b) => compareKeys(a.path, b.path));
    const manifest = mergeManifest(base, packs, changes);
    await writeManifest(deps.storage, deps.manifests, tenant, manifest);
    let switched: Awaited<ReturnType<typeof switchBase>>;
    try {
      switched = await switchBase(deps.storage, tenant, ws, rec, manifest.id);
    } catch (e) {
      if (isConflict(e)) continue; // a concurrent checkpoint, restore, import or commit: redo a–c
      throw e;
    }
    // d. writers that landed on a committed path around the switch shadow it: a conflict
    const landed = await upperAmong(deps.storage, accepted.map((a) => fp + a.f.path));
    if (opts.all && landed.size) {
      const back = await switchBase(deps.storage, tenant, ws, switched, rec.meta.base ?? null).then(() => true, (e: unknown) => (isConflict(e) ? false : Promise.reject(e)));
      if (back) {
        for (const { i, f } of accepted) if (landed.has(fp + f.path)) answers[i] = { path: f.path, conflict: true };
        return withdraw(answers, files);
      }
    }
    // e. journal (before-images through the OLD view: lower versions are pack references)
    const old = undo ? await filesDriver(deps, tenant, ws, rec.meta) : null;
    for (const { i, f, before } of accepted) {
      if (landed.has(fp + f.path)) {
        answers[i] = { path: f.path, conflict: true };
        continue;
      }
      answers[i] = { path: f.path, etag: f.etag };
      if (undo && old) {
        await undo.capture(old, fp + f.path, f.path, before);
        undo.landed(f.path, f.etag);
      }
    }
    return answers as CommitAnswer[];
  }
  // The pointer kept moving: the ordinary per-file write does these (conditional, never lost).
  if (opts.all) return withdraw(answers, files);
  return files.map((f, i) => {
    const a = answers[i];
    return a && "conflict" in a ? a : { path: f.path, alone: true };
  });
}

/** Every file not answered yet is `withdrawn` (opts.all: nothing of the commit stands). */
function withdraw(answers: (CommitAnswer | undefined)[], files: readonly StagedFile[]): CommitAnswer[] {
  return files.map((f, i) => answers[i] ?? { path: f.path, withdrawn: true });
}
