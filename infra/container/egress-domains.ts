/**
 * The tenant's web domain lists at a command's egress proxy (RunRequest.egress_domains: the
 * policy's `web.allowed_domains` / `web.blocked_domains`, docs/web.md), matched by the one rule
 * web_fetch uses (lib/shared/web-domains.ts) against the host the command names: CONNECT's
 * authority or a plain request's absolute URL, before any name is resolved or address dialled; and
 * the name a CONNECT tunnel's first bytes ask for, SNI or Host (egress-tunnel-check.ts).
 * - a host in blocked_domains is refused;
 * - when allowed_domains is set, a host outside it is refused: a command cannot wait for a human's
 *   approval the way web_fetch does, so the refusal says to use web_fetch for one, or to ask the
 *   operator to add the domain; an IP address is refused too, since it cannot match a domain.
 */
import { matchingDomain, type WebDomains } from "../../lib/shared/web-domains.js";

const SHOWN = 10;
const listed = (domains: readonly string[]) => (domains.length ? `${domains.slice(0, SHOWN).join(", ")}${domains.length > SHOWN ? ", …" : ""}` : "none");
const ASK = "A command cannot wait for a human's approval: fetch the URL with web_fetch, which asks for one, or ask the operator to add the domain to the tenant's policy (web.allowed_domains).";

/**
 * Why the tenant's domain lists refuse `name` (lower-cased, no brackets or trailing dot; `literal`:
 * it is an IP address), as the rest of the refusal line after "Refused to connect to host:port: ", or null.
 */
export function domainRefusal(name: string, literal: boolean, domains: WebDomains | undefined): string | null {
  if (!domains) return null;
  const blocked = matchingDomain(name, domains.blocked_domains);
  if (blocked) return `${name} is blocked by this tenant's web policy (blocked_domains: ${blocked}), for commands as for web_fetch. Use another source, or ask the operator to change the tenant's policy.`;
  const allowed = domains.allowed_domains;
  if (!allowed) return null;
  if (literal) return `${name} is an IP address, and this tenant's web policy lets commands reach only the domains in allowed_domains (${listed(allowed)}); an address cannot match a domain. Use the host's name. ${ASK}`;
  if (!matchingDomain(name, allowed)) return `${name} is outside this tenant's allowed domains (allowed_domains: ${listed(allowed)}). ${ASK}`;
  return null;
}
