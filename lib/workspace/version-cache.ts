/**
 * The last version of a file this isolate wrote or read whole, with its bytes (issue #11 §4: a
 * write or edit over the version the session just wrote or read needs no GET of it).
 *
 * What it may be used for, and why that is safe: ONLY as the version a change is conditional on.
 * A change tool on a known plain workspace record (lib/api/routes/known-workspace.ts, knownFiles) takes
 * its file from here instead of a GET, and its write is If-Match that etag: it lands only if the
 * file is still exactly that version, whose bytes these are (an etag names one content: R2 and S3
 * give the MD5, the memory driver a fresh tag per write). Anything the call concludes before its
 * write lands (NO_CHANGE, NOT_READ, old_string not found…) is not trusted: the call runs again on
 * storage (the route's rule), as does one whose write is refused. A stale entry therefore costs a
 * refused write and a second run, never a wrong answer; so there is no expiry, and writers that do
 * not go through a Workspace (bash write-back, import, restore) need not tell it.
 * Never used by a read: a read's answer is not checked by a write.
 * Also, as bytes only: a seal (lib/layers/seal.ts) packs an upper object whose listed etag is the
 * etag held here from these bytes instead of a GET; the etag names that content, and the seal
 * removes the upper object only in that version.
 *
 * Keyed by the storage key (tenant and workspace are in it, built by Workspace.key from the
 * authenticated tenant). Bounded by bytes, least recently used dropped first; files over
 * MAX_ENTRY_BYTES are not kept. Made by createApp (AppDeps.versions).
 */
import type { ObjectInfo } from "../storage/types.js";
import { IsolateMemory, type MemoryRegion } from "../shared/isolate-memory.js";

/** A version as a GET would have described it, and its whole content. */
export interface CachedVersion {
  info: Omit<ObjectInfo, "key">;
  bytes: Uint8Array;
}

/** Largest file kept. */
export const MAX_ENTRY_BYTES = 1024 * 1024;

export class VersionCache {
  private readonly byKey: MemoryRegion<CachedVersion>;

  /** A region of the isolate's one cache budget (lib/shared/isolate-memory.ts). */
  constructor(memory = new IsolateMemory()) {
    this.byKey = memory.region("versions");
  }

  /** The version of `key` this isolate last saw whole, if it still holds it. */
  peek(key: string): CachedVersion | undefined {
    return this.byKey.get(key);
  }

  /**
   * `key` is now at `info` with `bytes` (a write that landed, a whole read). Bytes that are not the
   * whole version (a length other than its size) or too large forget the key instead.
   */
  remember(key: string, info: Omit<ObjectInfo, "key">, bytes: Uint8Array | undefined): void {
    if (!bytes || bytes.length !== info.size || bytes.length > MAX_ENTRY_BYTES) return this.forget(key);
    // A view into a larger buffer would keep all of it alive: keep a copy of just these bytes.
    const own = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length ? bytes : bytes.slice();
    const { etag, size, modified, contentType, writer } = info;
    this.byKey.set(key, { info: { etag, size, modified, ...(contentType ? { contentType } : {}), ...(writer ? { writer } : {}) }, bytes: own }, own.length + 200);
  }

  forget(key: string): void {
    this.byKey.delete(key);
  }

  /** Bytes held (tests). */
  get bytes(): number {
    return this.byKey.bytes;
  }
}
