/** KeyValueStore over a Workers KV namespace binding. */
import type { KeyValueStore } from "./types.js";

/** Workers KV refuses an expirationTtl below 60 seconds; shorter ones are raised to it. */
export const MIN_KV_TTL_SECONDS = 60;

export function workersKeyValue(ns: KVNamespace): KeyValueStore {
  return {
    get: (key) => ns.get(key, "text"),
    async put(key, value, opts) {
      const ttl = opts?.expirationTtl;
      await ns.put(key, value, ttl === undefined ? {} : { expirationTtl: Math.max(MIN_KV_TTL_SECONDS, Math.ceil(ttl)) });
    },
    delete: (key) => ns.delete(key),
    async list({ prefix, cursor, limit }) {
      const r = await ns.list({ prefix, ...(cursor ? { cursor } : {}), ...(limit ? { limit: Math.min(limit, 1000) } : {}) });
      return { keys: r.keys.map((k) => k.name), ...(r.list_complete ? {} : { cursor: r.cursor }) };
    },
  };
}
