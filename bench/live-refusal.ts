/**
 * The cost of a refusal past concurrent_runs when the limit is full of live sandboxes (lib/exec/limited.ts
 * acquireSlot; docs/limits-and-quotas.md): N sessions each hold a current live generation and its slot;
 * a run past the limit is refused after asking each holder's coordinator (its status, at most
 * HOLDERS_ASKED = 32, in parallel) whether it still runs. Timed: that refused acquireSlot, with the
 * coordinator requests and (on DynamoDB) the table's operations it made. Two backends: memory (the
 * limits store and coordinator in process: the code's own floor) and DynamoDB through dynalite (the
 * AWS limits item and live coordinator, one local server; a real table adds its network round trip per
 * request, ~5–10 ms within a region). The Durable Object backend (Workers) is not measured here.
 * Usage: node bench/run-bundled.mjs bench/live-refusal.ts [--samples=20] [--holders=1,8,32,64]
 */
import { performance } from "node:perf_hooks";
import { acquireSlot } from "../lib/exec/limited.js";
import { dynamoLiveCoordinator } from "../lib/exec/live/dynamodb.js";
import { memoryLiveCoordinator } from "../lib/exec/live/memory.js";
import { LIVE_TIMINGS, liveService } from "../lib/exec/live/service.js";
import type { LiveCoordinator } from "../lib/exec/live/types.js";
import { dynamoLimits } from "../lib/limits/dynamodb.js";
import { memoryLimits, type LimitsStore } from "../lib/limits/store.js";
import { startDynamo } from "../test/support/dynalite.js";
import { percentile } from "./stats.js";

const arg = (name: string, d: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d;
const samples = Number(arg("samples", "20"));
const holderCounts = arg("holders", "1,8,32,64").split(",").map(Number);
const caller = { key_id: "k" };
const LEASE_MS = 15 * 60_000;

/** Fills tenant `t`'s concurrent_runs with `n` live sandboxes (each its session's current generation), then times `samples` refusals. */
async function measure(backend: string, limits: LimitsStore, coordinator: LiveCoordinator, n: number, ops: () => number) {
  let asked = 0;
  const counted: LiveCoordinator = { ...coordinator, status: (key) => (asked++, coordinator.status(key)) };
  const live = liveService(counted, { limits });
  const t = `bench-${backend}-${n}-${Date.now().toString(36)}`;
  await limits.set(t, { concurrent_runs: n });
  for (let i = 0; i < n; i++) {
    const key = { tenant: t, workspace: "w", session: `s${i}` };
    const b = await coordinator.begin(key, { wait_ms: 0, turn_ms: 60_000 });
    if (!("start" in b)) throw new Error(`session ${i}: no generation to start`);
    const d = await limits.acquireRun(t, caller, LEASE_MS, { workspace: "w", session: key.session, generation: b.start.generation });
    if (!d.ok) throw new Error(`slot ${i}: refused`);
  }
  const times: number[] = [];
  let perRefusal = { asked: 0, ops: 0 };
  for (let s = 0; s < samples; s++) {
    const [a0, o0] = [asked, ops()];
    const t0 = performance.now();
    const d = await acquireSlot(limits, t, caller, LEASE_MS, { live });
    times.push(performance.now() - t0);
    if (d.ok) throw new Error("a refusal was expected: every holder is current");
    perRefusal = { asked: asked - a0, ops: ops() - o0 };
  }
  times.sort((x, y) => x - y);
  return { backend, n, p50: percentile(times, 50), p95: percentile(times, 95), ...perRefusal };
}

const rows: Awaited<ReturnType<typeof measure>>[] = [];
for (const n of holderCounts) rows.push(await measure("memory", memoryLimits(), memoryLiveCoordinator(LIVE_TIMINGS), n, () => 0));
const server = await startDynamo();
try {
  const table = await server.createTable();
  const client = server.client();
  let dynamoOps = 0;
  client.middlewareStack.add((next) => async (args) => (dynamoOps++, next(args)), { step: "initialize" });
  const limits = dynamoLimits({ client, table });
  const coordinator = dynamoLiveCoordinator({ client, table, secret: "bench-secret-0123456789abcdef", timings: LIVE_TIMINGS });
  for (const n of holderCounts) rows.push(await measure("dynalite", limits, coordinator, n, () => dynamoOps));
} finally {
  await server.stop();
}
console.log(`refused acquireSlot past concurrent_runs full of live holders (${samples} samples each)`);
console.log("| backend | live holders | coordinator requests | DynamoDB operations | p50 ms | p95 ms |\n|---|---|---|---|---|---|");
for (const r of rows) console.log(`| ${r.backend} | ${r.n} | ${r.asked} | ${r.backend === "memory" ? "-" : r.ops} | ${r.p50.toFixed(2)} | ${r.p95.toFixed(2)} |`);
