/**
 * The usage sink in front of a UsageStore (store.ts): each record is stamped with its time and
 * held in the isolate's one batch (lib/shared/held-batches.ts) for at most a second or 100
 * records, then handed over under the waitUntil of a request still alive: one log message of
 * JSON lines (as heldUsageLog) and one `store.record` of the batch. So a call's answer never
 * waits on the store, and a burst costs one store write per tenant per second per isolate.
 *
 * What a crash can lose: the isolate's batch not yet handed over (≤ 1 s, ≤ 100 records), and a
 * handover whose store write failed (logged as a warning naming the count; its log lines are out).
 * A record emitted without waitUntil (tests, doors that do not pass it) is written at once, not held.
 * Lambda holds nothing (holdMs 0, lib/runtime/aws.ts): its request's waitUntil waits for the record's write.
 */
import type { UsageRecord } from "./record.js";
import { HeldBatches, type HoldOptions } from "../../shared/held-batches.js";
import type { UsageSink } from "./usage.js";
import type { StoredRecord, UsageStore } from "./store.js";

export const USAGE_HOLD = { holdMs: 1_000, maxItems: 100 } as const;

const line = (r: StoredRecord) => JSON.stringify({ type: "toolshed.usage", ...r, at: new Date(r.at).toISOString() });

export function heldUsageStore(store: UsageStore, opts: HoldOptions & { log?: boolean; now?: () => number } = {}): UsageSink & { settled(): Promise<void> } {
  const { log = true, now = Date.now, ...hold } = opts;
  const write = async (records: StoredRecord[]) => {
    if (log) console.log(records.map(line).join("\n"));
    try {
      await store.record(records);
    } catch (e) {
      console.warn(`usage store: ${records.length} records not stored`, e);
    }
  };
  const held = new HeldBatches<StoredRecord>(write, { ...USAGE_HOLD, maxBytes: 64 * 1024, ...hold }, (r) => line(r).length);
  const stamp = (u: UsageRecord): StoredRecord => ({ ...u, at: now() });
  const direct = new Set<Promise<void>>();
  const atOnce = (u: UsageRecord) => {
    const p = write([stamp(u)]).finally(() => direct.delete(p));
    direct.add(p);
  };
  return Object.assign(atOnce, {
    held: (u: UsageRecord) => held.add("usage", stamp(u)),
    /** Settles once the records written at once (no waitUntil) so far are stored; held ones settle in their requests' waitUntil. */
    settled: () => Promise.all([...direct]).then(() => undefined),
  });
}
