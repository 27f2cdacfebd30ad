/** KeyValueStore over a Workers KV namespace binding. */
import type { KeyValueStore } from "./types.js";

/** Workers KV refuses an expirationTtl below 60 seconds; shorter ones are raised to it. */
export const MIN_KV_TTL_SECONDS = 60;

export function workersKeyValue(ns: KVNamespace): KeyValueStore {
  return {
    get: (key) => ns.get(key, "text"),
    async put(key, value, opts) {
      const ttl = opts?.expirationTtl;
      await ns.put(key, value, { ...(ttl === undefined ? {} : { expirationTtl: Math.max(MIN_KV_TTL_SECONDS, Math.ceil(ttl)) }), ...(opts?.metadata !== undefined ? { metadata: opts.metadata } : {}) });
    },
    delete: (key) => ns.delete(key),
    async list({ prefix, cursor, limit, metadata }) {
      const r = await ns.list<unknown>({ prefix, ...(cursor ? { cursor } : {}), ...(limit ? { limit: Math.min(limit, 1000) } : {}) });
      return {
        keys: r.keys.map((k) => k.name),
        ...(metadata ? { metadata: r.keys.map((k) => (typeof k.metadata === "string" ? k.metadata : undefined)) } : {}),
        ...(r.list_complete ? {} : { cursor: r.cursor }),
      };
    },
  };
}
