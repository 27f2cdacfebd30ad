/**
 * MD5 of content, as S3 and R2 report it as the ETag of a single-part object: the etag of a file
 * that lives in a pack is what its own object would have had. node:crypto works in Node and in
 * workerd (nodejs_compat); WebCrypto has no MD5 in Node.
 */
import { createHash, type Hash } from "node:crypto";

export const md5Hex = (bytes: Uint8Array): string => createHash("md5").update(bytes).digest("hex");

/** An incremental MD5 for streamed content. */
export function md5Stream(): { update(b: Uint8Array): void; hex(): string } {
  const h: Hash = createHash("md5");
  return { update: (b) => void h.update(b), hex: () => h.digest("hex") };
}
