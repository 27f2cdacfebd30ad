/**
 * Automatic sealing: a workspace whose upper layer has grown large (raw uploads, many small
 * writes: every file its own object) is folded into packs with no checkpoint record, so a bash
 * runner's cold start reads packs in a few range reads and a warm run lists a small upper layer.
 *
 * Off the call path first: the raw files route seals a growing upper layer in the background as
 * uploads come (background-seal.ts, after the answer), so a run seldom finds one to seal.
 *
 * When: the bash runner's conditional manifest (POST /v1/sync/manifest, lib/sync/manifest.ts)
 * lists the upper layer anyway; when that listing holds SEAL_MIN_UPPER objects or more, and at
 * least 1/SEAL_SHARE of the lower layer's entries, the upper layer is sealed before the answer is
 * made, at most SEAL_MAX_ON_CALL objects of it (the bound of what a call waits for). No tool call pays anything (read, write, edit keep their round trips): the listing is the
 * signal, and it is made only where it is made today.
 *
 * How: seal.ts (read each upper object once, READS at a time; pack; manifest = base ⊕ upper),
 * then the layer pointer switched If-Match the workspace record this request read, then each
 * sealed upper object deleted only in the version sealed (settleSealed). Etags are kept, so read
 * records, runners' caches and undo records stay valid. Two sealers (two runs starting at once):
 * one switch wins; the loser deletes its manifest and packs (dropSeal) and answers from the
 * winner's layer. Any failure leaves the workspace as it was, and the run goes on unsealed.
 *
 * The removal of the sealed upper objects (on R2 one tombstone PUT each: a conditional delete)
 * runs after the answer where the runtime has waitUntil (`background`): the run's cold fetch
 * reads packs meanwhile, since an upper object with its lower entry's etag is the same bytes
 * (layered-driver.ts stillLower). Objects left behind (the background work cut short) are not
 * counted toward the next seal; a later run's manifest removes them, conditionally, after its answer.
 */
import { afterAnswer, type WaitUntil } from "../shared/after-answer.js";
import { ToolError } from "../shared/errors.js";
import type { ObjectInfo } from "../storage/types.js";
import { lowerLayerOf, readMeta, switchBase, type LayerDeps, type LowerLayer, type MetaRecord } from "./open.js";
import { dropSeal, removeUpper, seal, settleSealed } from "./seal.js";
import { Whiteouts } from "./whiteout.js";
import { filesPrefix } from "../layout/paths.js";

/** Upper objects from which a workspace is sealed (about a quarter of a listing page)... */
export const SEAL_MIN_UPPER = 256;
/** ...when they are also at least 1/SEAL_SHARE of the lower layer (a seal rewrites the whole manifest). */
export const SEAL_SHARE = 8;

/**
 * At most this many upper objects are sealed on a call's path (a run's manifest): a seal reads
 * each, so a larger upper layer (10,000 raw uploads on a runtime with no after-the-answer work)
 * is sealed this many at a time, the rest served from the upper layer; the raw files route seals
 * in the background as uploads come (background-seal.ts), so a run rarely finds that many.
 */
export const SEAL_MAX_ON_CALL = 1024;

/** Whether an upper layer of `upper` objects over a lower layer of `lower` entries is sealed (`share`: SEAL_SHARE on a call's path). */
export function wantsSeal(upper: number, lower: number, share = SEAL_SHARE): boolean {
  return upper >= SEAL_MIN_UPPER && upper * share >= lower;
}

export interface AutoSealOptions {
  /** The lower layer may be up to this many times the upper one (default SEAL_SHARE). */
  share?: number;
  /** Seal at most this many upper objects (default SEAL_MAX_ON_CALL; Infinity: all). */
  max?: number;
}

export interface AutoSealed {
  /** The lower layer the workspace has now (the sealed one, or the winner's when another switch won). */
  layer: LowerLayer | null;
  /** Upper objects folded into packs by this call (0: another sealer won, or the seal failed). */
  sealed: number;
  /** Sealed objects kept in the upper layer (a writer changed them meanwhile). */
  kept: number;
}

const isConflict = (e: unknown) => e instanceof ToolError && e.code === "CONFLICT";

/**
 * Seals the upper layer `listed` (just listed, raw storage, resolved: Whiteouts.resolve) of workspace `ws` whose record is
 * `rec`. Returns null when the listing does not call for a seal; else the layer to answer from.
 */
export async function autoSeal(deps: LayerDeps, tenant: string, ws: string, rec: MetaRecord, lower: LowerLayer | null, listed: readonly ObjectInfo[], background?: WaitUntil, opts: AutoSealOptions = {}): Promise<AutoSealed | null> {
  // Sealed objects a seal has not removed yet (the lower entry has their etag: the same bytes) are not counted; they go, conditionally, after the answer.
  const fp = filesPrefix(tenant, ws);
  const whiteouts = Whiteouts.of(deps.storage, rec.meta);
  const settled = lower ? listed.filter((o) => !whiteouts.is(o) && lower.manifest.find(o.key.slice(fp.length))?.etag === o.etag) : [];
  const done = new Set(settled);
  const fresh = settled.length ? listed.filter((o) => !done.has(o)) : listed;
  if (!wantsSeal(fresh.length, lower?.manifest.entries.length ?? 0, opts.share)) {
    if (settled.length >= SEAL_MIN_UPPER) void afterAnswer(background, `removing ${ws}'s sealed upper objects`, () => removeUpper(deps.storage, settled.map((o) => ({ key: o.key, etag: o.etag }))).catch(() => {}), "skip");
    return null;
  }
  let s;
  try {
    const max = opts.max ?? SEAL_MAX_ON_CALL;
    // Bounded: the first `max` (the rest stays upper, a later seal takes it).
    s = await seal(deps, tenant, ws, rec.meta, fresh.length > max ? fresh.slice(0, max) : fresh);
  } catch (e) {
    console.warn(`auto-seal of ${ws}: the seal failed, the workspace stays as it was`, e);
    return { layer: lower, sealed: 0, kept: 0 };
  }
  let now: MetaRecord;
  try {
    now = await switchBase(deps.storage, tenant, ws, rec, s.manifest.id);
  } catch (e) {
    // Refused (CONFLICT): the switch did not happen, what this seal wrote is deleted. Another
    // error: the switch may have happened, nothing is deleted (GC's, past its grace period).
    if (isConflict(e)) await dropSeal(deps.storage, tenant, s);
    else console.warn(`auto-seal of ${ws}: the pointer switch failed`, e);
    const winner = await readMeta(deps.storage, tenant, ws);
    return { layer: winner ? await lowerLayerOf(deps, tenant, winner.meta) : null, sealed: 0, kept: 0 };
  }
  const layer = { base: s.manifest.id, seq: now.meta.seq ?? 0, manifest: s.manifest };
  const settle = () =>
    settleSealed(deps.storage, tenant, ws, s, Whiteouts.of(deps.storage, now.meta)).catch((e: unknown) => {
      // The switch stands; upper objects not deleted hold the lower entries' etags (the same bytes): removed by a later run.
      console.warn(`auto-seal of ${ws}: removing the sealed upper objects failed`, e);
      return s.sealed.map((x) => x.key);
    });
  if (background) {
    // After the answer (Workers: waitUntil): the run's fetch reads packs meanwhile (an upper object with the lower etag is the same bytes).
    void afterAnswer(background, `auto-seal of ${ws}`, settle, "skip");
    return { layer, sealed: s.sealed.length, kept: 0 };
  }
  const kept = await settle(); // without waitUntil the answer says how many stayed
  return { layer, sealed: s.sealed.length - kept.length, kept: kept.length };
}
