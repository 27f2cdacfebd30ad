/** What the sync server (server.ts, put-server.ts, stage-server.ts) is given by the app that mounts it. */
import type { KeyValueStore, StorageDriver } from "../storage/types.js";
import type { WorkspaceListener } from "../workspace/workspace.js";
import type { ManifestCache } from "../layers/manifest.js";
import type { KeyAlive, LiveHub } from "./live-types.js";
import type { LimitsStore } from "../limits/store.js";
import type { ExecResponse } from "./types.js";
import type { HmacKeys } from "../shared/hmac-keys.js";

/**
 * A detached run's end, as its result was stored (lib/sync/runs.ts PUT /result): told once per run,
 * by the request whose create-only write stored the result. Tenant, workspace and key come from the
 * verified sync token only (its `m` claim marks the run as metered); `result` is what the runner sent.
 */
export interface RunEnded {
  tenant: string;
  workspace: string;
  /** The key id of the call that started the run (the token's `m.k`). */
  key_id: string;
  result: ExecResponse;
  /** When the run was claimed, for an error result (a run's result reports its own time): epoch ms by this API's clock; absent otherwise, or when the claim is gone. */
  started_at?: number;
  /** When its result was stored, epoch ms by this API's clock. */
  ended_at: number;
}

export interface SyncServerDeps {
  driver: StorageDriver;
  /** Lower layers' manifests (lib/layers/): the runner sees the merged view, like every reader. */
  manifests?: ManifestCache;
  kv: KeyValueStore;
  /** HMAC secret shared with whoever mints tokens (the API itself). */
  secret: string;
  /** The app's imported HMAC keys (lib/shared/hmac-keys.ts): the secret's key imported once per isolate. Absent: imported at every sign and check. */
  hmacKeys?: HmacKeys;
  /** Raw storage for undo records and blobs (the batch routes get `driver` as the merged view). Default: driver. */
  storage?: StorageDriver;
  /** The tenants' limits: a write-back is charged to the storage quotas like any write (lib/limits/storage-quota.ts). Absent: not counted. */
  limits?: LimitsStore;
  /** Told about every write-back, like any other write (search indexes). */
  listeners?: WorkspaceListener[];
  /** Seal a large upper layer before a run's manifest is answered (lib/layers/auto-seal.ts). Default: true. */
  autoSeal?: boolean;
  /** The runtime's waitUntil (Workers): a seal's removal of the sealed upper objects runs after the answer. Without it, before. */
  background?: (p: Promise<unknown>) => void;
  /** Told of every metered run's end once (the app meters it: route "background run", docs/usage.md); absent: not told. */
  onRunEnded?: (end: RunEnded) => void;
  /** Live sandboxes' coordinator, as their runners reach it (/v1/sync/live/*: lib/sync/live-server.ts); absent: those routes answer UNAVAILABLE. */
  live?: LiveHub;
  /** Whether the key that started a run still stands: asked at a live sandbox's polls (lib/sync/live-server.ts) and at a background task's or live command's kill checks (starting-key.ts); absent: not asked. */
  keyAlive?: KeyAlive;
}
