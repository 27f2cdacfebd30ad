/** Everything the app needs from its runtime, passed in (no module-level state in lib/). */
import type { ArchiveLimits } from "../archive/limits.js";
import type { AuthBackoff } from "./auth/backoff.js";
import type { Executor, RunLimits } from "../exec/types.js";
import type { SearchLimits } from "../search/cpu-budget.js";
import type { ManifestCache } from "../layers/manifest.js";
import type { IsolateCache } from "../shared/isolate-cache.js";
import type { IsolateMemory } from "../shared/isolate-memory.js";
import type { VersionCache } from "../workspace/version-cache.js";
import type { SegmentCache } from "../search/segment-cache.js";
import type { KnownRecords } from "../workspace/records.js";
import type { KnownWorkspaces } from "./routes/known-workspace.js";
import type { AuthInfo } from "./auth/keys.js";
import type { UsageSink } from "../run/metering/usage.js";
import type { KeyValueStore, StorageDriver } from "../storage/types.js";
import type { WorkspaceListener } from "../workspace/workspace.js";
import type { WebFetchDeps } from "../tools/web/transport.js";
import type { SearchProvider } from "../tools/web/search/types.js";
import type { Tool } from "../contract/tool.js";
import type { Tracer } from "../shared/trace.js";

export interface UsageRecord {
  tenant: string;
  workspace: string;
  tool: string;
  ok: boolean;
  code?: string;
  ms: number;
  bytes_read: number;
  bytes_written: number;
}

export interface AppDeps {
  storage: StorageDriver;
  kv: KeyValueStore;
  /** Bearer token of the admin API; without it the admin API is off. */
  adminToken?: string;
  /** Runs bash / run_code; without it those tools answer UNAVAILABLE. */
  executor?: Executor;
  /** Told about every file change (search indexes). */
  listeners?: WorkspaceListener[];
  /** Undo retention runs on 1 in this many tool calls' record writes (default 16; 0: never; lib/run/undo/retention.ts). */
  undoPruneEvery?: number;
  /**
   * Per-client backoff after failed authentication. createApp makes one per app (per isolate)
   * when this is absent; pass one to share it or to change its limits.
   */
  authBackoff?: AuthBackoff;
  /** One record per tool call that reached a tenant (success or failure), for billing (lib/run/metering/usage.ts: a plain function, or heldUsageLog). */
  onUsage?: UsageSink;
  /** Secret for HMAC-signed, workspace-scoped tokens (sync endpoint of the bash runner). */
  syncSecret?: string;
  /** This API's base URL as the runner reaches it (for /v1/sync). */
  syncUrl?: string;
  /** Limits of every command (bash, run_code) where the runner's defaults should not apply, e.g. { disk_mb: 1024 }. */
  runLimits?: Partial<RunLimits>;
  /** Bounds of archive import/export where the defaults (lib/archive/limits.ts) should not apply. */
  archiveLimits?: Partial<ArchiveLimits>;
  /** What one search call may spend verifying text (bytes, milliseconds) where the defaults should not apply. */
  searchLimits?: Partial<SearchLimits>;
  /** Status progress (grep, glob, find, web_fetch: lib/contract/progress.ts): at most one event per intervalMs (default 250; tests set 0). */
  progress?: { intervalMs?: number };
  /** The transport of web_fetch, webhooks and the model endpoint (lib/tools/web/transport.ts; default: names refused). allowLoopback is for tests only. */
  webFetch?: WebFetchDeps;
  /**
   * Pending calls (ask_user, the approval gate): how long one waits (default 24 h) and the clock (tests);
   * askWaitMs: how long an ask_user call put to an MCP client (elicitation) holds its request for the
   * answer before it answers NEEDS_INPUT (default 45 s, under the SDK client's 60 s request timeout).
   */
  pending?: { ttlMs?: number; now?: () => number; askWaitMs?: number };
  /** The clock the sweep of old task records reads (tests move it). */
  task?: { now?: () => number };
  /** web_search's provider (lib/tools/web/search/); without it web_search answers UNAVAILABLE. */
  search?: SearchProvider;
  /** Tenant settings per isolate for a few seconds (lib/shared/isolate-cache.ts): the policy (keyed by tenant), a command's guard rails and git identity (keyed by their KV key); createApp makes one when absent. */
  policies?: IsolateCache;
  /** API keys (by hash) resolved per isolate for a few seconds (lib/api/auth/keys.ts); createApp makes one when absent. */
  apiKeys?: IsolateCache<AuthInfo | null>;
  /** Plain workspaces' records (meta.json) this isolate read, per isolate for a few seconds (lib/api/routes/known-workspace.ts); createApp makes one when absent. */
  knownWorkspaces?: KnownWorkspaces;
  /** Session file records this isolate read or wrote, per isolate for a few seconds, used only to confirm (lib/workspace/records.ts); createApp makes one when absent. */
  knownRecords?: KnownRecords;
  /** Each tenant's custom tools, built, per isolate for a few seconds (lib/tools/custom/tool.ts); createApp makes one when absent. */
  customTools?: IsolateCache<readonly Tool[]>;
  /** The isolate's one byte budget for manifests, segments and versions (lib/shared/isolate-memory.ts); createApp makes one (48 MB) when absent. */
  memory?: IsolateMemory;
  /** Manifests of lower layers by id, per isolate (immutable); createApp makes one when absent. */
  manifests?: ManifestCache;
  /** Index segment bytes grep read, per isolate (immutable; lib/search/segment-cache.ts); createApp makes one when absent. */
  segmentCache?: SegmentCache;
  /** Files' last versions this isolate wrote or read whole, per isolate, only ever a change's condition (lib/workspace/version-cache.ts); createApp makes one when absent. */
  versions?: VersionCache;
  /** Import writes packs and a manifest (lib/layers/) instead of one object per file (default true). */
  packImport?: boolean;
  /** The tools this app serves (createApp sets it): what a `task` subagent may call. */
  tools?: readonly Tool[];
  /** Traces (docs/tracing.md: lib/shared/otlp.ts tracerFromEnv); absent: tracing off, nothing wrapped. */
  tracer?: Tracer;
  /** The MCP endpoint: origins (besides the API's own) a browser may call it from (DNS rebinding guard). */
  mcp?: { allowedOrigins?: string[] };
}
