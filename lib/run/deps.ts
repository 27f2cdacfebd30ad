/**
 * What the run path reads of the app's wiring, and hands on to every tool (ToolDeps and what the web
 * and task tools read besides). AppDeps (lib/api/deps.ts) extends it; nothing below the run path
 * sees AppDeps.
 */
import type { Tool } from "../contract/tool.js";
import type { ManifestCache } from "../layers/manifest.js";
import type { CallLeases } from "../limits/call-leases.js";
import type { TaskToolDeps } from "../tools/task/loop.js";
import type { KnownRecords } from "../workspace/records.js";
import type { UndoRetention } from "../workspace/undo-retention.js";
import type { VersionCache } from "../workspace/version-cache.js";
import type { WorkspaceListener } from "../workspace/workspace.js";
import type { UsageSink } from "./metering/usage.js";

export interface RunDeps extends TaskToolDeps {
  /** Told about every file change (search indexes). */
  listeners?: WorkspaceListener[];
  /** Undo retention runs on a workspace's 1st record write in an isolate, then every this-many-th (default 16; 0: never; lib/workspace/undo-retention.ts). */
  undoPruneEvery?: number;
  /** What undo retention keeps, per session and per workspace (default UNDO_RETENTION; tests set small bounds). */
  undoRetention?: Partial<UndoRetention>;
  /** One record per tool call that reached a tenant (success or failure), for billing (lib/run/metering/usage.ts: a plain function, or heldUsageLog). */
  onUsage?: UsageSink;
  /** false: no audit entry is written, by the run path or the route guard, and the audit routes answer UNAVAILABLE (the operator's TOOLSHED_BUSINESS_OFF: lib/runtime/business.ts); default on. */
  audit?: boolean;
  /** Manifests of lower layers by id, per isolate (immutable); createApp makes one when absent. */
  manifests?: ManifestCache;
  /** Session file records this isolate read or wrote, per isolate for a few seconds, used only to confirm (lib/workspace/records.ts); createApp makes one when absent. */
  knownRecords?: KnownRecords;
  /** Files' last versions this isolate wrote or read whole, per isolate, only ever a change's condition (lib/workspace/version-cache.ts); createApp makes one when absent. */
  versions?: VersionCache;
  /** The tools this app serves (createApp sets it): what a sub-call (the task tool's subagent) may call. */
  tools?: readonly Tool[];
  /** This isolate's pools of calls taken ahead from the limits (lib/limits/call-leases.ts); createApp makes one over `limits`. The route guard takes each request's call here, and a sub-call (a subagent's) its own. */
  callLeases?: CallLeases;
  /**
   * Whether a key still stands (not revoked; lib/api/auth/keys.ts keyStands, cached per isolate as a
   * presented key is): asked before each call of a subagent, which outlives its own call when it runs
   * in the background, and while any call or door's wait goes on (lib/run/key-watch.ts). createApp sets it.
   */
  callerStands?: (tenant: string, keyId: string) => Promise<boolean>;
  /** How often a call in progress asks callerStands again (lib/run/key-watch.ts; default KEY_WATCH_MS, 5 s); tests set a few ms. */
  keyWatchMs?: number;
}
