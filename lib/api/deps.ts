/**
 * Everything the app needs from its runtime, passed in (no module-level state in lib/). Assembled
 * at the top (lib/runtime, createApp) and read only by the API, the doors and the entries: each
 * layer below declares the part it reads, and AppDeps extends them: McpDeps (lib/doors/mcp-tools.ts) carries
 * RunDeps (lib/run/deps.ts: the run path's, ToolDeps of lib/contract/tool.ts, the web and task tools')
 * and CustomToolDeps (lib/tools/custom/tool.ts).
 */
import type { ArchiveLimits } from "../archive/limits.js";
import type { AuthBackoff } from "./auth/backoff.js";
import type { IsolateCache } from "../shared/isolate-cache.js";
import type { IsolateMemory } from "../shared/isolate-memory.js";
import type { KnownWorkspaces } from "./routes/known-workspace.js";
import type { AuthInfo } from "../contract/caller.js";
import type { McpDeps } from "../doors/mcp-tools.js";
import type { UsageStore } from "../run/metering/store.js";
import type { Tracer } from "../shared/trace.js";
import type { LiveCoordinator } from "../exec/live/types.js";
import type { JwksCache } from "./auth/jwks.js";
import type { Trust } from "./auth/oauth-config.js";

export interface AppDeps extends McpDeps {
  /** Bearer token of the admin API; without it the admin API is off. */
  adminToken?: string;
  /** Where usage is kept and queried (GET /v1/usage: lib/run/metering/store.ts); without it the usage routes answer UNAVAILABLE. */
  usageStore?: UsageStore;
  /**
   * Per-client backoff after failed authentication. createApp makes one per app (per isolate)
   * when this is absent; pass one to share it or to change its limits.
   */
  authBackoff?: AuthBackoff;
  /** Bounds of archive import/export where the defaults (lib/archive/limits.ts) should not apply. */
  archiveLimits?: Partial<ArchiveLimits>;
  /** API keys (by hash) resolved per isolate for a few seconds (lib/api/auth/keys.ts); createApp makes one when absent. */
  apiKeys?: IsolateCache<AuthInfo | null>;
  /** OAuth issuers' key sets (lib/api/auth/jwks.ts: 10 min, one refetch per 30 s on an unknown key id), per isolate; createApp makes one when absent. */
  oauthKeys?: JwksCache;
  /** Which tenants trust each OAuth issuer (lib/api/auth/oauth-config.ts), per isolate for a few seconds; createApp makes one when absent. */
  oauthTrusts?: IsolateCache<Trust[]>;
  /** Plain workspaces' records (meta.json) this isolate read, per isolate for a few seconds (lib/api/routes/known-workspace.ts); createApp makes one when absent. */
  knownWorkspaces?: KnownWorkspaces;
  /** The isolate's one byte budget for manifests, segments and versions (lib/shared/isolate-memory.ts); createApp makes one (48 MB) when absent. */
  memory?: IsolateMemory;
  /** Traces (docs/tracing.md: lib/shared/otlp.ts tracerFromEnv); absent: tracing off, nothing wrapped. */
  tracer?: Tracer;
  /**
   * Live sessions' coordinator (docs/live-sessions.md): Workers, a Durable Object per session
   * (lib/runtime/live-object.ts); Node/AWS, memory (lib/exec/live/memory.ts: one instance only).
   * createApp makes ExecDeps.live of it (with the limits and the app's usage and audit). Absent: keep_alive is refused.
   */
  liveCoordinator?: LiveCoordinator;
  /** Longest life of one live runner (default LIVE_MAX_LIFE_MS; tests of the handover shorten it). */
  liveMaxLifeMs?: number;
  /** How long a live call waits for the session's previous one before BUSY (default LIVE_BUSY_WAIT_MS). */
  liveBusyWaitMs?: number;
}
