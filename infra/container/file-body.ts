/**
 * A changed file of the tree opened for upload: never through a link (O_NOFOLLOW), regular
 * files only, hashed while read (the slot keeps the hash: a later rewrite with equal bytes is
 * no change). Small files are read whole, larger ones streamed.
 */
import { createHash } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import { Readable, Transform } from "node:stream";

/** Files up to this size are read whole; larger ones are streamed. */
export const INLINE_BYTES = 4 * 1024 * 1024;

export interface FileBody {
  body: Uint8Array | ReadableStream<Uint8Array>;
  size: number;
  hash: () => string;
}

export async function openBody(abs: string): Promise<{ body: FileBody; close: () => Promise<void> }> {
  const fh = await fs.open(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
  const st = await fh.stat();
  if (!st.isFile()) {
    await fh.close();
    throw new Error("not a regular file");
  }
  const h = createHash("sha256");
  if (st.size <= INLINE_BYTES) {
    const buf = await fh.readFile();
    await fh.close();
    h.update(buf);
    const digest = h.digest("hex");
    return { body: { body: new Uint8Array(buf.buffer, buf.byteOffset, buf.length), size: buf.length, hash: () => digest }, close: async () => {} };
  }
  const tap = new Transform({
    transform(chunk: Buffer, _e, cb) {
      h.update(chunk);
      cb(null, chunk);
    },
  });
  const stream = fh.createReadStream({ autoClose: true }).pipe(tap);
  const web = Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array>;
  let digest: string | null = null;
  return { body: { body: web, size: st.size, hash: () => (digest ??= h.digest("hex")) }, close: () => fh.close().catch(() => {}) };
}

/** A small file's bytes and hash, or null when it is no longer small (then upload it alone, streamed). */
export async function readSmall(abs: string, max: number): Promise<{ bytes: Uint8Array; hash: string } | null> {
  const { body, close } = await openBody(abs);
  if (!(body.body instanceof Uint8Array) || body.size > max) {
    if (body.body instanceof ReadableStream) await body.body.cancel().catch(() => {});
    await close();
    return null;
  }
  return { bytes: body.body, hash: body.hash() };
}
