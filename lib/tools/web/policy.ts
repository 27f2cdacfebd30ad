/**
 * A tenant's web policy: which domains web_fetch, web_search and commands with network may reach. KV `policy/<tenant>`
 * = {web: {allowed_domains?, blocked_domains?}} (set with PUT /v1/admin/tenants/{t}/policy).
 * A domain entry matches itself and its subdomains, "*.example.com" only subdomains (the one rule:
 * lib/shared/web-domains.ts, which the runner's egress proxy uses for commands too). Pure but for load/save.
 */
import { z } from "@hono/zod-openapi";
import { ToolError } from "../../shared/errors.js";
import type { KeyValueStore } from "../../storage/types.js";
import { GatePolicyFields } from "../pending/gate-policy.js";
import { safeHref } from "../../shared/ssrf.js";
import { matchingDomain } from "../../shared/web-domains.js";
import { readTenantPolicy, tenantPolicyKey } from "../../exec/tenant-policy.js";
import type { IsolateCache } from "../../shared/isolate-cache.js";

const Domain = z
  .string()
  .min(1)
  .max(253)
  .transform((d) => d.trim().toLowerCase().replace(/\.+$/, ""))
  .refine((d) => /^(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(d), { message: "a domain like example.com or *.example.com" });

export const WebPolicySchema = z.object({
  allowed_domains: z.array(Domain).max(1000).optional().openapi({ description: "When set, only these domains (and their subdomains) are fetched without approval; commands with network reach only these (a command cannot wait for approval)." }),
  blocked_domains: z.array(Domain).max(1000).optional().openapi({ description: "Never fetched, returned by search, or reached by commands with network." }),
}).strict();
export const TenantPolicySchema = z.object({ web: WebPolicySchema.optional(), ...GatePolicyFields }).strict().openapi("TenantPolicy");

export type WebPolicy = z.infer<typeof WebPolicySchema>;
export type TenantPolicy = z.infer<typeof TenantPolicySchema>;

/** The tenant's policy; through `cache` (deps.policies, per isolate, seconds) when given. */
export const loadTenantPolicy = (kv: KeyValueStore, tenant: string, cache?: IsolateCache): Promise<TenantPolicy> => readTenantPolicy<TenantPolicy>(kv, tenant, cache);

export async function saveTenantPolicy(kv: KeyValueStore, tenant: string, policy: TenantPolicy, cache?: IsolateCache): Promise<void> {
  await kv.put(tenantPolicyKey(tenant), JSON.stringify(policy));
  cache?.forget(tenant);
}

/** Normalizes domain lists given in tool arguments (same rules as the policy). */
export const DomainList = z.array(Domain).max(100);

/** True when allowed_domains is set and `url`'s host is outside it: such a fetch waits for approval (lib/run/pending/gate.ts). */
export const outsideAllowed = (url: URL, policy: WebPolicy = {}): boolean => !!policy.allowed_domains && !matchingDomain(url.hostname, policy.allowed_domains);

/**
 * Throws BLOCKED when `url`'s host is in blocked_domains. Such a host is never fetched and never
 * held for approval: the approval gate calls this before any of its rules, web_fetch on every hop.
 */
export function refuseBlocked(url: URL, policy: WebPolicy = {}): void {
  const blocked = matchingDomain(url.hostname, policy.blocked_domains);
  if (blocked) {
    throw new ToolError("BLOCKED", `Refused to fetch ${safeHref(url)}: the domain ${blocked} is blocked by this tenant's web policy (blocked_domains). Use another source.`, { url: safeHref(url), domain: blocked, policy: "blocked_domains" });
  }
}

/**
 * Throws BLOCKED when the tenant's policy refuses this URL's host. `approvedHost`: a host a human
 * approved for this call (the approval gate), reached although it is outside allowed_domains.
 */
export function checkWebPolicy(url: URL, policy: WebPolicy = {}, approvedHost?: string): void {
  refuseBlocked(url, policy);
  if (policy.allowed_domains && outsideAllowed(url, policy) && url.hostname.toLowerCase() !== approvedHost?.toLowerCase()) {
    throw new ToolError(
      "BLOCKED",
      `${url.hostname} is outside this tenant's allowed domains (${policy.allowed_domains.slice(0, 10).join(", ")}${policy.allowed_domains.length > 10 ? ", …" : ""}) and was not approved for this call (a redirect leads there, or the tenant's gate does not ask for approval). Use an allowed domain, or fetch this URL directly: outside allowed_domains a fetch waits for a human's approval when the tenant's policy gates it.`,
      { url: safeHref(url), host: url.hostname, policy: "allowed_domains" },
    );
  }
}
