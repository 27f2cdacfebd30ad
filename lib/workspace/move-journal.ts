/**
 * The journal of a directory move: one small object under the workspace's internal area
 * (x/moves/<sha-256 of from and to>.json, built in lib/layout/paths.ts), written create-only before the
 * first copy and deleted (conditionally) when the move is done. While it exists, both trees may
 * hold copies of the same files: after a crash midway (the isolate died, the undo failed), or
 * when files changed during the move and stayed behind. ls and move touching either tree say so,
 * and a move with the same arguments finds it and finishes the work, per file and conditionally.
 */
import { ToolError } from "../shared/errors.js";
import { sha256Hex } from "../shared/hash.js";
import { isWithin, moveJournalKey, moveJournalPrefix } from "../layout/paths.js";
import { isConditionFailed } from "../storage/types.js";
import type { Workspace } from "./workspace.js";

export interface MoveJournal {
  v: 1;
  /** The source directory and the `to` argument, both normalized: the key of the journal. */
  from: string;
  to: string;
  /** The `to` argument as given (what the agent passes again). */
  toArg: string;
  /** The resolved target directory. */
  target: string;
  overwrite: boolean;
  /** ISO time the move started. */
  started: string;
  files: number;
}

export interface OpenJournal {
  journal: MoveJournal;
  key: string;
  etag: string;
}

/** Journals looked at per call (a workspace rarely has more than one unfinished move). */
const MAX_JOURNALS = 20;

async function journalKey(ws: Workspace, from: string, to: string): Promise<string> {
  return moveJournalKey(ws.tenant, ws.id, await sha256Hex(`${from}\u0000${to}`));
}

/** Every unfinished move of the workspace (one list request; a get per journal, usually none). */
export async function openJournals(ws: Workspace): Promise<OpenJournal[]> {
  const page = await ws.driver.list({ prefix: moveJournalPrefix(ws.tenant, ws.id), limit: MAX_JOURNALS });
  const found = await Promise.all(
    page.objects.map(async (o): Promise<OpenJournal | null> => {
      const r = await ws.driver.get(o.key);
      if (!r) return null;
      try {
        return { journal: JSON.parse(await new Response(r.body).text()) as MoveJournal, key: o.key, etag: r.etag };
      } catch {
        return null;
      }
    }),
  );
  return found.filter((j): j is OpenJournal => j !== null && j.journal.v === 1);
}

/** The journal of a move with these (normalized) arguments, if one is unfinished. */
export async function findJournal(journals: OpenJournal[], ws: Workspace, from: string, to: string): Promise<OpenJournal | null> {
  const key = await journalKey(ws, from, to);
  return journals.find((j) => j.key === key) ?? null;
}

/** Writes the journal before the first copy; CONFLICT when the same move is already running. */
export async function startJournal(ws: Workspace, j: Omit<MoveJournal, "v" | "started">): Promise<OpenJournal> {
  const journal: MoveJournal = { v: 1, ...j, started: new Date().toISOString() };
  const key = await journalKey(ws, j.from, j.to);
  try {
    const info = await ws.driver.put(key, JSON.stringify(journal), { ifNoneMatch: "*", contentType: "application/json" });
    return { journal, key, etag: info.etag };
  } catch (e) {
    if (!isConditionFailed(e)) throw e;
    throw new ToolError("CONFLICT", `Another move of ${j.from}/ to ${j.target}/ started just now and is running. Wait a moment, then call move again with the same arguments: it finishes whatever is left.`, { from: j.from, to: j.target });
  }
}

/** The move is done (or fully undone): drop its journal, only in the version this call saw. */
export async function closeJournal(ws: Workspace, j: OpenJournal): Promise<void> {
  await ws.driver.delete([{ key: j.key, ifMatch: j.etag }]).catch((e: unknown) => {
    if (!isConditionFailed(e)) throw e;
  });
}

const overlaps = (a: string, b: string) => isWithin(a, b) || isWithin(b, a);

/** Relative paths of the files below a directory, and its count of explicit directories (bounded together). */
async function relEntries(ws: Workspace, dir: string, max: number): Promise<{ files: Set<string>; dirs: number }> {
  const files = new Set<string>();
  let dirs = 0;
  for await (const e of ws.walkEntries(dir, max)) {
    if (e.type === "file") files.add(e.path.slice(dir.length + 1));
    else dirs++;
  }
  return { files, dirs };
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * What the agent must know about unfinished moves touching `paths`: one sentence each, with the
 * count of files that exist in both trees. A journal whose source tree is empty (no file, no
 * explicit directory) is finished work (only the journal was left behind) and is not mentioned.
 */
export async function unfinishedMoveNotes(ws: Workspace, journals: OpenJournal[], paths: string[], skip?: OpenJournal | null): Promise<string[]> {
  const notes: string[] = [];
  for (const { journal: j, key } of journals) {
    if (key === skip?.key || !paths.some((p) => overlaps(p, j.from) || overlaps(p, j.target))) continue;
    const source = await relEntries(ws, j.from, 2000);
    if (source.files.size === 0 && source.dirs === 0) continue;
    let both = 0;
    for await (const f of ws.walk(j.target, 10_000)) if (source.files.has(f.path.slice(j.target.length + 1))) both++;
    const left = source.dirs ? `${plural(source.files.size, "file", "files")} and ${plural(source.dirs, "directory", "directories")}` : `${source.files.size}`;
    notes.push(
      `A move of ${j.from}/ to ${j.target}/ started at ${j.started} did not finish (it was interrupted, or is still running): ${both} file${both === 1 ? " exists" : "s exist"} in both, ${left} still in ${j.from}/. ` +
        `Call move again with the same arguments (from: ${JSON.stringify(j.from)}, to: ${JSON.stringify(j.toArg)}) to finish it.`,
    );
  }
  return notes;
}
