/**
 * What a tenant (and each of its keys) may use: the seven limit fields, their defaults, and the
 * rule that joins a tenant's limits with a key's (the smaller wins: a key never exceeds its tenant).
 * docs/limits-and-quotas.md describes each field.
 */
import { ToolError } from "../shared/errors.js";

export const LIMIT_FIELDS = ["calls_per_minute", "concurrent_runs", "storage_bytes", "files_per_workspace", "workspaces", "background_tasks", "checkpoints_per_workspace"] as const;
export type LimitField = (typeof LIMIT_FIELDS)[number];

/** Limits as stored: a tenant's (unset fields take the defaults) or a key's (unset fields: the tenant's). */
export type Limits = Partial<Record<LimitField, number>>;
/** Every field set: what applies to a call. */
export type EffectiveLimits = Record<LimitField, number>;

export const DEFAULT_LIMITS: EffectiveLimits = {
  calls_per_minute: 1200,
  concurrent_runs: 8,
  storage_bytes: 10 * 1024 ** 3,
  files_per_workspace: 100_000,
  workspaces: 1000,
  background_tasks: 8,
  checkpoints_per_workspace: 100,
};

/** The largest value a field takes (a guard against typos such as 1e18, and the bound of Number's exact integers). */
export const MAX_LIMIT = Number.MAX_SAFE_INTEGER;

/** A tenant's limits over the defaults, then a key's over those: each field the smaller of the two. */
export function effectiveLimits(tenant: Limits, key?: Limits): EffectiveLimits {
  const out = { ...DEFAULT_LIMITS };
  for (const f of LIMIT_FIELDS) {
    const t = tenant[f];
    if (t !== undefined) out[f] = t;
    const k = key?.[f];
    if (k !== undefined) out[f] = Math.min(out[f], k);
  }
  return out;
}

/** Limits as given by a caller (an admin body, a key's record): non-negative integers, known fields only. */
export function checkLimits(value: unknown): Limits {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new ToolError("INVALID_ARGUMENT", `limits must be an object of ${LIMIT_FIELDS.join(", ")}.`);
  const out: Limits = {};
  for (const [k, v] of Object.entries(value)) {
    if (!(LIMIT_FIELDS as readonly string[]).includes(k)) throw new ToolError("INVALID_ARGUMENT", `Unknown limit '${k}': the limits are ${LIMIT_FIELDS.join(", ")}.`, { field: k });
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_LIMIT) throw new ToolError("INVALID_ARGUMENT", `Limit '${k}' must be a whole number from 0 to ${MAX_LIMIT}, got ${JSON.stringify(v)}.`, { field: k });
    out[k as LimitField] = v;
  }
  return out;
}

/** Each storage quota's usage (room held ahead by writes under way included) and limit for a caller, as a refusal names them. */
export type QuotaStanding = Record<"storage_bytes" | "files_per_workspace", { usage: number; limit: number }>;

/**
 * QUOTA_EXCEEDED naming the quota, the usage and the limit; thrown before anything is written. `reserved`: the usage counts what writes under way hold ahead (the storage quotas); `more`: details besides those (how far a bulk writer got).
 * `key`: the calling key's own limits, where the refuser knows them: when the limit that binds is the key's own (`by: "key"`), the
 * message says so and what helps, since raising the tenant's would not (a key's limits change only with a new key).
 */
export function quotaExceeded(quota: LimitField, usage: number, limit: number, what: string, reserved = false, more: Record<string, unknown> = {}, written = "Nothing was written.", key?: Limits): ToolError {
  const byKey = key?.[quota] === limit;
  const whose = byKey ? `this API key's own ${quota} limit is ${limit}` : `the ${quota} quota is ${limit}`;
  const helps = byKey ? "Delete what is not needed, or use a key with a higher limit (a key's limits are fixed when it is made: the operator, or the key that made this one, makes another)." : "Delete what is not needed, or ask the operator to raise the limit (PUT /v1/admin/tenants/{tenant}/limits).";
  return new ToolError("QUOTA_EXCEEDED", `${what}: ${whose}, and ${usage} ${usage === 1 ? "is" : "are"} in use${reserved ? " or held ahead by writes under way" : ""}. ${written} ${helps}`, { quota, usage, limit, ...more, ...(byKey ? { by: "key" } : {}) });
}
