/**
 * R2 and KV (the real local bindings) with every operation logged by kind and grouped into round
 * trips: what test/lib/api/routes/call-cost.test.ts and the sync manifest's cost test assert.
 */
import { env } from "cloudflare:workers";
import { r2Driver } from "../../lib/storage/drivers/r2.js";
import { workersKeyValue } from "../../lib/storage/kv-workers.js";
import type { KeyValueStore, StorageDriver } from "../../lib/storage/types.js";

/** What a key is, for the op log: the kind of object, never the tenant or path. */
function kindOf(key: string): string {
  if (key.startsWith("apikey/")) return "apikey";
  if (key.startsWith("policy/")) return "policy";
  if (key.startsWith("rec/")) return "record";
  if (/^(t\/[^/]+|admin)\/idem\//.test(key)) return "idempotency";
  if (/\/meta\.json$/.test(key)) return "meta.json";
  if (/^t\/[^/]+\/custom-tools\.json$/.test(key)) return "custom-tools.json";
  if (/\/x\/index\/seg\/|\/x\/.*seg\//.test(key)) return "index";
  if (/^t\/[^/]+\/packs?\//.test(key) || /\/pack\//.test(key)) return "pack";
  if (/^t\/[^/]+\/manifests?\//.test(key) || /\/manifest\//.test(key)) return "manifest";
  if (/\/x\//.test(key)) return `internal:${key.replace(/^.*\/x\//, "").split("/")[0]}`;
  if (/^t\/[^/]+\/w\/[^/]+\/f\//.test(key) || /\/f\//.test(key)) return "file";
  return `other:${key.slice(0, 40)}`;
}

/** How long no new operation may start before the waiting ones run, as one round trip. */
const QUIET_MS = 40;

/**
 * R2 and KV with every operation logged. Index operations (upkeep a write may leave to waitUntil)
 * are held until `release()` (or 1 s) and logged when they run: one the route awaited would keep
 * the response waiting and show up on its path.
 *
 * Round trips: an operation does not start at once; it waits until no other operation has been
 * asked for during QUIET_MS, then all the waiting ones run together as one step (`steps` numbers
 * them). Operations a call starts side by side share a step; one that needs another's answer
 * comes a step later. So the steps of a call are its round trips, whatever the machine's speed.
 */
export function countingStores(opts: { /** false: operations run at once, unnumbered (counts only, no round trips: many calls in flight) */ steps?: boolean } = {}) {
  const log: string[] = [];
  /** The step of each entry of `log`. */
  const steps: number[] = [];
  /** The key of every operation (the isolation test checks whose they are). */
  const keys: string[] = [];
  let step = 0;
  let waiting: (() => void)[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const nextStep = () =>
    new Promise<void>((run) => {
      waiting.push(run);
      clearTimeout(timer);
      timer = setTimeout(() => {
        step++;
        const go = waiting;
        waiting = [];
        for (const r of go) r();
      }, QUIET_MS);
    });
  let open: () => void = () => {};
  let gate = Promise.resolve();
  const hold = () => {
    gate = new Promise<void>((r) => {
      open = r;
      setTimeout(r, 1000);
    });
  };
  const op = async <T>(what: string, key: string, run: () => Promise<T>): Promise<T> => {
    const kind = kindOf(key);
    if (kind === "index") await gate;
    if (opts.steps !== false) await nextStep();
    log.push(`${what} ${kind}`);
    steps.push(step);
    keys.push(key);
    return run();
  };
  const base = r2Driver(env.FILES);
  const storage: StorageDriver = {
    name: base.name,
    ...(base.contentEtags ? { contentEtags: true } : {}),
    head: (k) => op("r2.head", k, () => base.head(k)),
    get: (k, o) => op("r2.get", k, () => base.get(k, o)),
    put: (k, b, o) => op("r2.put", k, () => base.put(k, b, o)),
    delete: (k) => op("r2.delete", typeof k === "string" ? k : typeof k[0] === "string" ? k[0] : (k[0]?.key ?? ""), () => base.delete(k)),
    list: (o) => op("r2.list", o.prefix, () => base.list(o)),
  };
  const kvBase = workersKeyValue(env.KV);
  const kv: KeyValueStore = {
    get: (k) => op("kv.get", k, () => kvBase.get(k)),
    put: (k, v, o) => op("kv.put", k, () => kvBase.put(k, v, o)),
    delete: (k) => op("kv.delete", k, () => kvBase.delete(k)),
    list: (o) => op("kv.list", o.prefix, () => kvBase.list(o)),
  };
  return { storage, kv, log, steps, keys, hold, release: () => open() };
}

export const sorted = (xs: string[]) => [...xs].sort();

/** The operations of log[from..to) as round trips: one sorted list per step, in order. */
export function roundTrips(stores: { log: string[]; steps: number[] }, from: number, to: number): string[][] {
  const byStep = new Map<number, string[]>();
  for (let i = from; i < to; i++) byStep.set(stores.steps[i]!, [...(byStep.get(stores.steps[i]!) ?? []), stores.log[i]!]);
  return [...byStep.keys()].sort((a, b) => a - b).map((k) => sorted(byStep.get(k)!));
}

/**
 * What a list of logged operations is billed, by class, and in dollars per million such calls:
 * R2's class A (PUT, LIST) $4.50 and class B (GET, HEAD) $0.36 per million, DELETE free (S3 prices
 * them in about the same ratio); KV's reads $0.50, its writes, deletes and lists $5 per million.
 * Counting operations alone hides a trade of cheap HEADs for dear LISTs (a raw PUT's place check was
 * once cut from 9.1 to 7.7 operations per file while its price went up 1.8x): a cost test pins this too.
 */
export function billed(ops: string[]): { classA: number; classB: number; kvRead: number; kvWrite: number; perMillion: number } {
  const n = { classA: 0, classB: 0, kvRead: 0, kvWrite: 0 };
  for (const o of ops) {
    const verb = o.split(" ")[0]!;
    if (verb === "r2.put" || verb === "r2.list") n.classA++;
    else if (verb === "r2.get" || verb === "r2.head") n.classB++;
    else if (verb === "kv.get") n.kvRead++;
    else if (verb === "kv.put" || verb === "kv.delete" || verb === "kv.list") n.kvWrite++;
    else if (verb !== "r2.delete") throw new Error(`billed: no price known for ${o}`);
  }
  const perMillion = Math.round((n.classA * 4.5 + n.classB * 0.36 + n.kvRead * 0.5 + n.kvWrite * 5) * 100) / 100;
  return { ...n, perMillion };
}
