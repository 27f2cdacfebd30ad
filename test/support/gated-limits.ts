/**
 * A limits store (any: memoryLimits, the Durable Object's binding) with every call logged by
 * operation: "takeCall+claim" for a token with an Idempotency-Key's claim, "settle" for a storage
 * charge of no change (an allowance's settle), else the method's name. While `gate.closed`, the
 * calls `hold` names wait for `gate.open()` and are logged "held:…": how the cost tests tell what a
 * call awaited before its answer from what it only started. While `claims.closed`, a key's claim
 * alone (claimKey) is asked (logged as such) but answered only once `claims.open()`: what a call does
 * meanwhile is what it does beside the claim.
 */
import type { LimitsStore } from "../../lib/limits/store.js";
import type { StorageUsage } from "../../lib/limits/usage.js";

export function gatedLimits(base: LimitsStore, log: string[], hold: (label: string) => boolean = () => false) {
  const waiting: (() => void)[] = [];
  const gate = { closed: false, open: () => void ((gate.closed = false), waiting.splice(0).forEach((go) => go())) };
  const claimsWaiting: (() => void)[] = [];
  const claims = { closed: false, open: () => void ((claims.closed = false), claimsWaiting.splice(0).forEach((go) => go())) };
  const store = new Proxy(base, {
    get(target, name: keyof LimitsStore) {
      const f = target[name] as (...a: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => {
        const delta = args[3] as StorageUsage | undefined;
        const label = name === "takeCall" && args[2] ? "takeCall+claim" : name === "chargeStorage" && delta?.files === 0 && delta.bytes === 0 ? "settle" : String(name);
        if (gate.closed && hold(label)) {
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
