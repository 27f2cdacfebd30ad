/**
 * AppDeps from the runtime's environment: what every runtime shares (secrets, the bash runner,
 * the search index, usage records), and the Workers bindings. lib/runtime/aws.ts does Lambda.
 */
import type { AppDeps } from "../api/deps.js";
import { executorFromEnv, type RunnerEnv } from "../exec/from-env.js";
import { heldUsageLog } from "../run/metering/usage.js";
import { durableUsageStore, type UsageObjects } from "../run/metering/durable-store.js";
import { heldUsageStore } from "../run/metering/held-store.js";
import { searchIndexer } from "../search/indexer.js";
import type { HoldOptions } from "../shared/held-batches.js";
import { r2Driver } from "../storage/drivers/r2.js";
import { workersKeyValue } from "../storage/kv-workers.js";
import { searchProviderFromEnv, type SearchEnv } from "../tools/web/search/from-env.js";
import { cloudflareFetcher } from "../tools/web/transport.js";
import { durableLimits } from "../limits/durable-object.js";
import { tracerFromEnv, type OtlpEnv } from "../shared/otlp.js";
import { durableLiveCoordinator, type LiveObjects } from "./live-coordinator.js";
import { LIVE_TIMINGS } from "../exec/live/service.js";
import { LIVE_MAX_LIFE_MS } from "../sync/live-types.js";
import { businessPartsOff, type BusinessEnv } from "./business.js";

export interface CommonEnv extends RunnerEnv, SearchEnv, OtlpEnv, BusinessEnv {
  TOOLSHED_ADMIN_TOKEN?: string;
  TOOLSHED_SYNC_SECRET?: string;
  /** Encrypts tenant secrets at rest (docs/secrets.md); without it secrets are off. The API's only: never the runner's. */
  TOOLSHED_SECRETS_KEY?: string;
  /** This API's public base URL, as the bash runner reaches it. */
  TOOLSHED_PUBLIC_URL?: string;
  /** Days audit entries are kept (lib/run/audit/retention.ts; default 365, 0: the workspace's life). */
  TOOLSHED_AUDIT_RETENTION_DAYS?: string;
  /** Longest life of a live sandbox, ms (docs/live-sessions.md; default and most LIVE_MAX_LIFE_MS, 14 min): a platform with a shorter invocation limit sets less. */
  TOOLSHED_LIVE_MAX_LIFE_MS?: string;
}

/** TOOLSHED_LIVE_MAX_LIFE_MS: a whole number of ms from 10 s up to LIVE_MAX_LIFE_MS; anything else leaves the default. */
function liveMaxLife(setting: string | undefined): number | undefined {
  const n = Number(setting);
  return setting && Number.isSafeInteger(n) && n >= 10_000 && n <= LIVE_MAX_LIFE_MS ? n : undefined;
}

/**
 * Everything but storage and KV. `hold`: how work after the answer is batched (the search index's
 * changes, the usage log's lines; default 1 s, as Workers' isolates serve many requests at once).
 */
export function commonDeps(env: CommonEnv, hold?: HoldOptions): Omit<AppDeps, "storage" | "kv"> {
  const executor = executorFromEnv(env);
  const search = searchProviderFromEnv(env);
  const tracer = tracerFromEnv(env, "toolshed-api");
  const off = businessPartsOff(env); // TOOLSHED_BUSINESS_OFF (lib/runtime/business.ts): parts not wired at all
  return {
    listeners: [searchIndexer(hold ? { hold } : {})],
    // one per app: held only where waitUntil waits for it (Workers, Lambda)
    ...(off.has("metering") ? {} : { onUsage: heldUsageLog(hold) }),
    ...(off.has("audit") ? { audit: false } : {}),
    ...(env.TOOLSHED_ADMIN_TOKEN ? { adminToken: env.TOOLSHED_ADMIN_TOKEN } : {}),
    ...(env.TOOLSHED_SYNC_SECRET ? { syncSecret: env.TOOLSHED_SYNC_SECRET } : {}),
    ...(env.TOOLSHED_SECRETS_KEY ? { secretsKey: env.TOOLSHED_SECRETS_KEY } : {}),
    ...(env.TOOLSHED_PUBLIC_URL ? { syncUrl: env.TOOLSHED_PUBLIC_URL } : {}),
    ...(executor ? { executor } : {}),
    ...(search ? { search } : {}),
    ...(tracer ? { tracer } : {}),
    ...(liveMaxLife(env.TOOLSHED_LIVE_MAX_LIFE_MS) ? { liveMaxLifeMs: liveMaxLife(env.TOOLSHED_LIVE_MAX_LIFE_MS)! } : {}),
  };
}

export interface WorkersEnv extends CommonEnv {
  FILES: R2Bucket;
  KV: KVNamespace;
  /** Tenants' limits and counters: one Durable Object per tenant (lib/limits/durable-object.ts); absent: nothing is limited. */
  LIMITS?: DurableObjectNamespace;
  /**
   * "cloudflare" only on a Worker deployed on Cloudflare (wrangler deploy --var TOOLSHED_WEB_EGRESS:cloudflare):
   * web_fetch, webhooks and the model endpoint then reach host names through the runtime's fetch,
   * which resolves them with Cloudflare's DNS on Cloudflare's network. Unset (wrangler dev, npm start,
   * tests): names are refused, as workerd would resolve them through this machine's hosts file (docs/ssrf.md).
   */
  TOOLSHED_WEB_EGRESS?: string;
  /** The usage store's Durable Objects (lib/runtime/usage-object.ts; wrangler.toml [[durable_objects.bindings]]). */
  USAGE?: DurableObjectNamespace;
  /** Live sessions' coordinators: one Durable Object per session (lib/runtime/live-object.ts); absent: keep_alive is refused. */
  LIVE?: DurableObjectNamespace;
}

export function fromWorkersEnv(env: WorkersEnv): AppDeps {
  const off = businessPartsOff(env);
  // The usage store: a Durable Object per tenant (docs/usage.md); without the binding, usage goes to the logs only.
  const usageStore = env.USAGE && !off.has("metering") ? durableUsageStore(env.USAGE as unknown as UsageObjects) : undefined;
  return {
    storage: r2Driver(env.FILES),
    kv: workersKeyValue(env.KV),
    ...commonDeps(env),
    ...(usageStore ? { usageStore, onUsage: heldUsageStore(usageStore) } : {}),
    ...(env.LIMITS && !off.has("limits") ? { limits: durableLimits(env.LIMITS) } : {}),
    ...(env.LIVE ? { liveCoordinator: durableLiveCoordinator(env.LIVE as unknown as LiveObjects, LIVE_TIMINGS) } : {}),
    ...(env.TOOLSHED_WEB_EGRESS === "cloudflare" ? { webFetch: { fetcher: cloudflareFetcher } } : {}),
  };
}
