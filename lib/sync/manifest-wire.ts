/**
 * The conditional manifest's answer on the wire (lib/sync/manifest.ts), one form for its two ways
 * to the runner: the answer of `POST /v1/sync/manifest` (the runner asks), and the answer carried
 * with a live command (LiveCommand.manifest, lib/sync/live-types.ts: the runner sent its query with
 * the poll that received the command, and the API answered it right after handing the command over,
 * so the command needs no manifest request of its own). Bundles for Workers.
 *
 *   { v: 2, count, buckets, same: [bucket], files: [[path, etag, size]], modes?, layer?, claim? }
 *   { v: 2, paged: true, claim? }   too large for one answer: the runner pages through GET /v1/sync/manifest
 *
 * `claim`: the outcome of the run's claim when the request carried one (lib/sync/types.ts ClaimRider).
 */
import { ToolError } from "../shared/errors.js";
import { layerStateOf, type ManifestAnswer } from "./manifest.js";
import type { ClaimOutcome, ExecResponse, RunClaim, SyncEntry } from "./types.js";
import type { ExecModes } from "../layout/modes.js";

export interface ManifestAnswerBody {
  v: 2;
  paged?: true;
  count?: number;
  buckets?: number;
  same?: number[];
  files?: [string, string, number][];
  modes?: ExecModes | "same";
  layer?: unknown;
  claim?: ClaimOutcome;
}

/** The claim's outcome an answer carries; null when it carries none, or not one this client knows (the claim is then sent alone). */
export function claimOutcomeOf(body: unknown): ClaimOutcome | null {
  const c = (body as { claim?: unknown } | null)?.claim as Partial<{ claimed: unknown; kill: unknown; claim: unknown; result: unknown }> | undefined;
  if (typeof c !== "object" || c === null) return null;
  if (c.claimed === true && typeof c.kill === "boolean") return { claimed: true, kill: c.kill };
  if (c.claimed === false) return { claimed: false, claim: (c.claim ?? null) as RunClaim | null, result: (c.result ?? null) as ExecResponse | null };
  return null;
}

/** The answer as JSON; null (past the answer's bound): `{v: 2, paged: true}`. */
export function manifestAnswerBody(a: ManifestAnswer | null): ManifestAnswerBody {
  if (!a) return { v: 2, paged: true };
  return { v: 2, count: a.count, buckets: a.buckets, same: a.same, files: a.files.map((e) => [e.path, e.etag, e.size]), ...(a.modes !== undefined ? { modes: a.modes } : {}), ...(a.layer ? { layer: a.layer } : {}) };
}

/**
 * An answer from the wire; null when it is not one this client can use (another version, paged).
 * Throws INTERNAL when it is malformed. The entries' and buckets' consistency with the query is
 * checked where it is applied (ManifestView.apply).
 */
export function manifestAnswerOf(body: unknown): ManifestAnswer | null {
  const b = body as ManifestAnswerBody | null;
  if (typeof b !== "object" || b === null || b.v !== 2 || b.paged) return null;
  const malformed = () => new ToolError("INTERNAL", "Workspace sync failed (manifest): malformed answer.");
  if (!Array.isArray(b.files) || !Array.isArray(b.same) || !Number.isSafeInteger(b.count) || !Number.isSafeInteger(b.buckets)) throw malformed();
  const files: SyncEntry[] = b.files.map((f) => {
    if (!Array.isArray(f) || typeof f[0] !== "string" || typeof f[1] !== "string" || typeof f[2] !== "number") throw malformed();
    return { path: f[0], etag: f[1], size: f[2] };
  });
  const layer = b.layer === undefined ? null : layerStateOf(b.layer); // a malformed one is only a lost shortcut
  return { count: b.count!, buckets: b.buckets!, same: b.same, files, ...(b.modes !== undefined ? { modes: b.modes } : {}), ...(layer ? { layer } : {}) };
}
