/**
 * The one rule for a path where a file is to be written: a path ending in "/" names a directory.
 * Beside the one path function (paths.ts), which it goes through.
 */
import { ToolError } from "../shared/errors.js";
import { normalizeFilePath, normalizePath } from "./paths.js";

/**
 * The path of a file to write or change (write, edit, multi_edit, insert, apply_patch, the batch upload):
 * normalizeFilePath, refused when it ends in "/" (or "/.", "/.."): that names a directory, and
 * normalizing alone wrote an empty file `w1` for `w1/`. Reads stay lenient (`read d/`); a raw
 * `PUT …/files/d/` makes a directory; copy and move put the source inside a `to` ending in "/".
 */
export function normalizeFileToWrite(input: unknown, field: string): string {
  const path = normalizeFilePath(input);
  const ending = /\/\.{0,2}$/.exec(input as string)?.[0];
  if (ending === undefined) return path;
  const dir = normalizePath(input), shown = (input as string).slice(0, 120);
  const how = `Give the file's path, such as '${dir}/name.txt' (its directories are made as it is written); to make an empty directory, run \`mkdir -p ${dir}\` with bash, or PUT /v1/workspaces/{ws}/files/${dir}/.`;
  throw new ToolError("INVALID_ARGUMENT", `${field} '${shown}' ends with '${ending}', which names a directory, not a file. ${how}`, { [field]: shown, path: dir });
}
