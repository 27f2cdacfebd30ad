/**
 * What the runner reads of a tree entry: whether its name is one the workspace can hold, the
 * fingerprint of its stat (a change shows in it), its execute bit. Pure.
 */
import { MAX_PATH_BYTES, MAX_SEGMENT_BYTES, normalizePath } from "../../lib/layout/paths.js";
import { isToolError } from "../../lib/shared/errors.js";

/**
 * isValidName for an ASCII path, in one pass without allocating: canonical (normalizePath would
 * return it unchanged) iff every segment is non-empty, not only dots, at most MAX_SEGMENT_BYTES,
 * the whole at most MAX_PATH_BYTES, with no control character and no backslash (NFC changes no
 * ASCII). null for a path with a non-ASCII character: that one takes the full check.
 */
function asciiName(rel: string): boolean | null {
  const n = rel.length;
  // UTF-8 never takes fewer bytes than UTF-16 code units: longer is too long in any encoding.
  if (n === 0 || n > MAX_PATH_BYTES) return false;
  let seg = 0;
  let dots = true;
  for (let i = 0; i < n; i++) {
    const c = rel.charCodeAt(i);
    if (c === 0x2f) {
      if (seg === 0 || dots) return false;
      seg = 0;
      dots = true;
      continue;
    }
    if (c >= 0x80) return null;
    if (c < 0x20 || c === 0x7f || c === 0x5c) return false;
    if (c !== 0x2e) dots = false;
    if (++seg > MAX_SEGMENT_BYTES) return false;
  }
  return !dots;
}

/** A path the workspace can hold as it is (canonical). ASCII paths skip the full check. */
export const isValidName = (rel: string): boolean => {
  const ascii = asciiName(rel);
  if (ascii !== null) return ascii;
  try {
    return normalizePath(rel) === rel && rel !== "";
  } catch {
    return false;
  }
};

/**
 * Why the workspace cannot hold `rel` as it is (isValidName said so), in the words the model reads
 * beside the name (an `invalid_name` skip's detail): normalizePath's reason, or the one thing it
 * changes silently, a name not in Unicode NFC (NFD, as macOS and some tools write them).
 */
export function nameProblem(rel: string): string {
  let canonical: string;
  try {
    canonical = normalizePath(rel);
  } catch (e) {
    const why = isToolError(e) ? e.details?.reason : undefined;
    return typeof why === "string" ? why : "the workspace cannot hold this name";
  }
  if (rel.normalize("NFC") !== rel) return `not in Unicode NFC (the workspace holds names composed, as ${canonical}): rename it to that spelling`;
  return `not a canonical path (the workspace would hold it as ${JSON.stringify(canonical)})`;
}

export const fingerprint = (st: { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string =>
  `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;

/** Whether a mode has the owner's execute bit (what git and the exec list record). */
export const isExec = (mode: bigint | number): boolean => (typeof mode === "number" ? (mode & 0o100) !== 0 : (mode & 0o100n) !== 0n);
