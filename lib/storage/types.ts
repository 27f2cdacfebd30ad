/**
 * The one interface every storage backend implements (R2 binding, S3 API, memory).
 * Drivers see keys only: never a tenant, workspace or path. ETags are unquoted strings.
 */
export interface ObjectInfo {
  key: string;
  size: number;
  /**
   * Unquoted entity tag; changes whenever the content changes. On S3 and R2 it is the MD5 of the
   * content, so writing the same bytes again gives the same etag (the memory driver changes it
   * on every write).
   */
  etag: string;
  modified: Date;
  contentType?: string;
  /** The session that wrote this version (PutOptions.writer), from a HEAD or GET (listings may omit it). */
  writer?: string;
}

export interface GetResult extends ObjectInfo {
  body: ReadableStream<Uint8Array>;
  /** The byte range actually returned (whole object when no range was asked). */
  range: { offset: number; length: number };
}

export interface PutOptions {
  /** Write only if the current object has this etag (lost-update guard). */
  ifMatch?: string;
  /** "*": write only if no object exists (create-only). */
  ifNoneMatch?: "*";
  contentType?: string;
  /** Byte length of a stream body; required by some backends to stream without buffering. */
  length?: number;
  /**
   * The session writing this version, kept with the object (R2 custom metadata, S3 x-amz-meta-writer)
   * and given back by head and get as `writer`: the session knows a version it wrote itself
   * (lib/workspace/session-files.ts) without a record of its own. A put without it clears it.
   */
  writer?: string;
}

export interface ListOptions {
  prefix: string;
  /** With "/", keys below the next "/" are rolled up into `prefixes`. */
  delimiter?: string;
  cursor?: string;
  /** Page size (default and max 1000). */
  limit?: number;
  /** Start listing after this key (lexicographic); ignored when a cursor is given. */
  startAfter?: string;
}

export interface ListResult {
  objects: ObjectInfo[];
  /** Common prefixes (with their trailing delimiter), when a delimiter was given. */
  prefixes: string[];
  /** Pass back to get the next page; absent on the last page. */
  cursor?: string;
}

export type PutBody = ReadableStream<Uint8Array> | Uint8Array | string;

/**
 * One key to delete. With `ifMatch`, the object is deleted only if its current etag is that one
 * (a missing object fails the condition too); without it, whatever is there is deleted.
 */
export interface DeleteTarget {
  key: string;
  ifMatch?: string;
}

export interface StorageDriver {
  readonly name: string;
  /**
   * true: a single put's etag is the MD5 hex of its body (R2; S3 single-part PUTs without
   * SSE-KMS). The Workspace then knows a write's etag before it lands, and writes what names it
   * (the undo record, the session record) beside the write instead of after it; it checks the
   * etag the put returns and repairs both if they differ. Wrappers pass it through.
   */
  readonly contentEtags?: boolean;
  head(key: string): Promise<ObjectInfo | null>;
  /** null when the object does not exist. A range past the end returns an empty body. */
  get(key: string, opts?: { range?: { offset: number; length?: number } }): Promise<GetResult | null>;
  /** Throws ConditionFailedError when ifMatch / ifNoneMatch does not hold. */
  put(key: string, body: PutBody, opts?: PutOptions): Promise<ObjectInfo>;
  /**
   * Deletes every target. A plain key (or a target without ifMatch) is deleted whatever it holds;
   * deleting a missing key that way is not an error. A target with ifMatch is deleted only if its
   * current etag is that one, atomically against every conditional writer. When some conditions
   * do not hold, every other target is still deleted, the refused ones are left exactly as they
   * were, and the call then throws ConditionFailedError listing them (`keys`).
   */
  delete(keys: string | readonly (string | DeleteTarget)[]): Promise<void>;
  list(opts: ListOptions): Promise<ListResult>;
}

/**
 * Every object below a prefix, in key order, with jumps past a key prefix (a directory a search
 * skips). A driver that knows most of its keys without listing them offers it: the merged view
 * of a layered workspace walks its manifest and lists only its upper layer (lib/layers/merge-list.ts).
 */
export interface KeyWalk {
  next(): Promise<ObjectInfo | null>;
  /**
   * Optional: the objects the walker knows without a listing (a manifest's entries) that come
   * before the next one `next` would have to list, as they are: no key nor object built for each
   * (a search walks 10,000 of them per call). [] when the next object is not one of those; what it
   * returns, `next` does not give again.
   */
  known?(): Promise<readonly KnownObject[]>;
  /** Drops every key that starts with `prefix` (from where the walk is). */
  skipPast(prefix: string): Promise<void>;
  /**
   * Optional, and only before anything else is asked of the walk: a name for everything the whole
   * walk will give, made from what it knows (a manifest's id) and its first listing (the request
   * the walk makes anyway): two walks with the same name give the same objects. null when it
   * cannot say (its listing spans more than one page).
   */
  version?(): Promise<string | null>;
  /** List requests made so far. */
  readonly lists: number;
}
/** An object a walker knows without listing it: its path below the files prefix, modified in ms. */
export interface KnownObject {
  readonly path: string;
  readonly etag: string;
  readonly size: number;
  readonly modified: number;
}
export interface WalkingDriver {
  walk(prefix: string): KeyWalk;
}
export const canWalk = (d: StorageDriver): d is StorageDriver & WalkingDriver => typeof (d as Partial<WalkingDriver>).walk === "function";

/** A conditional write or delete was refused (HTTP 412 / 409 from the backend). */
export class ConditionFailedError extends Error {
  /** Every refused key (a delete of many keys may refuse several); `key` is the first. */
  readonly keys: string[];
  constructor(readonly key: string, readonly condition: "ifMatch" | "ifNoneMatch", keys?: string[]) {
    super(`Condition ${condition} failed for ${keys && keys.length > 1 ? `${keys.length} keys, first ${key}` : key}`);
    this.name = "ConditionFailedError";
    this.keys = keys ?? [key];
  }
}

/** Throws ConditionFailedError(ifMatch) naming `refused`, if any (the end of a delete of many keys). */
export function throwIfRefused(refused: readonly string[]): void {
  if (refused.length > 0) throw new ConditionFailedError(refused[0]!, "ifMatch", [...refused]);
}

/** The targets of a delete call, each as { key, ifMatch? }. */
export const deleteTargets = (keys: string | readonly (string | DeleteTarget)[]): DeleteTarget[] =>
  (typeof keys === "string" ? [keys] : keys).map((k) => (typeof k === "string" ? { key: k } : k));

export const isConditionFailed = (e: unknown): e is ConditionFailedError => e instanceof ConditionFailedError;

/** Strip the quotes (and a weak W/ marker) from an HTTP entity tag. */
export const unquoteEtag = (etag: string): string => etag.replace(/^W\//, "").replace(/^"(.*)"$/, "$1");
export const quoteEtag = (etag: string): string => `"${etag}"`;

/** The most a key's list metadata may hold (characters, ASCII expected): Workers KV takes 1,024 bytes, serialized. */
export const KV_METADATA_MAX = 1000;

/**
 * Small key-value store (Workers KV, or an adapter over a StorageDriver on AWS). A key may carry
 * `metadata` (at most KV_METADATA_MAX characters), handed back by `list` with `metadata: true`
 * (`metadata`, beside `keys`: undefined for a key without), so a listing can sort its keys without a GET of each.
 */
export interface KeyValueStore {
  get(key: string): Promise<string | null>;
  put(key: string, value: string, opts?: { expirationTtl?: number; metadata?: string }): Promise<void>;
  delete(key: string): Promise<void>;
  list(opts: { prefix: string; cursor?: string; limit?: number; metadata?: boolean }): Promise<{ keys: string[]; metadata?: (string | undefined)[]; cursor?: string }>;
}
