/**
 * A whiteout: the upper layer's mark that a lower file (or explicit directory) is deleted. It is an
 * object at the file's own key (f/<path>), so it is atomic with every other writer of that path:
 * creating it is a create-only put (or If-Match the upper version it replaces), like any write.
 *
 * No content is reserved (docs/whiteouts.md): a tenant may store any bytes, so what marks a
 * whiteout is something no tenant write can produce:
 * - its body is the workspace's own random mark (meta.json `whiteout`, 128 bits, made when the
 *   workspace is created or first needs one: open.ts), never shown to a tenant (registry.ts
 *   publicMeta; a whiteout's body is never read back). S3 and R2 list an object's size and ETag
 *   (its MD5), so a listing names a whiteout with no extra request;
 * - its content type is WHITEOUT_CONTENT_TYPE, which no tenant write keeps (tenantContentType):
 *   HEAD and GET give it, so does the memory driver's listing (its etags are not MD5s).
 * Whiteouts written before this scheme (v1: a fixed 22-byte body anyone could write) are still
 * honoured by that content type: a listed object with the v1 size and ETag is one HEAD away from
 * being told apart from a tenant's file holding those same bytes (resolve). They go at the next seal.
 */
import type { ListOptions, ListResult, ObjectInfo, PutOptions, StorageDriver } from "../storage/types.js";
import { md5Hex } from "../storage/md5.js";

export const WHITEOUT_CONTENT_TYPE = "application/x-toolshed-whiteout";

/** The v1 whiteout (before issue #25): recognised only with WHITEOUT_CONTENT_TYPE, never written any more. */
export const V1_WHITEOUT_BODY = "\u0000toolshed:whiteout:v1\u0000";
export const V1_WHITEOUT_SIZE = 22;
/** MD5 of V1_WHITEOUT_BODY: what S3 and R2 list as its ETag (and as that of a tenant file of those bytes). */
export const V1_WHITEOUT_ETAG = "4a5b8580b3a2a2b580dded045e000ed0";

const MARK_PREFIX = "\u0000toolshed:whiteout:v2:";
const MARK_HEX = /^[0-9a-f]{32}$/;
/** Every whiteout body of this scheme: MARK_PREFIX and the workspace's 32 hex digits. */
export const WHITEOUT_SIZE = MARK_PREFIX.length + 32;

/** HEAD requests at once while resolving a listing (a Worker's 6 connections). */
const HEADS = 6;

/** A new workspace's mark (meta.json `whiteout`): 128 random bits as hex. */
export function newWhiteoutMark(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** A record's mark if it has a valid one, else a new one (what a record is written with: open.ts). */
export const markFor = (meta: { whiteout?: string | undefined }): string => (typeof meta.whiteout === "string" && MARK_HEX.test(meta.whiteout) ? meta.whiteout : newWhiteoutMark());

/** The content type a tenant's file is stored with (lib/workspace/file-writes.ts): never the whiteouts' own. */
export const tenantContentType = (asked: string | undefined): string | undefined => (asked === WHITEOUT_CONTENT_TYPE ? undefined : asked);

/** Whether a HEAD or GET answer (content type known) is a whiteout: the content type only whiteouts carry. */
export const isWhiteoutHead = (o: Pick<ObjectInfo, "size" | "contentType">): boolean =>
  o.contentType === WHITEOUT_CONTENT_TYPE && (o.size === WHITEOUT_SIZE || o.size === V1_WHITEOUT_SIZE);

/**
 * One workspace's whiteouts: how its upper objects are told apart and how a deletion is written.
 * Made from the workspace record (Whiteouts.of); the one place that rule lives.
 */
export class Whiteouts {
  /** The body's MD5 (what a listing shows as a whiteout's ETag), made the first time an object of the mark's size is asked about. */
  private md5: string | null | undefined;

  private constructor(
    /** The workspace's body; null for a record made before marks (it gets one on its first whiteout: open.ts ensureWhiteoutMark). */
    readonly body: string | null,
    /** false: the storage's etags are not MD5s (memory, S3 with SSE-KMS): listed marks are checked by HEAD. */
    private readonly contentEtags: boolean,
  ) {}

  static of(storage: Pick<StorageDriver, "contentEtags">, meta: { whiteout?: string | undefined }): Whiteouts {
    const mark = typeof meta.whiteout === "string" && MARK_HEX.test(meta.whiteout) ? meta.whiteout : null;
    return new Whiteouts(mark === null ? null : MARK_PREFIX + mark, storage.contentEtags === true);
  }

  /**
   * The whiteout body's MD5, null without a mark. Made on first use: only an object of exactly
   * WHITEOUT_SIZE bytes needs it, and a workspace is opened on every live command's manifest
   * (node:crypto's MD5 in workerd was ~5% of the Worker's JavaScript per no-change live call).
   */
  private get etag(): string | null {
    if (this.md5 === undefined) this.md5 = this.body === null ? null : md5Hex(new TextEncoder().encode(this.body));
    return this.md5;
  }

  /**
   * Whether an object of the upper layer is a whiteout: from a HEAD or GET, or from a listing that
   * went through resolve/list (a raw S3 or R2 listing may hide a v1 whiteout or, for a record
   * read before the mark was made, a marked one).
   */
  is(o: Pick<ObjectInfo, "size" | "etag" | "contentType">): boolean {
    if (isWhiteoutHead(o)) return true;
    return o.size === WHITEOUT_SIZE && this.etag !== null && o.etag === this.etag;
  }

  /** A listed object its listing cannot classify (no content type listed): a HEAD tells. */
  private unsure(o: ObjectInfo): boolean {
    if (o.contentType !== undefined) return false;
    if (o.size === V1_WHITEOUT_SIZE) return o.etag === V1_WHITEOUT_ETAG;
    return o.size === WHITEOUT_SIZE && o.etag !== this.etag && (this.etag === null || !this.contentEtags);
  }

  /**
   * A listing of upper objects made exact for `is`: each object the listing cannot classify is
   * replaced by its HEAD (content type known; "" when it has none), or left out when gone since
   * (as a listing a moment later would). Only objects of exactly the v1 whiteout's bytes (or, on
   * storage without MD5 etags, a mark's size) cost a HEAD; the same array when there is none.
   */
  async resolve(storage: StorageDriver, objects: readonly ObjectInfo[]): Promise<ObjectInfo[]> {
    const unsure = objects.filter((o) => this.unsure(o));
    if (!unsure.length) return objects as ObjectInfo[];
    const heads = new Map<string, ObjectInfo | null>();
    for (let i = 0; i < unsure.length; i += HEADS) {
      await Promise.all(unsure.slice(i, i + HEADS).map(async (o) => void heads.set(o.key, await storage.head(o.key))));
    }
    const out: ObjectInfo[] = [];
    for (const o of objects) {
      if (!heads.has(o.key)) out.push(o);
      else {
        const h = heads.get(o.key);
        if (h) out.push({ ...h, contentType: h.contentType ?? "" });
      }
    }
    return out;
  }

  /** `storage.list`, resolved (see resolve). */
  async list(storage: StorageDriver, opts: ListOptions): Promise<ListResult> {
    const r = await storage.list(opts);
    const objects = await this.resolve(storage, r.objects);
    return objects === r.objects ? r : { ...r, objects };
  }

  /** Writes a whiteout at `key` under `cond`. The workspace must have its mark (open.ts ensureWhiteoutMark). */
  put(storage: StorageDriver, key: string, cond: PutOptions): Promise<ObjectInfo> {
    if (this.body === null) throw new Error("A whiteout needs the workspace's mark (open.ts ensureWhiteoutMark)");
    return storage.put(key, this.body, { ...cond, contentType: WHITEOUT_CONTENT_TYPE, length: WHITEOUT_SIZE });
  }
}
