/**
 * An app on the real LIMITS Durable Object whose storage counts the packs written (PUTs, and their
 * bytes): what the quota bounds of imports and packed write-backs are pinned by.
 */
import { env } from "cloudflare:workers";
import { durableLimits } from "../../lib/limits/durable-object.js";
import type { AppDeps } from "../../lib/api/deps.js";
import type { StorageDriver } from "../../lib/storage/types.js";
import { countingStores } from "./counting-stores.js";
import { testApp } from "../helpers.js";

export function packCountingApp(deps: Partial<AppDeps> = {}) {
  const stores = countingStores({ steps: false });
  const packs = { puts: 0, bytes: 0 };
  const storage: StorageDriver = {
    ...stores.storage,
    put: (k, b, o) => {
      if (/\/packs?\//.test(k)) (packs.puts++, (packs.bytes += o?.length ?? 0));
      return stores.storage.put(k, b, o);
    },
  };
  const app = testApp({ storage, kv: stores.kv, limits: durableLimits(env.LIMITS), ...deps });
  const reset = () => void ((packs.puts = 0), (packs.bytes = 0));
  return { app, packs, reset };
}
