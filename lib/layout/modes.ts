/**
 * The executable bit of workspace files. Object storage keeps bytes, not modes, so the
 * bash runner keeps the list of executable files in one internal object per workspace
 * (`x/modes.json`, see lib/layout/paths.ts): `chmod +x run.sh` in one call is still true in the
 * next, in any execution environment, and `git status` does not see every script as
 * changed after a cold start. Bundles for Workers.
 *
 * The list is keyed by path: a tool's edit of an executable file keeps it executable (as an
 * editor keeps a file's mode). Entries of deleted files are pruned by the runner's next
 * update; until then a file recreated at that path by a tool (not by a command) comes back
 * executable. move and copy do not carry the bit; `mv` and `cp -p` in bash do.
 *
 * Updates are deltas merged on the server (read, apply, write with If-Match), retried on a
 * concurrent update, so two runs that chmod different files both keep their change.
 *
 * The same object holds the workspace's symlinks (path → target, docs/symlinks.md): a link is
 * not a file object, so no tenant-written bytes can ever read as a link.
 */
import { ToolError } from "../shared/errors.js";
import { modesKey, normalizeFilePath } from "./paths.js";
import { isConditionFailed, type StorageDriver } from "../storage/types.js";
import { readJson } from "../storage/json.js";

/** The workspace's executable files and symlinks (docs/symlinks.md); etag null: none ever recorded. */
export interface ExecModes {
  etag: string | null;
  exec: string[];
  /** Symlinks: path → target, as readlink gives it. Absent from an older API (it keeps none). */
  links?: Record<string, string>;
}

/** A change of executable bits (`remove` applies first, then `add`) and of symlinks (path → target, null: no link any more). */
export interface ModesDelta {
  add: string[];
  remove: string[];
  links?: Record<string, string | null>;
}

/** Most executable files one workspace records, and most paths in one delta. */
export const MAX_EXEC_FILES = 100_000;
/** Most symlinks one workspace records, and most in one delta. */
export const MAX_LINKS = 100_000;
/** Longest symlink target, in UTF-8 bytes (Linux's PATH_MAX less its NUL). */
export const MAX_LINK_TARGET_BYTES = 4095;
/**
 * Most bytes (UTF-8) of one workspace's symlinks, paths and targets together. Links are not files
 * (no quota counts them: docs/limits-and-quotas.md), and the table is one JSON object every run and
 * export reads whole: without this, 100,000 links of 4 KB targets made it ~490 MB, past what an
 * isolate holds (each write-back's merge parsed and rewrote all of it).
 */
export const MAX_LINKS_BYTES = 8 * 1024 * 1024;
const ATTEMPTS = 6;

interface Stored {
  v: 1;
  exec: string[];
  links?: Record<string, string>;
}

/** Whether `t` can be a symlink's target: 1-4095 UTF-8 bytes, no NUL. */
export const isLinkTarget = (t: unknown): t is string => typeof t === "string" && t.length > 0 && !t.includes("\0") && new TextEncoder().encode(t).length <= MAX_LINK_TARGET_BYTES;

/** Refuses a links table past MAX_LINKS_BYTES (paths and targets, UTF-8), saying how large it would be and what to do. */
function refuseLinksPastBytes(links: Record<string, string>): void {
  const enc = new TextEncoder();
  let bytes = 0;
  for (const [p, t] of Object.entries(links)) bytes += enc.encode(p).length + enc.encode(t).length;
  if (bytes <= MAX_LINKS_BYTES) return;
  // The action first: a write-back shows this inside the API's raw answer, cut at 200 characters (infra/container/sync-out.ts).
  throw new ToolError("PAYLOAD_TOO_LARGE", `Symlinks past 8 MiB: remove unneeded links (find . -type l) or shorten targets. This change makes the workspace's links ${bytes} bytes (paths and targets); none of it was recorded.`, { reason: "links_bytes", bytes, max: MAX_LINKS_BYTES });
}

function storedLinks(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!v || typeof v !== "object") return out;
  for (const [p, t] of Object.entries(v as Record<string, unknown>)) if (isLinkTarget(t)) out[p] = t;
  return out;
}

/** The workspace's executable files ({etag: null, exec: []} when none were ever recorded). */
export async function readModes(driver: StorageDriver, tenant: string, workspace: string): Promise<ExecModes> {
  const got = await readJson<Stored>(driver, modesKey(tenant, workspace));
  if (!got || !Array.isArray(got.value?.exec)) return { etag: got?.etag ?? null, exec: [] };
  const links = storedLinks(got.value.links);
  return { etag: got.etag, exec: got.value.exec.filter((p): p is string => typeof p === "string"), ...(Object.keys(links).length ? { links } : {}) };
}

/** A delta from the wire, checked: canonical paths, bounded. Throws INVALID_ARGUMENT. */
export function parseModesDelta(body: unknown): ModesDelta {
  const d = body as Partial<ModesDelta> | null;
  const list = (v: unknown, name: string): string[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.length > MAX_EXEC_FILES) throw new ToolError("INVALID_ARGUMENT", `${name} must be an array of at most ${MAX_EXEC_FILES} paths.`);
    return v.map((p) => normalizeFilePath(p));
  };
  const links: Record<string, string | null> = {};
  if (d?.links !== undefined) {
    if (!d.links || typeof d.links !== "object" || Array.isArray(d.links)) throw new ToolError("INVALID_ARGUMENT", "links must be an object of path → target (or null).");
    const all = Object.entries(d.links);
    if (all.length > MAX_LINKS) throw new ToolError("INVALID_ARGUMENT", `links may name at most ${MAX_LINKS} paths.`);
    for (const [p, t] of all) {
      if (t !== null && !isLinkTarget(t)) throw new ToolError("INVALID_ARGUMENT", `The target of link ${p} must be 1-${MAX_LINK_TARGET_BYTES} bytes without NUL.`);
      links[normalizeFilePath(p)] = t;
    }
  }
  return { add: list(d?.add, "add"), remove: list(d?.remove, "remove"), ...(d?.links !== undefined ? { links } : {}) };
}

/** A symlink an update made (before null), removed (after null) or repointed: its targets. */
export interface LinkChange {
  path: string;
  before: string | null;
  after: string | null;
}

/** A file's execute bit an update set (before false) or cleared (after false). */
export interface ExecChange {
  path: string;
  before: boolean;
  after: boolean;
}

/** What an update tells the call's undo journal (lib/workspace/undo-journal.ts UndoJournal.linked, .moded). */
export interface LinkJournal {
  linked(changes: readonly LinkChange[]): void;
  moded(changes: readonly ExecChange[]): void;
}

export interface ModesUpdateOptions {
  /** The call's undo journal: told each link and execute bit the update changed (before and after), once the write landed. */
  undo?: LinkJournal | undefined;
  /** Applied only while each named link is still this (null: no link), checked in the same conditional write; else CONFLICT naming them (undo). */
  expectLinks?: Record<string, string | null>;
  /** Applied only while each named file's execute bit is still this, checked in the same conditional write; else CONFLICT naming them (undo). */
  expectExec?: Record<string, boolean>;
}

/**
 * Applies a delta (removals first, then additions; links set or dropped) and stores the list, merging
 * with concurrent updates. The one place the links table is written: link changes are journaled here.
 */
export async function updateModes(driver: StorageDriver, tenant: string, workspace: string, delta: ModesDelta, opts: ModesUpdateOptions = {}): Promise<ExecModes> {
  const key = modesKey(tenant, workspace);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const now = await readModes(driver, tenant, workspace);
    const exec = new Set(now.exec);
    const flipped = Object.entries(opts.expectExec ?? {}).filter(([p, x]) => exec.has(p) !== x).map(([p]) => p);
    if (flipped.length) throw new ToolError("CONFLICT", `The execute bit of ${flipped.slice(0, 10).join(", ")} changed meanwhile; nothing was written.`, { files: flipped });
    const wasExec = new Set(now.exec);
    for (const p of delta.remove) exec.delete(p);
    for (const p of delta.add) exec.add(p);
    if (exec.size > MAX_EXEC_FILES) throw new ToolError("INVALID_ARGUMENT", `A workspace records at most ${MAX_EXEC_FILES} executable files.`);
    const sorted = [...exec].sort();
    const was = now.links ?? {};
    const moved = Object.entries(opts.expectLinks ?? {}).filter(([p, t]) => (was[p] ?? null) !== t).map(([p]) => p);
    if (moved.length) throw new ToolError("CONFLICT", `The symlink${moved.length === 1 ? "" : "s"} ${moved.slice(0, 10).join(", ")} changed meanwhile; nothing was written.`, { links: moved });
    const links = { ...was };
    let linksChanged = false;
    for (const [p, t] of Object.entries(delta.links ?? {})) {
      if ((links[p] ?? null) === t) continue;
      linksChanged = true;
      if (t === null) delete links[p];
      else links[p] = t;
    }
    if (Object.keys(links).length > MAX_LINKS) throw new ToolError("INVALID_ARGUMENT", `A workspace records at most ${MAX_LINKS} symlinks.`);
    if (linksChanged) refuseLinksPastBytes(links);
    // Nothing changes (or nothing was ever recorded and nothing is to be): no write.
    if (!linksChanged && sorted.length === now.exec.length && sorted.every((p, i) => p === now.exec[i])) return now;
    try {
      const body: Stored = { v: 1, exec: sorted, ...(Object.keys(links).length ? { links: sortedLinks(links) } : {}) };
      const info = await driver.put(key, JSON.stringify(body), { ...(now.etag === null ? { ifNoneMatch: "*" as const } : { ifMatch: now.etag }), contentType: "application/json" });
      opts.undo?.moded([...new Set([...delta.remove, ...delta.add])].map((p) => ({ path: p, before: wasExec.has(p), after: exec.has(p) })).filter((m) => m.before !== m.after));
      opts.undo?.linked(Object.keys(delta.links ?? {}).map((p) => ({ path: p, before: was[p] ?? null, after: links[p] ?? null })).filter((l) => l.before !== l.after));
      return { etag: info.etag, exec: sorted, ...(body.links ? { links: body.links } : {}) };
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
      await new Promise((r) => setTimeout(r, 20 * 2 ** attempt * Math.random()));
    }
  }
  throw new ToolError("CONFLICT", "The workspace's file modes kept changing under concurrent commands; run the command again.");
}

/**
 * One delta applied so that it can be taken back: an import applies its execute bits and links (one
 * merged delta) before its layer switch, and takes them back when the switch fails (lib/layers/import.ts).
 * `build` makes the delta from the table as it is. `revert` applies the inverse: links put back as
 * they were, only while each is still what the delta set (else CONFLICT, nothing written); execute
 * bits the delta added removed, those it removed added back; a table the delta created and the
 * inverse leaves empty is deleted (unconditionally: R2 has no conditional delete; the window is the
 * milliseconds since the inverse's write).
 */
export async function updateModesRevertibly(driver: StorageDriver, tenant: string, workspace: string, build: (now: ExecModes) => ModesDelta): Promise<{ revert(): Promise<void> }> {
  const before = await readModes(driver, tenant, workspace);
  const delta = build(before);
  await updateModes(driver, tenant, workspace, delta);
  return {
    revert: async () => {
      const wasExec = new Set(before.exec);
      const links: Record<string, string | null> = {};
      const expectLinks: Record<string, string | null> = {};
      for (const [p, t] of Object.entries(delta.links ?? {})) {
        links[p] = before.links?.[p] ?? null;
        expectLinks[p] = t;
      }
      const inverse = { add: delta.remove.filter((p) => wasExec.has(p)), remove: delta.add.filter((p) => !wasExec.has(p)), links };
      const after = await updateModes(driver, tenant, workspace, inverse, { expectLinks });
      if (before.etag === null && after.etag !== null && after.exec.length === 0 && !after.links) await driver.delete([modesKey(tenant, workspace)]);
    },
  };
}

const sortedLinks = (links: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(links).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
