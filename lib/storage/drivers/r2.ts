/** StorageDriver over a Cloudflare R2 bucket binding (Workers). */
import { ConditionFailedError, type GetResult, type ListOptions, type ListResult, type ObjectInfo, type PutBody, type PutOptions, type StorageDriver } from "../types.js";

const info = (o: R2Object): ObjectInfo => ({
  key: o.key,
  size: o.size,
  etag: o.etag,
  modified: o.uploaded,
  ...(o.httpMetadata?.contentType ? { contentType: o.httpMetadata.contentType } : {}),
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
    async head(key) {
      const o = await bucket.head(key);
      return o ? info(o) : null;
    },
    async get(key, opts): Promise<GetResult | null> {
      const range = opts?.range;
      // R2 throws on an unsatisfiable range (zero length, past the end, any range of an empty object): those read as an empty body.
      const empty = async (offset: number): Promise<GetResult | null> => {
        const h = await bucket.head(key);
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
      const offset = range ? Math.min(range.offset, o.size) : 0;
      const length = range ? Math.max(0, Math.min(range.length ?? Infinity, o.size - offset)) : o.size;
      return { ...info(o), body: o.body, range: { offset, length } };
    },
    async put(key, body, opts: PutOptions = {}) {
      const onlyIf: R2Conditional = {};
      if (opts.ifMatch !== undefined) onlyIf.etagMatches = opts.ifMatch;
      if (opts.ifNoneMatch === "*") onlyIf.etagDoesNotMatch = "*";
      const hasCondition = opts.ifMatch !== undefined || opts.ifNoneMatch !== undefined;
      const o = await bucket.put(key, await r2Body(body, opts.length), {
        ...(hasCondition ? { onlyIf } : {}),
        ...(opts.contentType ? { httpMetadata: { contentType: opts.contentType } } : {}),
      });
      // R2 returns null when the onlyIf condition does not hold.
      if (!o) throw new ConditionFailedError(key, opts.ifMatch !== undefined ? "ifMatch" : "ifNoneMatch");
      return info(o);
    },
    async delete(keys) {
      const list = Array.isArray(keys) ? keys : [keys];
      for (let i = 0; i < list.length; i += 1000) await bucket.delete(list.slice(i, i + 1000));
    },
    async list(opts: ListOptions): Promise<ListResult> {
      const r = await bucket.list({
        prefix: opts.prefix,
        limit: Math.min(opts.limit ?? 1000, 1000),
        ...(opts.delimiter ? { delimiter: opts.delimiter } : {}),
        ...(opts.cursor ? { cursor: opts.cursor } : opts.startAfter ? { startAfter: opts.startAfter } : {}),
      });
      return {
        objects: r.objects.map(info),
        prefixes: r.delimitedPrefixes,
        ...(r.truncated ? { cursor: r.cursor } : {}),
      };
    },
  };
}
