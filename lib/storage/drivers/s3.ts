/**
 * StorageDriver over the S3 API (AWS S3, R2's S3 endpoint, any S3-compatible server).
 *
 * The caller builds the S3Client (endpoint, region "auto" for R2, forcePathStyle, credentials).
 * For servers other than AWS S3, set `requestChecksumCalculation: "WHEN_REQUIRED"` on the client:
 * otherwise the SDK sends stream bodies as aws-chunked with a CRC32 trailer, which not every
 * S3-compatible server understands.
 */
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { ConditionFailedError, deleteTargets, quoteEtag, throwIfRefused, unquoteEtag, type DeleteTarget, type GetResult, type ObjectInfo, type PutBody, type StorageDriver } from "../types.js";

export interface S3DriverOptions {
  client: S3Client;
  bucket: string;
  /** false for a bucket whose etags are not the MD5 of the body (SSE-KMS encryption); default true (StorageDriver.contentEtags). */
  contentEtags?: boolean;
}

interface SdkError { name?: string; $metadata?: { httpStatusCode?: number } }
const statusOf = (e: unknown): number | undefined => (e as SdkError | null)?.$metadata?.httpStatusCode;
const nameOf = (e: unknown): string | undefined => (e as SdkError | null)?.name;
const isNotFound = (e: unknown) => statusOf(e) === 404 || nameOf(e) === "NoSuchKey" || nameOf(e) === "NotFound";

const emptyStream = (): ReadableStream<Uint8Array> => new ReadableStream({ start: (c) => c.close() });

/** Skip `skip` bytes, then pass `take` bytes and stop: for servers that ignore or widen a Range. */
function sliceStream(body: ReadableStream<Uint8Array>, skip: number, take: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let toSkip = skip;
  let left = take;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      let chunk = value;
      if (toSkip > 0) {
        const n = Math.min(toSkip, chunk.length);
        chunk = chunk.subarray(n);
        toSkip -= n;
      }
      if (chunk.length > left) chunk = chunk.subarray(0, left);
      left -= chunk.length;
      if (chunk.length > 0) controller.enqueue(chunk);
      if (left === 0) {
        controller.close();
        await reader.cancel();
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** "bytes 2-4/10" → { start: 2, end: 4, size: 10 } */
function parseContentRange(value: string | undefined): { start: number; end: number; size: number } | null {
  const m = value?.match(/^bytes (\d+)-(\d+)\/(\d+)$/);
  return m ? { start: Number(m[1]), end: Number(m[2]), size: Number(m[3]) } : null;
}

/**
 * A stream body the runtime's HTTP handler can send with a Content-Length, without buffering:
 * workerd: a FixedLengthStream (fetch would otherwise use chunked encoding); Node: a stream.Readable
 * (the SDK's Node handler does not accept web streams); elsewhere fetch takes the web stream as is.
 */
async function streamBody(stream: ReadableStream<Uint8Array>, length: number): Promise<unknown> {
  if (typeof FixedLengthStream === "function") {
    const fixed = new FixedLengthStream(length);
    void stream.pipeTo(fixed.writable).catch(() => {});
    return fixed.readable;
  }
  if (typeof process !== "undefined" && process.versions?.node) {
    const { Readable } = await import("node:stream");
    return Readable.fromWeb(stream as Parameters<typeof Readable.fromWeb>[0]);
  }
  return stream;
}

/** Body and byte length for PutObject. A stream of unknown length is read into memory (S3 needs a length). */
async function putBody(body: PutBody, length: number | undefined): Promise<{ body: unknown; size: number }> {
  if (typeof body === "string") {
    const bytes = new TextEncoder().encode(body);
    return { body: bytes, size: bytes.length };
  }
  if (body instanceof Uint8Array) return { body, size: body.length };
  if (length !== undefined) return { body: await streamBody(body, length), size: length };
  const bytes = new Uint8Array(await new Response(body).arrayBuffer());
  return { body: bytes, size: bytes.length };
}

export function s3Driver({ client, bucket, contentEtags = true }: S3DriverOptions): StorageDriver {
  const Bucket = bucket;

  async function head(key: string): Promise<ObjectInfo | null> {
    try {
      const r = await client.send(new HeadObjectCommand({ Bucket, Key: key }));
      return {
        key,
        size: r.ContentLength ?? 0,
        etag: unquoteEtag(r.ETag ?? ""),
        modified: r.LastModified ?? new Date(0),
        ...(r.ContentType ? { contentType: r.ContentType } : {}),
        ...(r.Metadata?.writer ? { writer: r.Metadata.writer } : {}),
      };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  /** Info plus an empty body: for zero-length ranges and ranges past the end. */
  async function emptyRange(key: string, offset: number): Promise<GetResult | null> {
    const info = await head(key);
    return info && { ...info, body: emptyStream(), range: { offset: Math.min(offset, info.size), length: 0 } };
  }

  async function deleteOneByOne(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 16) {
      await Promise.all(keys.slice(i, i + 16).map((Key) => client.send(new DeleteObjectCommand({ Bucket, Key }))));
    }
  }

  /**
   * Conditional deletes: one DeleteObject each with If-Match (AWS S3 enforces it since 2025-09;
   * 412 when the etag differs, 404 when the object is gone, 409 when a concurrent write won).
   * Returns the refused keys. One request per key: DeleteObjects' per-object ETag is newer and
   * less widely implemented by S3-compatible servers than the header.
   */
  async function deleteIfMatch(targets: DeleteTarget[]): Promise<string[]> {
    const refused: string[] = [];
    for (let i = 0; i < targets.length; i += 16) {
      await Promise.all(
        targets.slice(i, i + 16).map(async (t) => {
          try {
            await client.send(new DeleteObjectCommand({ Bucket, Key: t.key, IfMatch: quoteEtag(t.ifMatch!) }));
          } catch (e) {
            const status = statusOf(e);
            if (status === 412 || status === 409 || isNotFound(e)) refused.push(t.key);
            else throw e;
          }
        }),
      );
    }
    return refused;
  }

  return {
    name: "s3",
    ...(contentEtags ? { contentEtags: true } : {}),
    head,

    async get(key, opts) {
      const want = opts?.range;
      const offset = want?.offset ?? 0;
      if (want?.length === 0) return emptyRange(key, offset);
      const ranged = offset > 0 || want?.length !== undefined;
      const Range = ranged ? `bytes=${offset}-${want?.length === undefined ? "" : offset + want.length - 1}` : undefined;
      let r;
      try {
        r = await client.send(new GetObjectCommand({ Bucket, Key: key, ...(Range ? { Range } : {}) }));
      } catch (e) {
        if (isNotFound(e)) return null;
        if (statusOf(e) === 416 || nameOf(e) === "InvalidRange") return emptyRange(key, offset);
        throw e;
      }
      const sent = parseContentRange(r.ContentRange) ?? { start: 0, end: (r.ContentLength ?? 0) - 1, size: r.ContentLength ?? 0 };
      const size = sent.size;
      const start = Math.min(offset, size);
      const length = Math.max(0, Math.min(want?.length ?? Infinity, size - start));
      const sentLength = Math.max(0, sent.end - sent.start + 1);
      let body = r.Body ? (r.Body.transformToWebStream() as ReadableStream<Uint8Array>) : emptyStream();
      if (length === 0) {
        await body.cancel();
        body = emptyStream();
      } else if (sent.start > start || sent.start + sentLength < start + length) {
        await body.cancel();
        throw new Error(`S3 returned bytes ${sent.start}-${sent.end} of ${key} for a request of ${start}+${length}`);
      } else if (sent.start !== start || sentLength !== length) {
        // The server ignored or widened the range (HTTP allows it): cut the asked bytes out of what came.
        body = sliceStream(body, start - sent.start, length);
      }
      return {
        key,
        size,
        etag: unquoteEtag(r.ETag ?? ""),
        modified: r.LastModified ?? new Date(0),
        ...(r.ContentType ? { contentType: r.ContentType } : {}),
        ...(r.Metadata?.writer ? { writer: r.Metadata.writer } : {}),
        body,
        range: { offset: start, length },
      };
    },

    async put(key, body, opts = {}) {
      const { body: Body, size } = await putBody(body, opts.length);
      const conditional = opts.ifMatch !== undefined || opts.ifNoneMatch !== undefined;
      try {
        const r = await client.send(
          new PutObjectCommand({
            Bucket,
            Key: key,
            Body: Body as Uint8Array,
            ContentLength: size,
            ...(opts.contentType ? { ContentType: opts.contentType } : {}),
            ...(opts.writer ? { Metadata: { writer: opts.writer } } : {}),
            ...(opts.ifMatch !== undefined ? { IfMatch: quoteEtag(opts.ifMatch) } : {}),
            ...(opts.ifNoneMatch !== undefined ? { IfNoneMatch: opts.ifNoneMatch } : {}),
          }),
        );
        return {
          key,
          size,
          etag: unquoteEtag(r.ETag ?? ""),
          // PutObject does not return LastModified; the client clock is close enough.
          modified: new Date(),
          ...(opts.contentType ? { contentType: opts.contentType } : {}),
          ...(opts.writer ? { writer: opts.writer } : {}),
        };
      } catch (e) {
        const status = statusOf(e);
        // 412 PreconditionFailed; 409 ConditionalRequestConflict (a concurrent write won); 404 for If-Match on a missing key.
        const refused = status === 412 || status === 409 || (opts.ifMatch !== undefined && isNotFound(e));
        if (conditional && refused) throw new ConditionFailedError(key, opts.ifMatch !== undefined ? "ifMatch" : "ifNoneMatch");
        throw e;
      }
    },

    async delete(keys) {
      const targets = deleteTargets(keys);
      const all = targets.filter((t) => t.ifMatch === undefined).map((t) => t.key);
      for (let i = 0; i < all.length; i += 1000) {
        const batch = all.slice(i, i + 1000);
        if (batch.length === 1) {
          await client.send(new DeleteObjectCommand({ Bucket, Key: batch[0] }));
          continue;
        }
        let r;
        try {
          r = await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
        } catch (e) {
          // Some S3-compatible servers have no multi-object delete.
          if (statusOf(e) === 501 || nameOf(e) === "NotImplemented") {
            await deleteOneByOne(batch);
            continue;
          }
          throw e;
        }
        const failed = (r.Errors ?? []).filter((err) => err.Code !== "NoSuchKey");
        if (failed.length > 0) throw new Error(`S3 delete failed for ${failed.length} key(s), first ${failed[0]!.Key}: ${failed[0]!.Code} ${failed[0]!.Message ?? ""}`);
      }
      throwIfRefused(await deleteIfMatch(targets.filter((t) => t.ifMatch !== undefined)));
    },

    async list(opts) {
      const r = await client.send(
        new ListObjectsV2Command({
          Bucket,
          Prefix: opts.prefix,
          MaxKeys: Math.min(opts.limit ?? 1000, 1000),
          ...(opts.delimiter ? { Delimiter: opts.delimiter } : {}),
          ...(opts.cursor ? { ContinuationToken: opts.cursor } : opts.startAfter ? { StartAfter: opts.startAfter } : {}),
        }),
      );
      return {
        objects: (r.Contents ?? []).map((o) => ({
          key: o.Key ?? "",
          size: o.Size ?? 0,
          etag: unquoteEtag(o.ETag ?? ""),
          modified: o.LastModified ?? new Date(0),
        })),
        prefixes: (r.CommonPrefixes ?? []).flatMap((p) => (p.Prefix ? [p.Prefix] : [])),
        ...(r.IsTruncated && r.NextContinuationToken ? { cursor: r.NextContinuationToken } : {}),
      };
    },
  };
}
