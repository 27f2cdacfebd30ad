/**
 * Host patterns of secret destinations (lib/tools/secrets/, and the runner's egress proxy):
 * `npm.example.com` names that host only; `*.example.com` names every host below example.com
 * (`a.example.com`, `a.b.example.com`), never example.com itself. An IP address names itself.
 * Hosts and patterns compare lower-cased, without a trailing dot; ports are not part of a pattern.
 */

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV6_LITERAL = /^\[[0-9a-f:.]+\]$/;

/** A host as compared: lower case, no trailing dot (URL.hostname keeps IPv6 in brackets). */
export const canonicalHost = (host: string): string => host.trim().toLowerCase().replace(/\.$/, "");

/** Why `pattern` is not a host pattern, or null when it is one. */
export function hostPatternProblem(pattern: string): string | null {
  const p = canonicalHost(pattern);
  if (!p) return "a host pattern is empty";
  if (p.length > 253) return "a host pattern is longer than 253 characters";
  if (IPV6_LITERAL.test(p)) return null;
  const name = p.startsWith("*.") ? p.slice(2) : p;
  if (name.includes("*")) return `${JSON.stringify(pattern)}: '*' is allowed only as the whole first label ("*.example.com")`;
  if (name.includes(":") || name.includes("/")) return `${JSON.stringify(pattern)} is a host, without scheme, port or path (e.g. "npm.example.com")`;
  const labels = name.split(".");
  if (p.startsWith("*.") && labels.length < 2) return `${JSON.stringify(pattern)} would match a whole top-level domain; name at least "*.example.com"`;
  if (!labels.every((l) => LABEL.test(l))) return `${JSON.stringify(pattern)} is not a host name (letters, digits and '-' in dot-separated labels)`;
  return null;
}

/** Whether `host` (a URL's hostname) is named by `pattern`. */
export function hostMatches(pattern: string, host: string): boolean {
  const p = canonicalHost(pattern);
  const h = canonicalHost(host);
  if (p.startsWith("*.")) return h.endsWith(p.slice(1)) && h.length > p.length - 1;
  return p === h;
}

/** How specific a pattern is: an exact host beats any wildcard, a longer wildcard beats a shorter one. */
export const patternRank = (pattern: string): number => (pattern.startsWith("*.") ? pattern.length : 10_000 + pattern.length);
