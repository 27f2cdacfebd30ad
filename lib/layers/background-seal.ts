/**
 * Sealing off the call path (#31 §2): raw uploads (PUT /files/{path}, one object each) are folded
 * into packs in the background as they come, after the answers, so the first `bash` after many
 * uploads finds a small upper layer instead of sealing thousands of objects on its own path
 * (29.8 s after 10,000 uploads when a run's manifest sealed them all).
 *
 * When: the raw files route tells the sealer of every file it created (`created`). On the 1st,
 * the 65th, … (every CHECK_EVERY-th) create per workspace in this isolate, and only where the
 * runtime has after-the-answer work (Workers: waitUntil), the sealer lists the upper layer (one
 * LIST per 1,000 objects; small while sealing keeps up) and seals it when it holds SEAL_MIN_UPPER
 * objects or more and at least 1/BACKGROUND_SHARE of the lower layer (auto-seal.ts, the same
 * conditional switch and conditional removal as a run's seal). One seal per workspace at a time
 * in an isolate; two isolates sealing at once: one switch wins, the other drops its packs.
 *
 * What it costs: each seal reads the objects it folds (once), writes them in packs (one PUT per
 * 8 MiB), writes the whole manifest again (~200 bytes per file of the workspace), and removes the
 * sealed upper objects (one conditional delete each). For 10,000 uploads in a row: about 40 seals
 * of ~256 objects, 40 manifests of up to 2 MB (the old ones are GC's), and the reads and deletes
 * a single seal at the first run would have done anyway. A check that seals nothing is one LIST.
 * On a runtime without after-the-answer work (Lambda) nothing is sealed here: a run's manifest
 * seals at most SEAL_MAX_ON_CALL objects on its path (auto-seal.ts), the rest a later run.
 */
import { afterAnswer, type WaitUntil } from "../shared/after-answer.js";
import { autoSeal, SEAL_MIN_UPPER, type AutoSealed } from "./auto-seal.js";
import { lowerLayerOf, readMeta, type LayerDeps } from "./open.js";
import { listUpper } from "./seal.js";
import { Whiteouts } from "./whiteout.js";

/** Creates per workspace between two checks of its upper layer. */
export const CHECK_EVERY = 64;
/** The lower layer may be up to this many times the upper one for a background seal (a run's path: SEAL_SHARE, 8). */
export const BACKGROUND_SHARE = 64;
/** Objects one background seal folds (it runs within the runtime's after-the-answer time). */
export const BACKGROUND_MAX = 4096;

/** Workspaces the sealer keeps counts for; past it the counts start again (a missed check is taken by the next). */
const MAX_TRACKED = 10_000;

export class BackgroundSealer {
  private readonly creates = new Map<string, number>();
  /** Workspaces with a seal scheduled or running in this isolate. */
  private readonly running = new Set<string>();

  constructor(private readonly deps: LayerDeps) {}

  /** A call created a file in `tenant`/`ws` and answered; `background` is the runtime's waitUntil (none: nothing is done). */
  created(tenant: string, ws: string, background: WaitUntil | undefined): void {
    if (!background) return;
    const k = `${tenant}/${ws}`;
    if (this.creates.size >= MAX_TRACKED && !this.creates.has(k)) this.creates.clear();
    const n = (this.creates.get(k) ?? 0) + 1;
    this.creates.set(k, n);
    if (n % CHECK_EVERY !== 1 || this.running.has(k)) return;
    this.running.add(k); // now: the creates that follow in this isolate see it scheduled
    const sealed = () =>
      sealIfLarge(this.deps, tenant, ws, background)
        .catch((e: unknown) => console.warn(`background seal of ${ws}: failed, the workspace stays as it was`, e))
        .finally(() => this.running.delete(k));
    void afterAnswer(background, `background seal of ${ws}`, sealed, "skip");
  }
}

/** Seals the upper layer of `tenant`/`ws` when it is large (see above); null when it is not (or the workspace is gone). */
export async function sealIfLarge(deps: LayerDeps, tenant: string, ws: string, background?: WaitUntil): Promise<AutoSealed | null> {
  const rec = await readMeta(deps.storage, tenant, ws);
  if (!rec) return null;
  const whiteouts = Whiteouts.of(deps.storage, rec.meta);
  const listed = await whiteouts.resolve(deps.storage, await listUpper(deps.storage, tenant, ws));
  if (listed.length < SEAL_MIN_UPPER) return null;
  const lower = await lowerLayerOf(deps, tenant, rec.meta);
  return autoSeal(deps, tenant, ws, rec, lower, listed, background, { share: BACKGROUND_SHARE, max: BACKGROUND_MAX });
}
