/**
 * The benches' archives: text files as one tar.gz (what POST /v1/workspaces?id= and /import take),
 * shaped like `tar c` of a real tree: each directory an entry before what it holds, and every
 * tenth file executable (0755), so import and export are measured keeping modes and directories.
 */
import { gzipSync } from "node:zlib";
import { END_OF_ARCHIVE, padding, tarHeader } from "../lib/archive/tar-writer.ts";

const enc = new TextEncoder();

export function tarGz(files: { path: string; text: string }[]): Buffer {
  const parts: Uint8Array[] = [];
  const dirs = new Set<string>();
  files.forEach((f, i) => {
    const segments = f.path.split("/").slice(0, -1);
    for (let n = 1; n <= segments.length; n++) {
      const dir = segments.slice(0, n).join("/");
      if (dirs.has(dir)) continue;
      dirs.add(dir);
      parts.push(tarHeader({ name: `${dir}/`, size: 0, type: "5", mode: 0o755, mtime: 1_700_000_000 }));
    }
    const body = enc.encode(f.text);
    parts.push(tarHeader({ name: f.path, size: body.length, mode: i % 10 === 0 ? 0o755 : 0o644, mtime: 1_700_000_000 }), body, padding(body.length));
  });
  parts.push(END_OF_ARCHIVE());
  return gzipSync(Buffer.concat(parts));
}
