/**
 * The limits store on Workers: one Durable Object per tenant (binding LIMITS, class LimitsObject,
 * exported by infra/cloudflare.ts). A Durable Object runs one request at a time in one place, so
 * every isolate and instance that asks it sees one count: no overshoot from concurrency.
 *
 * What it keeps where: the tenant's limits and the run leases in the object's storage (written
 * on set, acquire and release only); the token buckets in its memory (no storage write per call).
 * A restarted object (a deploy, an eviction after idling) starts with full buckets: at most one
 * more minute's budget, and an object idle for a minute had full buckets anyway.
 */
import type { Limits } from "./fields.js";
import { TenantLimiter, type Lease } from "./limiter.js";
import { tenantOps, type Caller, type LimitsStore, type TenantOps } from "./store.js";

type Op =
  | { op: "get" }
  | { op: "set"; limits: Limits }
  | { op: "takeCall"; caller: Caller }
  | { op: "acquireRun"; caller: Caller; leaseMs: number }
  | { op: "releaseRun"; lease: string };

export class LimitsObject {
  private readonly limiter = new TenantLimiter();
  private ops: ReturnType<typeof tenantOps> = tenantOps(this.limiter);

  constructor(private readonly state: DurableObjectState) {
    void state.blockConcurrencyWhile(async () => {
      const [limits, leases] = await Promise.all([state.storage.get<Limits>("limits"), state.storage.get<Lease[]>("leases")]);
      this.ops = tenantOps(this.limiter, limits ?? {});
      for (const l of leases ?? []) this.limiter.leases.set(l.id, l);
    });
  }

  private saveLeases(): Promise<void> {
    return this.state.storage.put("leases", [...this.limiter.leases.values()]);
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
        const d = ops.takeCall(body.caller);
        return answer(d);
      }
      case "acquireRun": {
        const d = ops.acquireRun(body.caller, body.leaseMs);
        if (d.ok) await this.saveLeases();
        return answer(d);
      }
      case "releaseRun":
        if (ops.releaseRun(body.lease)) await this.saveLeases();
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
    takeCall: (t, caller) => call(t, { op: "takeCall", caller }),
    acquireRun: (t, caller, leaseMs) => call(t, { op: "acquireRun", caller, leaseMs }),
    releaseRun: (t, lease) => call(t, { op: "releaseRun", lease }),
  };
}
