/**
 * The tenant's LIMITS Durable Object (the real local binding) through gatedLimits: every call logged
 * by operation, and while `gate.closed` the pool's refills and the allowances' settles wait for
 * `gate.open()` (logged "held:…"), and while `claims.closed` a key's claim is answered only at
 * `claims.open()`: what test/lib/api/business-cost.test.ts and put-cost.test.ts assert.
 */
import { env } from "cloudflare:workers";
import { durableLimits } from "../../lib/limits/durable-object.js";
import { gatedLimits } from "./gated-limits.js";

export function countingLimits(log: string[]) {
  return gatedLimits(durableLimits(env.LIMITS), log, (label) => label === "leaseCalls" || label === "settle");
}
