/** StorageDriver over a Cloudflare R2 bucket binding (Workers). */
import { ConditionFailedError, type GetResult, type ListOptions, type ListResult, type ObjectInfo, type PutBody, type PutOptions, type StorageDriver } from "../types.js";
import { listLive } from "./r2-list.js";
import { deleteConditionally, isTombstone, settledHead } from "./r2-tombstones.js";

/** The custom metadata key of PutOptions.writer. */
const WRITER = "writer";

const info = (o: R2Object): ObjectInfo => ({
  key: o.key,
  size: o.size,
  etag: o.etag,
  modified: o.uploaded,
  ...(o.httpMetadata?.contentType ? { contentType: o.httpMetadata.contentType } : {}),
  ...(o.customMetadata?.[WRITER] ? { writer: o.customMetadata[WRITER] } : {}),
});

/**
 * A stream body for R2 must have a known length; FixedLengthStream gives it one without buffering.
 * A stream of unknown length is read into memory (R2 refuses it otherwise).
 */
async function r2Body(body: PutBody, length: number | undefined): Promise<ReadableStream | Uint8Array | string> {
  if (!(body instanceof ReadableStream)) return body;
  if (length === undefined) return new Uint8Array(await new Response(body).arrayBuffer());
  const fixed = new FixedLengthStream(length);
  void body.pipeTo(fixed.writable).catch(() => {});
  return fixed.readable;
}

export function r2Driver(bucket: R2Bucket): StorageDriver {
  return {
    name: "r2",
    contentEtags: true,
    async head(key) {
      const o = await bucket.head(key);
      return o && !isTombstone(o) ? info(o) : null;
    },
    async get(key, opts): Promise<GetResult | null> {
      const range = opts?.range;
      // R2 throws on an unsatisfiable range (zero length, past the end, any range of an empty object): those read as an empty body.
      const empty = async (offset: number): Promise<GetResult | null> => {
        const raw = await bucket.head(key);
        const h = raw && !isTombstone(raw) ? raw : null;
        return h && { ...info(h), body: new ReadableStream({ start: (c) => c.close() }), range: { offset: Math.min(offset, h.size), length: 0 } };
      };
      if (range?.length === 0) return empty(range.offset);
      const ranged = range !== undefined && (range.offset > 0 || range.length !== undefined);
      let o: R2ObjectBody | R2Object | null;
      try {
        o = await bucket.get(key, ranged ? { range: range.length === undefined ? { offset: range.offset } : { offset: range.offset, length: range.length } } : {});
      } catch (e) {
        if (!ranged) throw e;
        const r = await empty(range.offset);
        if (!r || range.offset >= r.size) return r;
        throw e;
      }
      if (!o) return null;
      if (!("body" in o)) return null;
      if (isTombstone(o)) {
        await o.body.cancel().catch(() => {});
        return null;
      }
      const offset = range ? Math.min(range.offset, o.size) : 0;
      const length = range ? Math.max(0, Math.min(range.length ?? Infinity, o.size - offset)) : o.size;
      return { ...info(o), body: o.body, range: { offset, length } };
    },
    async put(key, body, opts: PutOptions = {}) {
      const httpMetadata = opts.contentType ? { httpMetadata: { contentType: opts.contentType } } : {};
      const customMetadata = opts.writer ? { customMetadata: { [WRITER]: opts.writer } } : {};
      const write = async (onlyIf?: R2Conditional) => {
        const o = await bucket.put(key, await r2Body(body, opts.length), { ...(onlyIf ? { onlyIf } : {}), ...httpMetadata, ...customMetadata });
        // R2 returns null when the onlyIf condition does not hold.
        if (!o) throw new ConditionFailedError(key, opts.ifMatch !== undefined ? "ifMatch" : "ifNoneMatch");
        return info(o);
      };
      if (opts.ifMatch !== undefined) return write({ etagMatches: opts.ifMatch });
      if (opts.ifNoneMatch !== "*") return write();
      // Create-only: "no object, or a tombstone" (a deleted key: r2-tombstones.ts). A stream can be
      // sent once, so look first; bytes in hand are tried first and looked at only when refused.
      const overTombstone = (o: R2Object | null): R2Conditional => (o && isTombstone(o) ? { etagMatches: o.etag } : { etagDoesNotMatch: "*" });
      if (body instanceof ReadableStream) return write(overTombstone(await settledHead(bucket, key)));
      try {
        return await write({ etagDoesNotMatch: "*" });
      } catch (e) {
        const current = await settledHead(bucket, key);
        if (current && !isTombstone(current)) throw e;
        return write(overTombstone(current));
      }
    },
    delete: (keys) => deleteConditionally(bucket, keys),
    list: (opts: ListOptions): Promise<ListResult> => listLive(bucket, opts, info),
  };
}
