/** In-memory StorageDriver for unit tests. Same semantics as the real drivers. */
import { md5Hex } from "../md5.js";
import { ConditionFailedError, deleteTargets, throwIfRefused, type ListOptions, type ListResult, type ObjectInfo, type PutBody, type StorageDriver } from "../types.js";

interface Entry { data: Uint8Array; info: ObjectInfo }

async function toBytes(body: PutBody): Promise<Uint8Array> {
  if (typeof body === "string") return new TextEncoder().encode(body);
  if (body instanceof Uint8Array) return body.slice();
  return new Uint8Array(await new Response(body).arrayBuffer());
}

export interface MemoryDriverOptions {
  /**
   * As S3 answers: an etag is the MD5 of the content (contentEtags: the same bytes, the same etag)
   * and a listing carries no content type. Default: a new etag on every write, content types listed.
   */
  s3Like?: boolean;
}

export function memoryDriver({ s3Like = false }: MemoryDriverOptions = {}): StorageDriver {
  const objects = new Map<string, Entry>();
  let version = 0;
  return {
    name: "memory",
    ...(s3Like ? { contentEtags: true } : {}),
    async head(key) {
      const e = objects.get(key);
      return e ? { ...e.info } : null;
    },
    async get(key, opts) {
      const e = objects.get(key);
      if (!e) return null;
      const offset = Math.min(opts?.range?.offset ?? 0, e.data.length);
      const end = opts?.range?.length === undefined ? e.data.length : Math.min(e.data.length, offset + opts.range.length);
      const slice = e.data.slice(offset, end);
      return { ...e.info, body: new Response(slice).body!, range: { offset, length: slice.length } };
    },
    async put(key, body, opts = {}) {
      const data = await toBytes(body);
      const current = objects.get(key);
      if (opts.ifNoneMatch === "*" && current) throw new ConditionFailedError(key, "ifNoneMatch");
      if (opts.ifMatch !== undefined && current?.info.etag !== opts.ifMatch) throw new ConditionFailedError(key, "ifMatch");
      version += 1;
      const info: ObjectInfo = { key, size: data.length, etag: s3Like ? md5Hex(data) : `m${version.toString(16)}-${data.length}`, modified: new Date(), ...(opts.contentType ? { contentType: opts.contentType } : {}), ...(opts.writer ? { writer: opts.writer } : {}) };
      objects.set(key, { data, info });
      return { ...info };
    },
    async delete(keys) {
      // Synchronous per key: a check and its delete cannot interleave with another call.
      const refused: string[] = [];
      for (const t of deleteTargets(keys)) {
        if (t.ifMatch !== undefined && objects.get(t.key)?.info.etag !== t.ifMatch) refused.push(t.key);
        else objects.delete(t.key);
      }
      throwIfRefused(refused);
    },
    async list(opts: ListOptions): Promise<ListResult> {
      const limit = Math.min(opts.limit ?? 1000, 1000);
      const after = opts.cursor ?? opts.startAfter ?? "";
      const keys = [...objects.keys()].filter((k) => k.startsWith(opts.prefix) && k > after).sort();
      const result: ListResult = { objects: [], prefixes: [] };
      const seen = new Set<string>();
      let last = "";
      for (const k of keys) {
        const rest = k.slice(opts.prefix.length);
        const cut = opts.delimiter ? rest.indexOf(opts.delimiter) : -1;
        const rolled = cut >= 0 ? opts.prefix + rest.slice(0, cut + opts.delimiter!.length) : null;
        if (rolled && seen.has(rolled)) {
          last = k;
          continue;
        }
        if (result.objects.length + result.prefixes.length >= limit) {
          result.cursor = last;
          break;
        }
        if (rolled) {
          seen.add(rolled);
          result.prefixes.push(rolled);
        } else {
          const { contentType: _, writer: __, ...bare } = objects.get(k)!.info;
          result.objects.push(s3Like ? bare : { ...objects.get(k)!.info });
        }
        last = k;
      }
      return result;
    },
  };
}
