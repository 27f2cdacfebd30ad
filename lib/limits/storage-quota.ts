/**
 * storage_bytes and files_per_workspace as a Workspace uses them (its StorageQuota,
 * lib/workspace/workspace-types.ts): the write's change is charged before it is written (usage.ts),
 * from the isolate's allowance when it covers it (storage-allowance.ts: no round trip, told to the
 * object after the answer), else in one round trip to the tenant's limits object; deletes and failed writes give back.
 * A write that changes neither the file count nor the bytes (a same-size overwrite) charges nothing, with no round trip.
 * A workspace the object has no count of yet (made before counting began) is counted once, here,
 * from a listing of its merged tree (one LIST per 1,000 files). Bulk writers (import, restore,
 * fork, a packed write-back's commit) charge their whole change first (charge), then set the
 * exact count they produced (recount); an import first bounds what it writes by where the quotas
 * stand (standing: lib/archive/import-bound.ts).
 * When the object cannot be reached, writes go on uncounted (logged), as calls do.
 */
import { quotaExceeded, type QuotaStanding } from "./fields.js";
import type { Caller, LimitsStore } from "./store.js";
import type { ChargeOptions, StorageUsage } from "./usage.js";
import type { StorageDriver } from "../storage/types.js";
import type { StorageAllowances } from "./storage-allowance.js";
import type { HoldAsk } from "./held-room.js";

export interface StorageQuotaHandle {
  /** The workspace's count (counted now if the object has none); null when the object cannot be reached. */
  usage(): Promise<StorageUsage | null>;
  /** Where each quota stands for this caller now (usage with room held ahead, and limit), in the same one round trip; null when the object cannot be reached. `on`: a write-back's hold, whose own room is not counted as used. */
  standing(on?: { draw: string }): Promise<QuotaStanding | null>;
  /** `on`: the write-back's hold (held-room.ts) the change draws on, whether the hold is released after it (settle), whether what it still awaits of its deletes is taken from the free room first (`fill`). */
  charge(delta: StorageUsage, on?: { draw: string; release?: boolean; fill?: boolean }): Promise<void>;
  settle(delta: StorageUsage, on?: { draw: string; release?: boolean }): Promise<void>;
  /**
   * A write-back's hold (held-room.ts), in one round trip: its id when the charge less the deletes
   * fits; the refusal (quota, usage, limit) when not; null when the object cannot be reached.
   */
  hold(ask: HoldAsk): Promise<{ id: string } | { quota: "storage_bytes" | "files_per_workspace"; usage: number; limit: number } | null>;
  /** Sets the workspace's exact count from a listing of its tree (after a bulk change); `view`: the tree as it is now, when the base moved since `driver` was opened. */
  recount(view?: StorageDriver): Promise<void>;
}

const unreachable = (e: unknown) => console.error("limits: the tenant's limits object did not answer; storage goes on uncounted", e instanceof Error ? e.message : String(e));

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;

/** Where a quota's charges go: the limits object, and this isolate's allowances when it keeps them; `later`: the request's waitUntil (an allowance's settle after the answer; without it the allowances are not used). */
export interface QuotaRoute {
  limits: LimitsStore;
  allowances?: StorageAllowances;
  later?: (p: Promise<unknown>) => void;
}

/** The storage quotas of workspace `ws` of `tenant` for `caller`; `driver` is the workspace's merged view (what a listing shows). */
export function storageQuota(route: QuotaRoute, tenant: string, ws: string, caller: Caller, driver: StorageDriver, filesPrefix: string): StorageQuotaHandle {
  const { limits, later } = route;
  // Only where the settle can finish after the answer (waitUntil): a Lambda environment frozen with a settle in flight could lose it, or apply it twice when the SDK retries it.
  const allowances = later ? route.allowances : undefined;
  /** The object's decision on `delta`; a workspace it has no count of yet is counted (countStored) and the object asked again with it. */
  const counted = async (delta: StorageUsage, opts: ChargeOptions = {}) => {
    const d = await limits.chargeStorage(tenant, caller, ws, delta, opts);
    return !d.ok && "unknown" in d ? limits.chargeStorage(tenant, caller, ws, delta, { ...opts, init: await countStored(driver, filesPrefix) }) : d;
  };
  /** A charge of nothing: the object's count (the workspace counted first when it has none), or null when it cannot be reached. */
  const nothing = async (opts: { standing?: boolean; draw?: string }) => {
    try {
      const d = await counted({ files: 0, bytes: 0 }, opts);
      return d.ok ? d : null;
    } catch (e) {
      unreachable(e);
      return null;
    }
  };
  return {
    async usage() {
      const d = await nothing({});
      return d ? { files: d.files, bytes: d.bytes } : null;
    },
    standing: async (on) => (await nothing({ standing: true, ...on }))?.standing ?? null,
    async hold(ask) {
      try {
        const d = await counted({ files: 0, bytes: 0 }, { hold: ask });
        if (d.ok) return d.hold ? { id: d.hold.id } : null;
        return "unknown" in d ? null : { quota: d.quota, usage: d.usage, limit: d.limit };
      } catch (e) {
        unreachable(e);
        return null;
      }
    },
    async charge(delta, on) {
      // A change of nothing (a same-size overwrite) can cross no quota and moves no count: no round trip.
      // (A workspace not counted yet is counted by its next charge that changes something.)
      if (delta.files === 0 && delta.bytes === 0 && !on?.release && !on?.fill) return;
      let d;
      try {
        if (on) d = await limits.chargeStorage(tenant, caller, ws, delta, on);
        else if (allowances) {
          const a = await allowances.charge(tenant, caller, ws, delta, () => countStored(driver, filesPrefix), later);
          if (a === "pooled") return;
          d = a;
        } else d = await counted(delta);
      } catch (e) {
        return unreachable(e);
      }
      if (d.ok || "unknown" in d) return;
      const asked = d.quota === "files_per_workspace" ? `${plural(delta.files, "more file")}` : `${plural(delta.bytes, "more byte")}`;
      throw quotaExceeded(d.quota, d.usage, d.limit, `This change needs ${asked}${d.quota === "files_per_workspace" ? " in this workspace" : ""}`, true, {}, undefined, caller.limits);
    },
    async settle(delta, on) {
      if (delta.files === 0 && delta.bytes === 0 && !on?.release) return;
      if (!on && allowances && (await allowances.settle(tenant, caller, ws, delta, later))) return;
      await limits.chargeStorage(tenant, caller, ws, delta, { force: true, ...on }).then(() => {}, unreachable);
    },
    async recount(view) {
      try {
        await limits.setStorage(tenant, ws, await countStored(view ?? driver, filesPrefix));
      } catch (e) {
        unreachable(e);
      }
    },
  };
}

/**
 * The entries and bytes of a workspace's tree: a listing of its files prefix through its merged view.
 * Every object is one entry of files_per_workspace: a file, or an explicit directory's marker (a key
 * ending "/", 0 bytes; lib/workspace/directories.ts charges one the same way), whether or not files
 * lie below it now.
 */
export async function countStored(driver: StorageDriver, filesPrefix: string): Promise<StorageUsage> {
  const out = { files: 0, bytes: 0 };
  let cursor: string | undefined;
  do {
    const page = await driver.list({ prefix: filesPrefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) {
      if (o.key === filesPrefix) continue; // the root is no entry (no marker is made there)
      out.files++;
      out.bytes += o.size;
    }
    cursor = page.cursor;
  } while (cursor);
  return out;
}
