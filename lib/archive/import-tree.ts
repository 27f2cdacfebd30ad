/**
 * What an import keeps of a POSIX tree besides the files' bytes: the rule the import
 * (lib/layers/import.ts) follows.
 *  - Execute bits: a file entry whose mode has the owner's execute bit (git's 100755) is recorded
 *    in the workspace's list of executable files (lib/layout/modes.ts); a file entry without it is
 *    taken off the list (an import over an executable file makes it what the archive says). One
 *    delta per import, applied once the files are in place and merged there with concurrent
 *    updates (a bash run's chmod of other files stays).
 *  - Empty directories: a directory entry with nothing below it in the archive becomes a
 *    directory marker (lib/layout/paths.ts), the same thing bash's `mkdir` leaves. Directories with
 *    entries below them are implied by those entries and need none.
 *  - What is not kept (devices, fifos, unsafe names, hard links to no file of the archive) is skipped and named in `message`,
 *    the text the caller reads, grouped by reason; modification times are not kept (the time of
 *    a file is when it was written to the workspace: docs/workspace-fidelity.md says why).
 */
import { ancestorsOf } from "../layout/paths.js";
import type { ModesDelta } from "../layout/modes.js";
import { isExecutableMode } from "./entry.js";
import { counted } from "../shared/text.js";

export class ImportTree {
  /** path → executable, for every file entry admitted (the last entry of a path wins). */
  private readonly exec = new Map<string, boolean>();
  private readonly dirs = new Set<string>();

  file(path: string, mode: number | undefined): void {
    this.exec.set(path, isExecutableMode(mode));
  }

  /** A directory entry (canonical; "" is the import's own root and needs nothing). */
  directory(path: string): void {
    if (path !== "") this.dirs.add(path);
  }

  /**
   * The directories to keep as markers: those with no landed file and no other directory of the
   * archive below them. One that is (or lies below) a file or a link, of the archive or of the
   * workspace (`taken`: what else holds a path), cannot be made: it comes back in `refused` with the reason.
   */
  emptyDirs(landed: Iterable<string>, taken: (path: string) => "file" | "symlink" | undefined): { dirs: string[]; refused: { name: string; reason: string }[] } {
    const files = new Set(landed);
    const implied = new Set<string>();
    for (const p of files) for (const a of ancestorsOf(p)) implied.add(a);
    for (const d of this.dirs) for (const a of ancestorsOf(d)) implied.add(a);
    const dirs: string[] = [];
    const refused: { name: string; reason: string }[] = [];
    for (const d of [...this.dirs].sort()) {
      if (implied.has(d)) continue;
      const what = (p: string) => (files.has(p) ? "file" : taken(p));
      const held = [d, ...ancestorsOf(d)].find((p) => what(p) !== undefined);
      if (held === undefined) dirs.push(d);
      else refused.push({ name: `${d}/`, reason: held === d ? `${d} is a ${what(d)}, so the directory cannot be made` : `${held} is a ${what(held)}, so ${d} cannot be made below it` });
    }
    return { dirs, refused };
  }

  /** The modes delta of the files that landed; `gone`: files the import deleted (replace), whose entries go too. */
  modesDelta(landed: Iterable<string>, gone: Iterable<string> = []): ModesDelta {
    const add: string[] = [];
    const remove: string[] = [...gone];
    for (const p of landed) (this.exec.get(p) ? add : remove).push(p);
    return { add, remove };
  }

  /** How many of `landed` are executable. */
  executable(landed: Iterable<string>): number {
    let n = 0;
    for (const p of landed) if (this.exec.get(p)) n++;
    return n;
  }
}

export interface ImportSummary {
  format: string;
  mode: string;
  prefix: string;
  files: number;
  executable: number;
  empty_directories: number;
  symlinks: number;
  deleted: number;
  links_deleted: number;
  links_replaced: number;
  kept_count: number;
  skipped: { name: string; reason: string }[];
  skipped_count: number;
}

const LISTED_PER_REASON = 5;

/** What the import took out of the workspace or replaced there: "2 files and 1 symlink (a/old) deleted", "1 symlink of the workspace replaced by the archive's". */
function removedWords(r: ImportSummary, linksGone: readonly string[]): string {
  const links = r.links_deleted ? `${counted(r.links_deleted, "symlink")} (${linksGone.slice(0, 5).join(", ")}${r.links_deleted > 5 ? ", ..." : ""})` : "";
  const parts = [
    r.mode === "replace" ? `${[counted(r.deleted, "file"), links].filter(Boolean).join(" and ")} deleted` : [r.deleted ? `${counted(r.deleted, "file")} of the workspace replaced by links` : "", links ? `${links} of the workspace replaced by files or directories` : ""].filter(Boolean).join(", "),
    r.links_replaced ? `${counted(r.links_replaced, "symlink")} of the workspace replaced by the archive's` : "",
  ].filter(Boolean);
  return parts.length ? `: ${parts.join("; ")}` : "";
}

/** The report as text: what landed, what it deleted or replaced (`linksGone`: the workspace's links it took out), and every entry not kept, by reason (names listed, counts exact). */
export function importMessage(r: ImportSummary, linksGone: readonly string[] = []): string {
  const lines = [
    `Imported ${counted(r.files, "file")} (${r.executable} executable), ${counted(r.symlinks, "symlink")} and ${counted(r.empty_directories, "empty directory", "empty directories")} from a ${r.format} into ${r.prefix ? `${r.prefix}/` : "the workspace root"} (mode ${r.mode}${removedWords(r, linksGone)}).`,
  ];
  if (r.kept_count) lines.push(`${counted(r.kept_count, "file")} that changed during the import ${r.kept_count === 1 ? "was left as it is" : "were left as they are"} (listed in kept).`);
  if (r.skipped_count) {
    const byReason = new Map<string, string[]>();
    for (const s of r.skipped) byReason.set(s.reason, [...(byReason.get(s.reason) ?? []), s.name]);
    lines.push(`Not kept: ${r.skipped_count} entr${r.skipped_count === 1 ? "y" : "ies"} of the archive:`);
    for (const [reason, names] of byReason) {
      const shown = names.slice(0, LISTED_PER_REASON).map((n) => JSON.stringify(n)).join(", ");
      lines.push(`- ${names.length} × ${reason}: ${shown}${names.length > LISTED_PER_REASON ? `, … (${names.length - LISTED_PER_REASON} more in skipped)` : ""}`);
    }
    if (r.skipped_count > r.skipped.length) lines.push(`- and ${r.skipped_count - r.skipped.length} more not listed (the report lists the first ${r.skipped.length}).`);
  }
  lines.push("Modification times are not kept: a file's time is when it was written to the workspace.");
  return lines.join("\n");
}
