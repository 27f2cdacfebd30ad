/** The benches' archives: text files as one tar.gz (what POST /v1/workspaces?id= and /import take). */
import { gzipSync } from "node:zlib";
import { END_OF_ARCHIVE, padding, tarHeader } from "../lib/archive/tar-writer.ts";

const enc = new TextEncoder();

export function tarGz(files: { path: string; text: string }[]): Buffer {
  const parts: Uint8Array[] = [];
  for (const f of files) {
    const body = enc.encode(f.text);
    parts.push(tarHeader({ name: f.path, size: body.length, mtime: 1_700_000_000 }), body, padding(body.length));
  }
  parts.push(END_OF_ARCHIVE());
  return gzipSync(Buffer.concat(parts));
}
