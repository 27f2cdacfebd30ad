/** What every archive reader (tar, zip) yields: one entry, its kind, its declared size and its bytes. */
export type EntryKind = "file" | "directory" | "symlink" | "hardlink" | "device" | "fifo" | "other";

export interface ArchiveEntry {
  /** The name as the archive spells it (not yet a workspace path: see policy.ts). */
  name: string;
  kind: EntryKind;
  /** Declared size of the body in bytes (what the reader will hand out, exactly). */
  size: number;
  /** Permission bits (0o7777) as the archive declares them; absent when it declares none (a zip not made on Unix). */
  mode?: number;
  /** A symlink's target as the archive's header gives it (tar; a zip's link holds its target as its body); a hard link's: the archive name of the file it names. */
  linkTarget?: string;
  /** What the reader could not decode (a name not in UTF-8, an unsupported compression): the entry is skipped with this reason. */
  unreadable?: string;
  /** The whole body. Call at most one of bytes()/stream(), before asking for the next entry; a body not asked for is skipped. */
  bytes(): Promise<Uint8Array>;
  stream(): ReadableStream<Uint8Array>;
}

export type EntrySource = AsyncGenerator<ArchiveEntry, void, undefined>;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
/** A name's bytes as UTF-8 text, or null when they are not UTF-8. */
export function decodeName(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

const lossy = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
/** A name that is not UTF-8 as a report shows it: what reads as UTF-8, U+FFFD for each byte that does not (the entry is skipped, never stored by it). */
export const shownName = (bytes: Uint8Array): string => lossy.decode(bytes);

/** Whether an entry's mode makes it executable: the owner's execute bit, as git reads it (100755 vs 100644). */
export const isExecutableMode = (mode: number | undefined): boolean => mode !== undefined && (mode & 0o100) !== 0;
