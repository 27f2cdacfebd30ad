/**
 * A run never outlives the API key that started it (docs/tenant-keys.md, "How soon a revocation takes
 * effect"): the runner of a background task (its pump, about every second) and of a live sandbox's
 * command (every second once the command has run 4 s) asks `GET /v1/sync/run/kill`, and a task's output
 * chunks are answered `kill` too; the sync server answers `kill` once the key its token names as the
 * run's starter no longer stands (revoked, or past its expiry). The revocation enumerates nothing: the
 * runs learn it at the checks they make anyway. The key is asked through `keyAlive` (the app's
 * callerStands: the key's record cached per isolate 5 s, the expiry checked at every ask). Fetch-based:
 * bundles for Workers.
 */
import type { KeyAlive } from "./live-types.js";
import type { SyncClaims } from "./token.js";
import type { ExecResponse } from "./types.js";

/**
 * The key a run must end with: a background task's (its meter `m.k`; a streamed run's caller watches its
 * own key, lib/run/key-watch.ts) or a live sandbox's (`l.k`). None for a plain foreground run: its call
 * watches the key and sets the run's kill flag (lib/exec/runs.ts), so its checks read no key.
 */
export function startingKeyOf(claims: Pick<SyncClaims, "m" | "l">): string | undefined {
  if (claims.m && !claims.m.s && claims.m.k) return claims.m.k;
  return claims.l?.k || undefined;
}

/** Whether the run's starting key still stands (a run without one, or a look-up that failed: true; a key store's hiccup kills nothing). */
export async function startingKeyStands(claims: Pick<SyncClaims, "t" | "m" | "l">, keyAlive: KeyAlive | undefined): Promise<boolean> {
  const key = startingKeyOf(claims);
  if (!key || !keyAlive) return true;
  return keyAlive(claims.t, key).catch(() => true);
}

/**
 * A background task's result as it is stored: one killed once its key was gone says so
 * (`killed_by: "key_gone"`), so another key reading it with bash_output is told why. Asks the key only
 * for a killed run's result (the same cached look-up as the checks).
 */
export async function keyGoneMarked(res: ExecResponse, keyStands: () => Promise<boolean>): Promise<ExecResponse> {
  if (!res.ok || (res.result as { killed?: unknown } | null)?.killed !== true || (await keyStands())) return res;
  return { ok: true, result: { ...(res.result as object), killed_by: "key_gone" } };
}
