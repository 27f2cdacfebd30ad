/**
 * What deleting a workspace, a key or a tenant's data is allowed to leave, and why: the allowlist
 * of the storage inventory tests (lifecycle-inventory*.test.ts), the same rows as docs/storage.md
 * "What deletion keeps". A survivor is a storage key (R2), `kv:<key>` (KV) or `do:<object>/<key>`
 * (a Durable Object's storage); `{tenant}`, `{ws}` and `{key}` stand for the ids of the test.
 */

export interface Kept {
  /** The keys it explains, `*` for any characters. */
  pattern: string;
  /** Why it is kept, and for how long (the docs' row says the same). */
  why: string;
}

/** What survives a deleted workspace (after the scheduled tick, its clock past GC's grace). */
export const WORKSPACE_DELETE_KEEPS: readonly Kept[] = [
  { pattern: "t/{tenant}/tenant.json", why: "the tenant's record: the tenant lives on" },
  { pattern: "t/{tenant}/audit/*", why: "the tenant's audit log names the workspace made and deleted (docs/audit.md); kept for the retention (365 days)" },
  { pattern: "t/{tenant}/idem/*", why: "answers kept for an Idempotency-Key: a retry gets the answer the caller already got; 24 h" },
  { pattern: "do:limits/idem/*", why: "the claim of an Idempotency-Key in the tenant's limits object, until its kept answer expires (24 h)" },
  { pattern: "kv:apikey/*", why: "the tenant's API keys" },
  { pattern: "kv:keyid/{tenant}/*", why: "the tenant's API keys, by id" },
  { pattern: "kv:rec/{tenant}/{ws}/*", why: "sessions' read records: carry the deleted workspace's instance, so a workspace made again with the id never reads them; gone with their 7-day TTL" },
  { pattern: "do:usage/*/{ws}", why: "usage records for billing: raw records 35 days, hourly sums for good (docs/usage.md)" },
];

/** What survives a revoked key under its id (after the scheduled tick). */
export const KEY_REVOKE_KEEPS: readonly Kept[] = [
  { pattern: "do:usage/*/{key}", why: "usage records of the key's calls, for billing: raw records 35 days, hourly sums for good (docs/usage.md)" },
];

const patternOf = (p: string, vars: Record<string, string>) =>
  new RegExp(`^${p.replace(/\{(\w+)\}/g, (_m, v: string) => `\u0000${v}\u0000`).replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\u0000(\w+)\u0000/g, (_m, v: string) => (vars[v] ?? `{${v}}`).replace(/[.+?^${}()|[\]\\*]/g, "\\$&"))}$`);

/** The survivors each allowlist entry explains, and those none does. */
export function survivorsOf(left: readonly string[], keeps: readonly Kept[], vars: Record<string, string>): { kept: Map<string, string[]>; unexplained: string[] } {
  const kept = new Map<string, string[]>();
  const unexplained: string[] = [];
  const res = keeps.map((k) => ({ k, re: patternOf(k.pattern, vars) }));
  for (const key of left) {
    const hit = res.find((r) => r.re.test(key));
    if (hit) kept.set(hit.k.pattern, [...(kept.get(hit.k.pattern) ?? []), key]);
    else unexplained.push(key);
  }
  return { kept, unexplained };
}
