/**
 * KeyValueStore over any StorageDriver (used on AWS, where there is no Workers KV).
 *
 * Each key is one object `<prefix><encoded key>` holding a JSON envelope `{ v: value, e?: expiresAtMs, m?: metadata }`
 * (the listing reads every envelope anyway, for expiry: the metadata comes with it).
 * An entry past its expiry reads as missing (get and list); it is not deleted, so the objects stay until
 * overwritten or removed by a bucket lifecycle rule.
 */
import type { KeyValueStore, StorageDriver } from "./types.js";

interface Envelope {
  v: string;
  /** Expiry, epoch milliseconds. */
  e?: number;
  /** The key's list metadata. */
  m?: string;
}

export interface StorageKeyValueOptions {
  /** Clock in epoch milliseconds (tests). */
  now?: () => number;
}

const SAFE = /^[A-Za-z0-9_-]$/;
const utf8 = new TextEncoder();

/**
 * Percent-encode every UTF-8 byte outside [A-Za-z0-9_-]: the object key has no "/" (flat), no "." or
 * ".." segments, no characters an S3 tool could mangle. Encoding is per character, so a key prefix
 * encodes to a prefix of the encoded key and `list({ prefix })` maps to an object-key prefix.
 */
export function encodeKvKey(key: string): string {
  let out = "";
  for (const ch of key) {
    if (SAFE.test(ch)) out += ch;
    else for (const b of utf8.encode(ch)) out += `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

export const decodeKvKey = (encoded: string): string => decodeURIComponent(encoded);

/** How many envelopes `list` reads at once to drop expired entries. */
const LIST_READ_CONCURRENCY = 32;

export function storageKeyValue(driver: StorageDriver, prefix: string, opts: StorageKeyValueOptions = {}): KeyValueStore {
  const now = opts.now ?? Date.now;
  const objectKey = (key: string) => prefix + encodeKvKey(key);

  /** The envelope of a live entry, or null when missing, expired or unreadable. */
  async function read(key: string): Promise<Envelope | null> {
    const got = await driver.get(key);
    if (!got) return null;
    let env: Envelope;
    try {
      env = JSON.parse(await new Response(got.body).text()) as Envelope;
    } catch {
      return null;
    }
    if (typeof env?.v !== "string") return null;
    return env.e !== undefined && env.e <= now() ? null : env;
  }

  return {
    async get(key) {
      return (await read(objectKey(key)))?.v ?? null;
    },

    async put(key, value, putOpts) {
      const ttl = putOpts?.expirationTtl;
      const env: Envelope = { v: value, ...(ttl === undefined ? {} : { e: now() + ttl * 1000 }), ...(putOpts?.metadata !== undefined ? { m: putOpts.metadata } : {}) };
      await driver.put(objectKey(key), JSON.stringify(env), { contentType: "application/json" });
    },

    async delete(key) {
      await driver.delete(objectKey(key));
    },

    // The cursor: the page's last object key, relative to the listing's prefix (never a whole storage key, which can name a tenant).
    async list({ prefix: keyPrefix, cursor, limit, metadata }) {
      const listed = objectKey(keyPrefix);
      const page = await driver.list({ prefix: listed, ...(cursor ? { startAfter: listed + cursor } : {}), ...(limit ? { limit } : {}) });
      const candidates = page.objects.map((o) => o.key);
      // Only entries with an expiry can be dead, but which ones have one is inside the object: read them.
      const envs: (Envelope | null)[] = [];
      for (let i = 0; i < candidates.length; i += LIST_READ_CONCURRENCY) {
        envs.push(...(await Promise.all(candidates.slice(i, i + LIST_READ_CONCURRENCY).map(read))));
      }
      const live = candidates.flatMap((k, i) => (envs[i] ? [{ key: decodeKvKey(k.slice(prefix.length)), m: envs[i]!.m }] : []));
      const last = candidates[candidates.length - 1];
      return { keys: live.map((l) => l.key), ...(metadata ? { metadata: live.map((l) => l.m) } : {}), ...(page.cursor && last !== undefined ? { cursor: last.slice(listed.length) } : {}) };
    },
  };
}
