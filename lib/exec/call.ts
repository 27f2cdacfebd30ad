/**
 * What the executors take of a tool call (a ToolContext, lib/contract/tool.ts, is one), declared
 * here because the executors sit below the tool contract: the app's pieces a run needs, the
 * workspace and its undo journal's call, the key's scopes, and where output streams.
 */
import type { KeyValueStore, StorageDriver } from "../storage/types.js";
import type { IsolateCache } from "../shared/isolate-cache.js";
import type { Executor, RunLimits } from "./types.js";
import type { Caller } from "../limits/store.js";
import { callerOf } from "../workspace/quota.js";
import type { LiveService } from "./live/service.js";
import type { HmacKeys } from "../shared/hmac-keys.js";

/** The app's pieces a run uses (AppDeps, lib/api/deps.ts, has them). */
export interface ExecDeps {
  storage: StorageDriver;
  kv: KeyValueStore;
  executor?: Executor;
  /** Signs the run's sync token; with syncUrl, where the runner reaches the sync API. */
  syncSecret?: string;
  syncUrl?: string;
  /** The isolate's imported HMAC keys (lib/shared/hmac-keys.ts): a run's token signed without importing the secret again; createApp makes one. */
  hmacKeys?: HmacKeys;
  runLimits?: Partial<RunLimits>;
  /** The isolate's cache of tenant settings (guard rails, git identity), read for a few seconds. */
  policies?: IsolateCache;
  /** Live sessions (keep_alive: docs/live-sessions.md): the coordinator and its accounting; createApp makes it from AppDeps.liveCoordinator. Absent: keep_alive is refused. */
  live?: LiveService;
}

/** A piece of a run's output as it streams to the caller. */
export interface OutputEvent {
  kind: "output";
  /** "merged": stdout and stderr in arrival order. */
  stream: "stdout" | "stderr" | "merged";
  text: string;
}

/** The call a command runs for. */
export interface ExecCall {
  deps: ExecDeps;
  /** The workspace; its undo journal names the call the run's write-back is journaled under. */
  ws: { readonly tenant: string; readonly id: string; readonly instance?: string | undefined; readonly undo?: { readonly session: string; readonly stamp: string; readonly tool: string } | undefined };
  session: string;
  /** The key's scopes, its id (a background run's sandbox time is billed to it: runRequest) and its own limits (concurrent_runs). */
  auth: { scopes: readonly string[]; key_id?: string; limits?: Caller["limits"]; maker_limits?: Caller["maker_limits"] };
  signal?: AbortSignal;
  /** Aborted once the call's key is revoked or expired (lib/run/key-watch.ts): a foreground run is killed then, whatever its door. */
  keyGone?: AbortSignal;
  progress?: (event: OutputEvent) => void;
  waitUntil?: (p: Promise<unknown>) => void;
}

/** The key a command runs for, as the limits count it (its own concurrent_runs beside the tenant's). */
export const runCaller = (ctx: Pick<ExecCall, "auth">): Caller => callerOf({ ...ctx.auth, key_id: ctx.auth.key_id ?? "" });
