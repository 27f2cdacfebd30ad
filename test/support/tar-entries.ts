/** Every entry of a tar.gz stream in archive order, as our tar reader sees it: what an export (or a test's archive) holds. Node and workerd alike. */
import { ByteReader } from "../../lib/archive/byte-reader.js";
import { readTar } from "../../lib/archive/tar-reader.js";

export interface TarListing {
  /** As written in the archive ("./" and a directory's trailing "/" kept). */
  name: string;
  kind: string;
  mode: number | undefined;
  /** A symlink's target. */
  linkTarget: string | undefined;
  bytes: Uint8Array;
}

export async function readTarGz(body: ReadableStream<Uint8Array>): Promise<TarListing[]> {
  const out: TarListing[] = [];
  const reader = new ByteReader(body.pipeThrough(new DecompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>));
  for await (const e of readTar(reader, { maxMetaBytes: 65536 })) out.push({ name: e.name, kind: e.kind, mode: e.mode, linkTarget: e.linkTarget, bytes: await e.bytes() });
  return out;
}
