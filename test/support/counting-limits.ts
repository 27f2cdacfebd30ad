/**
 * The tenant's LIMITS Durable Object (the real local binding) with every call logged by operation
 * ("takeCall+claim": a token with a key's claim; "settle": a storage charge of no change, an
 * allowance's settle). While `gate.closed`, the pool's refills and the allowances' settles wait for
 * `gate.open()` (logged "held:…"): what test/lib/api/business-cost.test.ts and put-cost.test.ts assert.
 * While `claims.closed`, a key's claim alone (claimKey) is asked (logged) but answered only once
 * `claims.open()`: what a call does meanwhile is what it does beside the claim.
 */
import { env } from "cloudflare:workers";
import { durableLimits } from "../../lib/limits/durable-object.js";
import type { LimitsStore } from "../../lib/limits/store.js";
import type { StorageUsage } from "../../lib/limits/usage.js";

export function countingLimits(log: string[]) {
  const base = durableLimits(env.LIMITS);
  const waiting: (() => void)[] = [];
  const gate = { closed: false, open: () => void ((gate.closed = false), waiting.splice(0).forEach((go) => go())) };
  const claimsWaiting: (() => void)[] = [];
  const claims = { closed: false, open: () => void ((claims.closed = false), claimsWaiting.splice(0).forEach((go) => go())) };
  const store = new Proxy(base, {
    get(target, name: keyof LimitsStore) {
      const f = target[name] as (...a: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => {
        const delta = args[3] as StorageUsage | undefined;
        const label = name === "takeCall" && args[2] ? "takeCall+claim" : name === "chargeStorage" && delta?.files === 0 && delta.bytes === 0 ? "settle" : name;
        const after = label === "leaseCalls" || label === "settle";
        if (after && gate.closed) {
          log.push(`held:${label}`);
          return new Promise<void>((go) => waiting.push(go)).then(() => f(...args));
        }
        log.push(label);
        if (label === "claimKey" && claims.closed) return new Promise<void>((go) => claimsWaiting.push(go)).then(() => f(...args));
        return f(...args);
      };
    },
  }) as LimitsStore;
  return { store, gate, claims };
}
