/**
 * What tracing costs per call (docs/tracing.md), in Node: a read-sized call shape (auth KV get,
 * workspace record get, file get, record put: 4 storage/KV operations) over the memory driver,
 * with tracing off (no decorator: the deps as they are) and on (a root span, 4 child spans, the
 * buffer; the export's POST is not counted: it goes to a collector after the answer on Workers).
 *
 *   npx esbuild bench/trace-overhead.ts --bundle --platform=node --format=esm --outfile=/tmp/trace-overhead.mjs && node /tmp/trace-overhead.mjs [--calls=20000]
 */
import { createTracer } from "../lib/shared/trace.js";
import { memoryDriver } from "../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../lib/storage/kv-over-storage.js";
import { tracedKeyValue, tracedStorage } from "../lib/storage/traced.js";
import type { KeyValueStore, StorageDriver } from "../lib/storage/types.js";

const calls = Number(process.argv.find((a) => a.startsWith("--calls="))?.slice(8) ?? 20000);
const storage = memoryDriver();
const kv = storageKeyValue(memoryDriver(), "kv/");
await storage.put("t/a/w/main/meta.json", "{}");
await storage.put("t/a/w/main/f/a.txt", "hello\n");
await kv.put("apikey/x", "{}");

const call = async (s: StorageDriver, k: KeyValueStore) => {
  await k.get("apikey/x");
  await s.get("t/a/w/main/meta.json");
  const got = await s.get("t/a/w/main/f/a.txt");
  await got?.body.cancel();
  await k.put("rec/a/main/s/a.txt", "{}");
};

let exported = 0;
const tracer = createTracer({ export: async (spans) => void (exported += spans.length), maxBuffered: 1_000_000 });
const tStorage = tracedStorage(storage, tracer);
const tKv = tracedKeyValue(kv, tracer);

/** µs per call of each variant, measured in interleaved rounds (the machine's load hits all alike); the median round. */
async function measure(variants: Record<string, () => Promise<unknown>>, rounds = 15): Promise<Record<string, number>> {
  const per = Math.max(200, Math.floor(calls / rounds));
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (const one of Object.values(variants)) for (let i = 0; i < 1000; i++) await one(); // warm up
  for (let r = 0; r < rounds; r++)
    for (const [label, one] of Object.entries(variants)) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < per; i++) await one();
      samples[label]!.push(Number(process.hrtime.bigint() - t0) / 1000 / per);
    }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, median(xs)]));
}

const us = await measure({
  "off (no tracer: deps unwrapped)": () => call(storage, kv),
  "on, outside any span (decorators only)": () => call(tStorage, tKv),
  "on, in a root span (1 + 4 spans)": () => tracer.span("POST /v1/workspaces/:ws/tools/read", () => call(tStorage, tKv), { kind: "server" }),
});
await tracer.flush();
for (const [label, v] of Object.entries(us)) console.log(`${label.padEnd(44)} ${v.toFixed(2)} µs/call (median of interleaved rounds)`);
const [off, idle, on] = Object.values(us) as [number, number, number];
console.log(`spans exported: ${exported}; on − off: ${(on - off).toFixed(2)} µs/call (${((on - off) / 5).toFixed(2)} µs/span); decorators outside a span: ${(idle - off).toFixed(2)} µs/call`);
