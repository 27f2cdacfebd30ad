/**
 * Directory entries read as bytes: the one way the runner lists a directory it does not own
 * (the workspace tree after a command, the disk sampler, the scratch wipe).
 *
 * A file name on Linux is any bytes but "/" and NUL; Node's string API decodes it as UTF-8
 * and replaces bytes that are not valid UTF-8 with U+FFFD, so such a name turned into a
 * string names ANOTHER file (lstat: ENOENT; rm: silently nothing). Here every entry keeps its
 * raw bytes; `name` is null when they are not valid UTF-8, and such an entry can only be
 * reached through `rawPath`, never through a string.
 */
import { readdirSync, type Dirent } from "node:fs";
import { isUtf8 } from "node:buffer";

export interface DirEntry {
  /** The name as the file system holds it. */
  raw: Buffer;
  /** The name as a string; null when it is not valid UTF-8 (then only `raw` reaches it). */
  name: string | null;
  /** Type as readdir reports it (no extra system call). */
  isDirectory: boolean;
  isFile: boolean;
}

/** Lists `dir` (a string or a raw path); throws what readdir throws. */
export function readEntries(dir: string | Buffer): DirEntry[] {
  const list = readdirSync(dir, { withFileTypes: true, encoding: "buffer" }) as Dirent<Buffer>[];
  return list.map((d) => ({
    raw: d.name,
    name: isUtf8(d.name) ? d.name.toString("utf8") : null,
    isDirectory: d.isDirectory(),
    isFile: d.isFile(),
  }));
}

/** `dir/name` as bytes: the path of an entry whose name may not be UTF-8. */
export const rawPath = (dir: string | Buffer, name: Buffer): Buffer =>
  Buffer.concat([typeof dir === "string" ? Buffer.from(dir, "utf8") : dir, Buffer.from("/"), name]);

/**
 * A name for people (results, logs): printable ASCII as it is, every other byte as \xNN
 * (a backslash too, so the text is unambiguous). Never a path to open: it contains a
 * backslash, which no workspace path may hold.
 */
export function shownName(raw: Buffer): string {
  let s = "";
  for (const b of raw) s += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, "0")}`;
  return s;
}
