/**
 * The rate limit as HTTP header fields (draft-ietf-httpapi-ratelimit-headers-10): the policy
 * (`RateLimit-Policy: "tenant";q=1200;w=60`) and its current state (`RateLimit: "tenant";r=1199;t=1`),
 * on every tenant response; a refusal adds Retry-After.
 */
import type { CallDecision } from "./limiter.js";

export function rateLimitHeaders(d: CallDecision): Record<string, string> {
  const policies = [`"tenant";q=${d.tenant_limit};w=60`];
  if (d.key_limit < d.tenant_limit) policies.push(`"key";q=${d.key_limit};w=60`);
  return {
    "RateLimit-Policy": policies.join(", "),
    RateLimit: `"${d.policy}";r=${d.remaining};t=${d.reset}`,
    ...(d.ok ? {} : { "Retry-After": String(d.retry_after) }),
  };
}
