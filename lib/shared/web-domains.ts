/**
 * A tenant's web domain lists (its policy's `web`: lib/tools/web/policy.ts) and the one rule that
 * matches a host against them, for web_fetch, web_search and the runner's egress proxy
 * (infra/container/egress-domains.ts): a domain matches itself and its subdomains ("example.com"
 * matches docs.example.com); "*.example.com" matches only its subdomains. Entries are stored
 * lower-cased, without a trailing dot (the policy's schema normalizes them).
 */

export interface WebDomains {
  /** When set (even empty), only these domains are reached without a human's approval. */
  allowed_domains?: string[];
  /** Never reached. */
  blocked_domains?: string[];
}

/** A hostname as the entries are compared with: lower case, no trailing dot, no IPv6 brackets. */
const comparable = (hostname: string) => hostname.toLowerCase().replace(/\.+$/, "").replace(/^\[|\]$/g, "");

const matches = (host: string, pattern: string) => (pattern.startsWith("*.") ? host.endsWith(pattern.slice(1)) : host === pattern || host.endsWith(`.${pattern}`));

/** The first entry of `patterns` that matches `hostname` (a URL's hostname; IPv6 in brackets or not), or undefined; the host is made comparable once, not per entry. */
export function matchingDomain(hostname: string, patterns: readonly string[] = []): string | undefined {
  const host = comparable(hostname);
  return patterns.find((p) => matches(host, p));
}
