/**
 * A whiteout: the upper layer's mark that a lower file (or explicit directory) is deleted. It is an
 * object at the file's own key (f/<path>), so it is atomic with every other writer of that path:
 * creating it is a create-only put (or If-Match the upper version it replaces), like any write.
 *
 * It must be recognisable in listings, where S3 returns no metadata: its body is a fixed 22-byte
 * string, so its size and ETag (the MD5 of that string on S3 and R2) say what it is; the memory
 * driver (whose etags are not MD5s) lists the content type, which is the second mark.
 * Consequence (documented): a file whose bytes are exactly WHITEOUT_BODY reads as deleted on S3/R2
 * in a layered workspace; the tools refuse to write it (lib/layers/layered-driver.ts).
 */
import type { ObjectInfo } from "../storage/types.js";

export const WHITEOUT_BODY = "\u0000toolshed:whiteout:v1\u0000";
export const WHITEOUT_SIZE = 22;
/** MD5 of WHITEOUT_BODY: what S3 and R2 report as its ETag. */
export const WHITEOUT_ETAG = "4a5b8580b3a2a2b580dded045e000ed0";
export const WHITEOUT_CONTENT_TYPE = "application/x-toolshed-whiteout";

export const isWhiteout = (o: Pick<ObjectInfo, "size" | "etag" | "contentType">): boolean =>
  o.size === WHITEOUT_SIZE && (o.etag === WHITEOUT_ETAG || o.contentType === WHITEOUT_CONTENT_TYPE);
