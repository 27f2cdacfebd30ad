/** Builds AppDeps from a Workers environment (bindings and secrets). */
import type { AppDeps } from "./deps.js";
import { r2Driver } from "./storage/drivers/r2.js";
import { workersKeyValue } from "./storage/kv-workers.js";

export interface WorkersEnv {
  FILES: R2Bucket;
  KV: KVNamespace;
  TOOLSHED_ADMIN_TOKEN?: string;
  TOOLSHED_SYNC_SECRET?: string;
}

export function fromWorkersEnv(env: WorkersEnv): AppDeps {
  return {
    storage: r2Driver(env.FILES),
    kv: workersKeyValue(env.KV),
    ...(env.TOOLSHED_ADMIN_TOKEN ? { adminToken: env.TOOLSHED_ADMIN_TOKEN } : {}),
    ...(env.TOOLSHED_SYNC_SECRET ? { syncSecret: env.TOOLSHED_SYNC_SECRET } : {}),
  };
}
