/**
 * calls_per_minute, enforced by the route guard (routes/access.ts) for every tenant route once
 * the key is known: a call of the isolate's pool (lib/limits/call-leases.ts: no round trip), or
 * when the pool has none one round trip to the tenant's limits object (lib/limits/), started beside
 * the workspace record's read. Every tenant response carries RateLimit-Policy and RateLimit;
 * over the limit: 429 RATE_LIMITED with Retry-After, before the handler runs.
 *
 * When the limits object cannot be reached the call goes on (logged), without the headers:
 * an outage of the counter does not take the API down with it.
 */
import type { Context } from "hono";
import { callsPerMinuteError } from "../../limits/call-budget.js";
import { rateLimitHeaders } from "../../limits/headers.js";
import type { CallLeases } from "../../limits/call-leases.js";
import type { ClaimAnswer, ClaimAsk } from "../../limits/claims.js";
import type { AppEnv } from "../http.js";
import type { AuthInfo } from "../../contract/caller.js";
import { callerOf } from "../../workspace/quota.js";

/**
 * Takes one call from the key's budget; sets the headers; throws RATE_LIMITED over it. Returns what to
 * set on the response again once it is built, and with `claim`, the Idempotency-Key's claim
 * (lib/limits/claims.ts): taken in the token's round trip, or in its own, still under way (a call of
 * the pool: the call's reads go beside it); it gives undefined when the object did not answer. The
 * whole is undefined when the object did not answer the token. `later`: the request's waitUntil,
 * which keeps the pool's refill alive after the answer.
 */
export async function takeCall(leases: CallLeases, c: Context<AppEnv>, auth: AuthInfo, claim?: ClaimAsk, later?: (p: Promise<unknown>) => void): Promise<{ headers: Record<string, string>; claim?: Promise<ClaimAnswer | undefined> } | undefined> {
  let d;
  try {
    d = await leases.take(auth.tenant, callerOf(auth), claim, later);
  } catch (e) {
    console.error("limits: the tenant's limits object did not answer; the call goes on unlimited", e instanceof Error ? e.message : String(e));
    return undefined;
  }
  const headers = rateLimitHeaders(d);
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
  if (!d.ok) throw callsPerMinuteError(d, "; the RateLimit header says what is left");
  const claimed = d.claim?.catch((e: unknown) => {
    console.error("limits: the tenant's limits object did not answer the Idempotency-Key's claim; the bucket holds the key", e instanceof Error ? e.message : String(e));
    return undefined;
  });
  return { headers, ...(claimed ? { claim: claimed } : {}) };
}

/**
 * The call's RateLimit fields (as the budget stood when the guard took the call: `rate` on the context) on the
 * response a handler built (a raw Response, an error answered below the guard), or on a kept answer replayed for
 * an Idempotency-Key, which never keeps them: the replay took a call too.
 */
export function setRateHeaders(c: Context<AppEnv>): void {
  const headers = c.get("rate");
  if (!headers || c.res.headers.get("ratelimit") !== null) return;
  try {
    for (const [k, v] of Object.entries(headers)) c.header(k, v);
  } catch {
    // A response whose body was already used (an upgrade): it goes without them.
  }
}
