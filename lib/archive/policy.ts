/**
 * The one rule for archive entries, used by every import (tar, tar.gz, zip; the import route and
 * POST /v1/workspaces). Each entry is first counted against the bounds (count, declared size,
 * total: the import stops with PAYLOAD_TOO_LARGE), then either admitted as a workspace path
 * under the prefix, or skipped with a reason the response reports:
 *   - a symbolic link is admitted as a path like a file (its target is data: docs/symlinks.md);
 *   - a hard link too: it lands as a copy of the file it names (`pathOf` its target: import.ts);
 *   - devices, fifos and unknown kinds are never written;
 *   - an absolute name, or one with a ".." segment, is refused outright (not clamped);
 *   - the rest goes through normalizeFilePath (lib/layout/paths.ts) joined to the prefix: whatever
 *     that function refuses (control characters, backslashes, over-long names) is skipped.
 * Directory entries are admitted as canonical directory paths under the prefix ("" for the
 * archive's root): import-tree.ts keeps the empty ones as directory markers.
 */
import { isToolError, ToolError } from "../shared/errors.js";
import { joinPath, normalizeFilePath, normalizePath } from "../layout/paths.js";
import type { ArchiveEntry } from "./entry.js";
import type { ArchiveLimits } from "./limits.js";

export type Admission = { path: string } | { skip: string } | { directory: string };

const KIND_REASON: Record<string, string> = {
  device: "device files are not imported",
  fifo: "fifos are not imported",
  other: "this kind of entry (sparse, volume label, ...) is not imported",
};

const utf8Length = (s: string) => new TextEncoder().encode(s).length;

export class EntryPolicy {
  entries = 0;
  totalBytes = 0;
  constructor(readonly limits: ArchiveLimits, readonly prefix: string) {}

  admit(entry: Pick<ArchiveEntry, "name" | "kind" | "size" | "unreadable">): Admission {
    const { limits } = this;
    if (++this.entries > limits.maxEntries) {
      throw new ToolError("PAYLOAD_TOO_LARGE", `The archive holds more than ${limits.maxEntries} entries. Split it into several imports (each can target its own prefix).`, { reason: "entries", max: limits.maxEntries });
    }
    const shown = entry.name.slice(0, 200);
    if (entry.size > limits.maxFileBytes) {
      throw new ToolError("PAYLOAD_TOO_LARGE", `Entry ${JSON.stringify(shown)} is ${entry.size} bytes; at most ${limits.maxFileBytes} per file. Upload it alone through PUT /v1/workspaces/{ws}/files/{path}.`, { reason: "file_size", name: shown, size: entry.size, max: limits.maxFileBytes });
    }
    this.totalBytes += entry.size;
    if (this.totalBytes > limits.maxTotalBytes) {
      throw new ToolError("PAYLOAD_TOO_LARGE", `The archive's entries add up to more than ${limits.maxTotalBytes} bytes. Split it into several imports.`, { reason: "total_size", max: limits.maxTotalBytes });
    }
    if (entry.unreadable) return { skip: entry.unreadable };
    const reason = KIND_REASON[entry.kind];
    if (reason) return { skip: reason };
    return this.place(entry.name, entry.kind === "directory");
  }

  /** The workspace path an archive name lands at (a hard link's target names a file by it), or null when no entry of that name lands. */
  pathOf(name: string): string | null {
    const a = this.place(name, false);
    return "path" in a ? a.path : null;
  }

  private place(name: string, directory: boolean): Admission {
    if (utf8Length(name) > this.limits.maxNameBytes) return { skip: `the name is longer than ${this.limits.maxNameBytes} bytes` };
    if (name.startsWith("/")) return { skip: "absolute names are not imported (use names relative to the archive's root)" };
    if (name.split("/").includes("..")) return { skip: "names with a '..' segment are not imported" };
    try {
      if (directory) return { directory: normalizePath(name) === "" ? this.prefix : normalizeFilePath(joinPath(this.prefix, name)) };
      if (normalizePath(name) === "") return { skip: "a file entry names the archive's root" };
      return { path: normalizeFilePath(joinPath(this.prefix, name)) };
    } catch (e) {
      if (isToolError(e)) return { skip: e.message };
      throw e;
    }
  }
}
