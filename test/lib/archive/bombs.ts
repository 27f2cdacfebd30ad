/**
 * Decompression bombs generated on the fly, never materialized: a gzip stream whose deflate data
 * is one full-flushed block of a tar header followed by the same full-flushed block of 1 MiB of
 * zeros repeated (a full flush resets the dictionary, so the block can be repeated verbatim).
 */
import { constants, deflateRawSync } from "node:zlib";
import { tarHeader } from "../../../lib/archive/tar-writer.js";
import { generated } from "./archives.js";

const flushed = (b: Uint8Array) => new Uint8Array(deflateRawSync(b, { finishFlush: constants.Z_FULL_FLUSH }));
const GZIP_HEADER = new Uint8Array([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

/**
 * A tar.gz that inflates to `totalBytes` (e.g. 10 GiB): entries of `entryBytes` zeros each,
 * headers declaring their sizes honestly. Returns the stream and a counter of compressed bytes pulled.
 */
export function gzipBomb(totalBytes: number, entryBytes: number) {
  const MiB = 1 << 20;
  const zeros = flushed(new Uint8Array(MiB));
  let produced = 0;
  let inEntry = 0;
  let entry = 0;
  let started = false;
  return generated(() => {
    if (!started) {
      started = true;
      return GZIP_HEADER;
    }
    if (produced >= totalBytes) return null;
    if (inEntry === 0) {
      inEntry = entryBytes;
      produced += 512;
      return flushed(tarHeader({ name: `bomb/${entry++}.bin`, size: entryBytes }));
    }
    inEntry -= MiB;
    produced += MiB;
    return zeros;
  });
}
