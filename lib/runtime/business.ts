/**
 * The operator's switch for the business layer (docs/usage.md, docs/limits-and-quotas.md,
 * docs/audit.md): `TOOLSHED_BUSINESS_OFF` names the parts this deployment runs without, for
 * self-hosters who bill, limit and audit elsewhere (their gateway, their own logs).
 *
 *   unset or ""   everything on (the default)
 *   all           metering, limits and audit off
 *   metering,...  a comma list of the parts to turn off: metering, limits, audit
 *
 * Off means not wired at all (lib/runtime/workers.ts, commonDeps): metering off leaves no usage sink
 * and no usage store (no log line, no Durable Object call; GET /v1/usage answers UNAVAILABLE);
 * limits off leaves no limits store (no Durable Object round trip in the guard, no concurrent-run
 * slot, no quota check; the limits routes answer UNAVAILABLE); audit off writes no entry (the guard
 * and the run path skip it; the audit routes answer UNAVAILABLE). Idempotency needs no switch: it
 * costs nothing on a request without an Idempotency-Key header.
 */
export const BUSINESS_PARTS = ["metering", "limits", "audit"] as const;
export type BusinessPart = (typeof BUSINESS_PARTS)[number];

export interface BusinessEnv {
  /** The business layer's parts this deployment runs without: "all", or a comma list of metering, limits, audit. */
  TOOLSHED_BUSINESS_OFF?: string;
}

/** The parts the operator turned off; throws on a value that names none, so a typo never leaves a part on unseen. */
export function businessPartsOff(env: BusinessEnv): ReadonlySet<BusinessPart> {
  const raw = (env.TOOLSHED_BUSINESS_OFF ?? "").trim().toLowerCase();
  if (raw === "") return new Set();
  if (raw === "all") return new Set(BUSINESS_PARTS);
  const parts = raw.split(",").map((p) => p.trim()).filter(Boolean);
  const unknown = parts.filter((p) => !(BUSINESS_PARTS as readonly string[]).includes(p));
  if (unknown.length) throw new Error(`TOOLSHED_BUSINESS_OFF: unknown part ${JSON.stringify(unknown.join(","))}. Set it to "all" or a comma list of ${BUSINESS_PARTS.join(", ")} (or leave it unset: everything on).`);
  return new Set(parts as BusinessPart[]);
}
