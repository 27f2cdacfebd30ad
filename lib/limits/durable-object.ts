/**
 * The limits store on Workers: one Durable Object per tenant (binding LIMITS, class LimitsObject,
 * exported by infra/cloudflare.ts). A Durable Object runs one request at a time in one place, so
 * every isolate and instance that asks it sees one count: no overshoot from concurrency.
 *
 * What it keeps where: the tenant's limits, the run and task leases and each workspace's storage
 * count (`usage/<ws>`) and the storage allowances given to isolates and the write-backs' holds (`allowances`, held-room.ts) in the object's
 * storage (written on set, acquire, release and charge only);
 * the token buckets and the pending workspace and checkpoint slots in its memory (no storage write per
 * call; a restart forgets slots, which are held for the seconds of a create or a checkpoint). Idempotency-Key claims
 * (claims.ts) in its storage, written before the answer that says "taken" leaves; expired ones are
 * dropped a page at a time, after one in SWEEP_CLAIMS_EVERY claims.
 * A restarted object (a deploy, an eviction after idling) starts with full buckets: at most one
 * more minute's budget, and an object idle for a minute had full buckets anyway.
 */
import type { Limits } from "./fields.js";
import { TenantLimiter, type Lease, type LeaseHolder } from "./limiter.js";
import { tenantOps, type Admitted, type Caller, type LimitsStore, type TenantOps } from "./store.js";
import { CLAIM_PREFIX, claimKey, releaseClaim, type Claim, type ClaimAsk, type ClaimStore } from "./claims.js";
import { TenantUsage, type ChargeOptions, type SlotOutcome, type StorageUsage, type TaskLease } from "./usage.js";
import type { HeldAllowance } from "./held-room.js";
import type { KeptCount } from "./kept-counts.js";

type Op =
  | { op: "get" }
  | { op: "set"; limits: Limits }
  | { op: "takeCall"; caller: Caller; claim?: ClaimAsk; extra?: number }
  | { op: "leaseCalls"; caller: Caller; want: number }
  | { op: "claimKey"; ask: ClaimAsk }
  | { op: "releaseClaim"; key: string; id: string }
  | { op: "acquireRun"; caller: Caller; leaseMs: number; holder?: LeaseHolder }
  | { op: "releaseRun"; lease: string }
  | { op: "chargeStorage"; caller: Caller; ws: string; delta: StorageUsage; opts?: ChargeOptions }
  | { op: "setStorage"; ws: string; usage: StorageUsage | null }
  | { op: "reserveWorkspace"; caller: Caller; leaseMs: number }
  | { op: "releaseWorkspace"; slot: string; outcome?: SlotOutcome }
  | { op: "reserveCheckpoint"; caller: Caller; ws: string; id: string; leaseMs: number }
  | { op: "releaseCheckpoint"; id: string }
  | { op: "acquireTask"; caller: Caller; id: string; leaseMs: number }
  | { op: "releaseTasks"; ids: string[] };

const USAGE = "usage/";
const SWEEP_CLAIMS_EVERY = 64;

export class LimitsObject {
  private readonly limiter = new TenantLimiter();
  private readonly usage = new TenantUsage();
  private ops: ReturnType<typeof tenantOps> = tenantOps(this.limiter, {}, this.usage);
  private readonly claims: ClaimStore;
  private claimsTaken = 0;
  /** Where the next sweep of expired claims starts (the last key it looked at). */
  private sweptTo: string | undefined;

  constructor(private readonly state: DurableObjectState) {
    this.claims = {
      get: (k) => state.storage.get<Claim>(k),
      put: (k, c) => state.storage.put(k, c),
      delete: (k) => state.storage.delete(k).then(() => {}),
    };
    void state.blockConcurrencyWhile(async () => {
      const [limits, leases, tasks, counts, allowances] = await Promise.all([
        state.storage.get<Limits>("limits"),
        state.storage.get<Lease[]>("leases"),
        state.storage.get<TaskLease[]>("tasks"),
        state.storage.list<KeptCount>({ prefix: USAGE }), // a count kept before COUNT_VERSION is counted again at its first charge (kept-counts.ts)
        state.storage.get<HeldAllowance[]>("allowances"),
      ]);
      this.ops = tenantOps(this.limiter, limits ?? {}, this.usage);
      for (const l of leases ?? []) this.limiter.leases.set(l.id, l);
      this.usage.load([...counts].map(([k, u]) => [k.slice(USAGE.length), u]), tasks ?? [], allowances ?? []);
    });
  }

  /**
   * A workspace's count to the object's storage. A charge's answer does not wait for the write to be
   * confirmed (allowUnconfirmed: the write is on every write's path): an object that fails right then
   * forgets at most the charges of that moment (docs/limits-and-quotas.md: the bound).
   */
  private saveUsage(ws: string, unconfirmed = false): Promise<void> {
    const u = this.usage.storage.get(ws);
    const opts = unconfirmed ? { allowUnconfirmed: true } : {};
    return u ? this.state.storage.put(USAGE + ws, u, opts) : this.state.storage.delete(USAGE + ws, opts).then(() => {});
  }

  /** The allowances held (storage-allowance.ts), unconfirmed like a charge's count: a restart that loses them frees their room early. */
  private saveAllowances(): Promise<void> {
    return this.state.storage.put("allowances", [...this.usage.allowances.values()], { allowUnconfirmed: true });
  }

  private saveTasks(): Promise<void> {
    return this.state.storage.put("tasks", [...this.usage.tasks.values()]);
  }

  private saveLeases(): Promise<void> {
    return this.state.storage.put("leases", [...this.limiter.leases.values()]);
  }

  private async claim(ask: ClaimAsk) {
    const now = Date.now();
    const a = await claimKey(this.claims, ask, now);
    if (a.taken && ++this.claimsTaken % SWEEP_CLAIMS_EVERY === 0) await this.sweepClaims(now);
    return a;
  }

  /** Drops the expired claims of one page of keys, from where the last sweep stopped (wrapping around). */
  private async sweepClaims(now: number): Promise<void> {
    const page = await this.state.storage.list<Claim>({ prefix: CLAIM_PREFIX, limit: 128, ...(this.sweptTo ? { startAfter: this.sweptTo } : {}) });
    const old = [...page].filter(([, c]) => c.expires <= now).map(([k]) => k);
    if (old.length) await this.state.storage.delete(old);
    this.sweptTo = page.size < 128 ? undefined : [...page.keys()].pop();
  }

  async fetch(request: Request): Promise<Response> {
    const body = (await request.json()) as Op;
    const answer = (v: unknown) => Response.json(v ?? null);
    const ops: TenantOps = this.ops;
    switch (body.op) {
      case "get":
        return answer(ops.get());
      case "set":
        await this.state.storage.put("limits", body.limits);
        return answer(ops.set(body.limits));
      case "takeCall": {
        const d: Admitted = ops.takeCall(body.caller, body.extra);
        if (d.ok && body.claim) d.claim = await this.claim(body.claim);
        return answer(d);
      }
      case "leaseCalls":
        return answer(ops.leaseCalls(body.caller, body.want));
      case "claimKey":
        return answer(await this.claim(body.ask));
      case "releaseClaim":
        await releaseClaim(this.claims, body.key, body.id);
        return answer(null);
      case "acquireRun": {
        const d = ops.acquireRun(body.caller, body.leaseMs, body.holder);
        if (d.ok) await this.saveLeases();
        return answer(d);
      }
      case "releaseRun":
        if (ops.releaseRun(body.lease)) await this.saveLeases();
        return answer(null);
      case "chargeStorage": {
        const d = ops.chargeStorage(body.caller, body.ws, body.delta, body.opts);
        if (d.ok || body.opts?.settle || body.opts?.init) void this.saveUsage(body.ws, true); // a first count is kept even when its charge was refused
        if (body.opts?.settle || body.opts?.reserve || body.opts?.hold || (body.opts?.draw && !body.opts.standing)) void this.saveAllowances(); // a standing asked for a hold changes nothing
        return answer(d);
      }
      case "setStorage":
        ops.setStorage(body.ws, body.usage);
        await this.saveUsage(body.ws);
        if (body.usage === null) await this.saveAllowances(); // a workspace gone: its held room went with it (usage.ts)
        return answer(null);
      case "reserveWorkspace":
        return answer(ops.reserveWorkspace(body.caller, body.leaseMs));
      case "releaseWorkspace":
        ops.releaseWorkspace(body.slot, body.outcome);
        return answer(null);
      case "reserveCheckpoint":
        return answer(ops.reserveCheckpoint(body.caller, body.ws, body.id, body.leaseMs));
      case "releaseCheckpoint":
        ops.releaseCheckpoint(body.id);
        return answer(null);
      case "acquireTask": {
        const d = ops.acquireTask(body.caller, body.id, body.leaseMs);
        await this.saveTasks(); // expired leases dropped, or one added
        return answer(d);
      }
      case "releaseTasks":
        if (ops.releaseTasks(body.ids)) await this.saveTasks();
        return answer(null);
      default:
        return new Response("unknown op", { status: 400 });
    }
  }
}

/** The LimitsStore over the LIMITS namespace: one object per tenant, named by the tenant id. */
export function durableLimits(ns: DurableObjectNamespace): LimitsStore {
  const call = async <T>(tenant: string, op: Op): Promise<T> => {
    const r = await ns.get(ns.idFromName(tenant)).fetch("https://limits/", { method: "POST", body: JSON.stringify(op) });
    if (!r.ok) throw new Error(`limits object answered ${r.status}`);
    return (await r.json()) as T;
  };
  return {
    get: (t) => call(t, { op: "get" }),
    set: (t, limits) => call(t, { op: "set", limits }),
    takeCall: (t, caller, claim, extra) => call(t, { op: "takeCall", caller, ...(claim ? { claim } : {}), ...(extra ? { extra } : {}) }),
    leaseCalls: (t, caller, want) => call(t, { op: "leaseCalls", caller, want }),
    claimKey: (t, ask) => call(t, { op: "claimKey", ask }),
    releaseClaim: (t, key, id) => call(t, { op: "releaseClaim", key, id }),
    acquireRun: (t, caller, leaseMs, holder) => call(t, { op: "acquireRun", caller, leaseMs, ...(holder ? { holder } : {}) }),
    releaseRun: (t, lease) => call(t, { op: "releaseRun", lease }),
    chargeStorage: (t, caller, ws, delta, opts) => call(t, { op: "chargeStorage", caller, ws, delta, ...(opts ? { opts } : {}) }),
    setStorage: (t, ws, usage) => call(t, { op: "setStorage", ws, usage }),
    reserveWorkspace: (t, caller, leaseMs) => call(t, { op: "reserveWorkspace", caller, leaseMs }),
    releaseWorkspace: (t, slot, outcome) => call(t, { op: "releaseWorkspace", slot, ...(outcome ? { outcome } : {}) }),
    reserveCheckpoint: (t, caller, ws, id, leaseMs) => call(t, { op: "reserveCheckpoint", caller, ws, id, leaseMs }),
    releaseCheckpoint: (t, id) => call(t, { op: "releaseCheckpoint", id }),
    acquireTask: (t, caller, id, leaseMs) => call(t, { op: "acquireTask", caller, id, leaseMs }),
    releaseTasks: (t, ids) => call(t, { op: "releaseTasks", ids: [...ids] }),
  };
}
