/** Builds AppDeps from a Workers environment (bindings and secrets). */
import type { AppDeps } from "./deps.js";
import { logUsage } from "./metering/usage.js";
import { executorFromEnv, type RunnerEnv } from "./exec/from-env.js";
import { r2Driver } from "./storage/drivers/r2.js";
import { workersKeyValue } from "./storage/kv-workers.js";
import { searchIndexer } from "./search/indexer.js";

export interface WorkersEnv extends RunnerEnv {
  FILES: R2Bucket;
  KV: KVNamespace;
  TOOLSHED_ADMIN_TOKEN?: string;
  TOOLSHED_SYNC_SECRET?: string;
  /** This API's public base URL, as the bash runner reaches it. */
  TOOLSHED_PUBLIC_URL?: string;
}

export function fromWorkersEnv(env: WorkersEnv): AppDeps {
  const executor = executorFromEnv(env);
  return {
    storage: r2Driver(env.FILES),
    kv: workersKeyValue(env.KV),
    listeners: [searchIndexer()],
    ...(env.TOOLSHED_ADMIN_TOKEN ? { adminToken: env.TOOLSHED_ADMIN_TOKEN } : {}),
    ...(env.TOOLSHED_SYNC_SECRET ? { syncSecret: env.TOOLSHED_SYNC_SECRET } : {}),
    ...(env.TOOLSHED_PUBLIC_URL ? { syncUrl: env.TOOLSHED_PUBLIC_URL } : {}),
    ...(executor ? { executor } : {}),
    onUsage: logUsage,
  };
}
