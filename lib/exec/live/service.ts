/**
 * What a live session needs of the app (ExecDeps.live, assembled by createApp): the coordinator,
 * the tenant's concurrent_runs (a live sandbox holds one slot for its life) and the app's record
 * of a sandbox's start and end (usage, audit: lib/api/live-events.ts). `accountEnds` is the one place
 * a generation's end is accounted for: its slot released, its usage and audit written, its marker deleted (markers.ts). Bundles for Workers.
 */
import type { LimitsStore } from "../../limits/store.js";
import { IsolateCache } from "../../shared/isolate-cache.js";
import type { WaitUntil } from "../../shared/after-answer.js";
import { LIVE_MAX_LIFE_MS, LIVE_POLL_MS, LIVE_STALE_MS } from "../../sync/live-types.js";
import type { StorageDriver } from "../../storage/types.js";
import type { LiveCoordinator, LiveEnd, LiveKey, LiveTimings } from "./types.js";
import { billOnce, unmarkLive } from "./markers.js";

/** A live runner not heard from this long after its start was asked for never came (its cold start included). */
export const LIVE_START_WAIT_MS = 60_000;

/** The coordinator's timings in production (tests shorten them). */
export const LIVE_TIMINGS: LiveTimings = { poll_ms: LIVE_POLL_MS, stale_ms: LIVE_STALE_MS, start_wait_ms: LIVE_START_WAIT_MS };

/** What started a live sandbox: the call's key. */
export interface LiveStart {
  generation: string;
  key_id: string;
  idle_ms: number;
  max_life_ms: number;
}

/**
 * The app's records of a sandbox's start and end. `later` is the waitUntil of the request that learned
 * of it (a call, a route, the runner's own POST .../live/ended): the records are written under it, so
 * workerd does not cancel them with that request (undefined only without one: Node without a context).
 */
export interface LiveEvents {
  started(key: LiveKey, start: LiveStart, later: WaitUntil | undefined): Promise<void>;
  ended(key: LiveKey, end: LiveEnd, later: WaitUntil | undefined): Promise<void>;
  /** The final write-back of a generation whose end was accounted before it (an end the API decided): its bytes, once (final-write-back.ts). */
  writtenBack(key: LiveKey, w: LiveWrittenBack, later: WaitUntil | undefined): Promise<void>;
}

/** What a final write-back billed on its own cost: its workspace bytes and the network bytes no command took. */
export interface LiveWrittenBack {
  generation: string;
  /** The API key that started the sandbox (its live token's claim). */
  key_id?: string;
  bytes_written?: number;
  net_bytes_in?: number;
  net_bytes_out?: number;
}

export interface LiveService {
  coordinator: LiveCoordinator;
  limits?: LimitsStore;
  events?: LiveEvents;
  /** Where each sandbox's marker is kept while it lives (markers.ts): a workspace's delete finds them there. */
  markers?: StorageDriver;
  /** How long a call waits for the session's previous call before BUSY, ms. */
  busy_wait_ms: number;
  /** Longest life of one live runner (LIVE_MAX_LIFE_MS; shorter in tests of the handover). */
  max_life_ms: number;
  /**
   * The sessions this isolate ran a live command of within a sandbox's maximum life (keyed as
   * liveSessionId): a call of one without keep_alive asks the coordinator at once, without reading the
   * saved shell's hint first (run-joining.ts runJoining). A stale entry costs that one request, then is forgotten.
   */
  joined: IsolateCache<true>;
}

/** One string per tenant × workspace × session: the memory coordinator's map key and the isolate's memo key. */
export const liveSessionId = (k: LiveKey) => JSON.stringify([k.tenant, k.workspace, k.session]);

/** Default: a call waits this long for the session's previous call, then answers BUSY. */
export const LIVE_BUSY_WAIT_MS = 10_000;

export function liveService(coordinator: LiveCoordinator, opts: Partial<Omit<LiveService, "coordinator">> = {}): LiveService {
  const max_life_ms = opts.max_life_ms ?? LIVE_MAX_LIFE_MS;
  return { coordinator, busy_wait_ms: LIVE_BUSY_WAIT_MS, max_life_ms, joined: new IsolateCache<true>(max_life_ms, 10_000), ...opts };
}

/**
 * A live sandbox's life: the maximum, cut at the expiry of the key that starts it. It never outlives
 * that key: past the expiry nobody could call it with that key, yet its processes would go on (with
 * its network) until the idle timeout or the maximum life (docs/tenant-keys.md).
 */
export const liveLifeMs = (maxLifeMs: number, keyExpiresAt: string | undefined, now = Date.now()): number =>
  keyExpiresAt === undefined ? maxLifeMs : Math.max(1, Math.min(maxLifeMs, Date.parse(keyExpiresAt) - now));

/** The live token's claim of the key that starts a sandbox: checked at its polls, it ends once the key is revoked or expired (an OAuth principal's stands: lib/api/auth/keys.ts keyStands). */
export const liveKeyClaim = (keyId: string | undefined): { k?: string } => (keyId ? { k: keyId } : {});

/** How long a live sandbox's concurrent_runs slot is leased: its whole life and a minute (it is released at its end). */
export const liveLeaseMs = (maxLifeMs: number) => maxLifeMs + 60_000;

/**
 * Accounts for generations that ended: their slot released, their usage and audit written (under `later`: LiveEvents),
 * their marker deleted. Each end's records are written once: by the accounting that creates its "end" mark (markers.ts
 * billOnce), here or at its runner's `ended` after a coordinator reset (final-write-back.ts). None for an end its
 * coordinator decided for a workspace's delete (a mark there would be a leftover; nothing else accounts such an end);
 * one for a forgotten end billed from its marker (`from_marker`) even there (made before the delete lists the prefix,
 * it goes with it; an acquirer or the tick may find the same end meanwhile). Answers the generations billed here.
 * Never throws.
 *
 * A mark that cannot be made (storage failing through billOnce's three tries) bills nothing here, and the end is left as
 * one nobody accounted: its marker and its slot's lease kept, so it is billed once later, by its runner's `ended` if it
 * comes, else from its marker by the first acquirer past concurrent_runs, the scheduled tick or its workspace's delete (forgotten-end.ts). Before (2026-12-02) it was
 * billed at once, and twice when its runner's `ended` then made the mark.
 */
export async function accountEnds(svc: LiveService, key: LiveKey, ends: readonly LiveEnd[], later: WaitUntil | undefined): Promise<string[]> {
  const billed: string[] = [];
  /** Whether the end is accounted (billed here, or its mark found: billed before); false when its mark could not be made. */
  const record = async (end: LiveEnd): Promise<boolean> => {
    const first = !svc.markers || (end.reason === "workspace_deleted" && !end.from_marker) || (await billOnce(svc.markers, key, end.generation, "end").catch((e: unknown) => (logged("end mark")(e), null)));
    if (first === null) return false;
    if (first) billed.push(end.generation);
    return true;
  };
  for (const end of ends) {
    const accounted = end.arrived && svc.events ? await record(end) : true;
    if (!accounted) continue; // left as unaccounted: its marker and its lease stay (above)
    await Promise.all([
      svc.markers ? unmarkLive(svc.markers, key, end.generation) : undefined,
      end.lease && svc.limits ? svc.limits.releaseRun(key.tenant, end.lease).catch(() => {}) : undefined, // missed: the lease ends on its own
      billed.includes(end.generation) ? svc.events!.ended(key, end, later).catch(logged("end")) : undefined,
    ]);
  }
  return billed;
}

const logged = (what: string) => (e: unknown) => console.error(`live sandbox ${what} not recorded`, e instanceof Error ? e.message : String(e));
