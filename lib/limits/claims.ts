/**
 * Idempotency-Key claims in the tenant's limits object (lib/api/idempotency.ts): the claim that a
 * request with a key runs, taken in the same round trip as the call's token (takeCall with a claim),
 * so a first run with a key costs no storage operation before its handler. The object answers one
 * request at a time, and its storage read and write of a claim happen within one request, so two
 * requests with one key never both take it.
 *
 * A claim lives in the object's storage (`idem/<sha-256 of the key>`) until `expires` (the kept
 * answer's 24 h); its lease (`lease_until`) bounds how long a run holds the key before a retry may
 * take it over (after checking that no answer was kept). The answer itself is kept in the bucket,
 * not here: it can be megabytes.
 */
export interface Claim {
  /** This claim's id: a takeover or a release names the claim it saw. */
  id: string;
  started: number;
  lease_until: number;
  expires: number;
}

export interface ClaimAsk {
  /** The key's SHA-256, hex. */
  key: string;
  leaseMs: number;
  keepMs: number;
  /** Take over this claim (its lease is over and no answer was kept); absent: a first claim. */
  over?: string;
}

/** taken: this request runs under `claim`; else `claim` is the one that holds the key. */
export type ClaimAnswer = { taken: boolean; claim: Claim };

/** Where claims are kept: the object's storage (durable-object.ts) or a Map (memory). */
export interface ClaimStore {
  get(key: string): Promise<Claim | undefined>;
  put(key: string, claim: Claim): Promise<void>;
  delete(key: string): Promise<void>;
}

export const CLAIM_PREFIX = "idem/";

/** A new claim of `ask` at `now`: the one maker of claims (the object's, memory's and DynamoDB's), with an id that never repeats. */
export const newClaim = (ask: ClaimAsk, now: number): Claim => ({ id: crypto.randomUUID(), started: now, lease_until: now + ask.leaseMs, expires: now + ask.keepMs });

/** Takes the key when nobody holds it (or its claim expired), or takes over the claim `over` once its lease is over. */
export async function claimKey(store: ClaimStore, ask: ClaimAsk, now: number): Promise<ClaimAnswer> {
  const current = await store.get(CLAIM_PREFIX + ask.key);
  const free = !current || current.expires <= now || (ask.over !== undefined && current.id === ask.over && current.lease_until <= now);
  if (!free) return { taken: false, claim: current };
  const claim = newClaim(ask, now);
  await store.put(CLAIM_PREFIX + ask.key, claim);
  return { taken: true, claim };
}

/** Drops claim `id` (its run answered with nothing to keep: a retry runs again); a newer claim stands. */
export async function releaseClaim(store: ClaimStore, key: string, id: string): Promise<boolean> {
  const current = await store.get(CLAIM_PREFIX + key);
  if (current?.id !== id) return false;
  await store.delete(CLAIM_PREFIX + key);
  return true;
}

/** Claims in a Map: exact within one process (tests, single-process runtimes). */
export function memoryClaims(): ClaimStore {
  const m = new Map<string, Claim>();
  return {
    get: async (k) => m.get(k),
    put: async (k, c) => void m.set(k, c),
    delete: async (k) => void m.delete(k),
  };
}
