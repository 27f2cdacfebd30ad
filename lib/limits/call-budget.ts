/**
 * Taking one call of a caller's calls_per_minute, and the one refusal over it: the route guard
 * (lib/api/auth/rate-limit.ts) takes one per request; a call made inside another (a subagent's,
 * lib/run/run-tool.ts) takes its own, so a `task` is no way around its key's limit.
 */
import { ToolError } from "../shared/errors.js";
import type { CallLeases } from "./call-leases.js";
import type { CallDecision } from "./limiter.js";
import type { Caller } from "./store.js";

/** RATE_LIMITED for a call past calls_per_minute; `more`: what else the caller can read (the route's headers). */
export function callsPerMinuteError(d: CallDecision & { ok: false }, more = ""): ToolError {
  const whose = d.policy === "key" ? "This API key" : "This tenant";
  return new ToolError("RATE_LIMITED", `${whose} may make ${d.limit} calls per minute (calls_per_minute), and has used them. Retry after ${d.retry_after} s${more}.`, { limit: "calls_per_minute", policy: d.policy, quota: d.limit, remaining: d.remaining, retry_after: d.retry_after });
}

/**
 * One call of `caller`'s budget for a call made inside another (a subagent's tool call): throws
 * RATE_LIMITED over it. When the limits object does not answer, the call goes on, as at the route guard.
 */
export async function takeInnerCall(leases: CallLeases, tenant: string, caller: Caller, later?: (p: Promise<unknown>) => void): Promise<void> {
  let d;
  try {
    d = await leases.take(tenant, caller, undefined, later);
  } catch (e) {
    console.error("limits: the tenant's limits object did not answer; the inner call goes on unlimited", e instanceof Error ? e.message : String(e));
    return;
  }
  if (!d.ok) throw callsPerMinuteError(d);
}
