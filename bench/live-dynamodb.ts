/**
 * The live coordinator over DynamoDB (lib/exec/live/dynamodb.ts; issue #29) against dynalite: what its
 * waits cost and add. (1) An idle session: its runner's polls held back to back for `--idle-s`
 * seconds (production timings: LIVE_POLL_MS), the item's reads and writes counted (per idle minute).
 * (2) The hand-over: a command run while the runner's poll has been held `--held-ms` (past the fast
 * interval: the slow one applies), the time until the poll has it; and a command's whole round trip
 * (call → poll → result → the call's answer) on an idle runner, the runner's answer carrying its next
 * poll through the sync route as the runner sends it (POST /v1/sync/live/result with `poll`), and the
 * item's operations per command. Prints one table.
 * `--slow-ms` replaces WAIT_INTERVALS.slow_ms (to weigh another choice).
 * Usage: node bench/run-bundled.mjs bench/live-dynamodb.ts [--idle-s=60] [--samples=20] [--held-ms=2500] [--slow-ms=100]
 */
import { dynamoLiveCoordinator, WAIT_INTERVALS } from "../lib/exec/live/dynamodb.js";
import { liveHub } from "../lib/exec/live/hub.js";
import { LIVE_TIMINGS, liveService } from "../lib/exec/live/service.js";
import { handleSyncLive } from "../lib/sync/live-server.js";
import type { LiveNext } from "../lib/sync/live-types.js";
import type { LiveKey } from "../lib/exec/live/types.js";
import type { LiveStatus } from "../lib/sync/live-types.js";
import { startDynamo } from "../test/support/dynalite.js";
import { percentile } from "./stats.js";

const arg = (name: string, d: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
const idleS = arg("idle-s", 60);
const samples = arg("samples", 20);
const heldMs = arg("held-ms", 2_500);
const intervals = { ...WAIT_INTERVALS, slow_ms: arg("slow-ms", WAIT_INTERVALS.slow_ms) };

const server = await startDynamo();
const table = await server.createTable();
const client = server.client();
const counts = { GetItemCommand: 0, PutItemCommand: 0, DeleteItemCommand: 0 } as Record<string, number>;
client.middlewareStack.add((next, ctx) => async (args) => {
  counts[ctx.commandName as string] = (counts[ctx.commandName as string] ?? 0) + 1;
  return next(args);
}, { step: "initialize" });
const c = dynamoLiveCoordinator({ client, table, secret: "bench-secret-0123456789abcdef", timings: LIVE_TIMINGS, intervals });
const status = (generation: string): LiveStatus => ({ generation, started_at: Date.now(), last_used_at: Date.now(), processes: [], ports: [], wall_ms: 1 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function session(n: number) {
  const key: LiveKey = { tenant: "bench", workspace: "ws", session: `s${n}` };
  const b = await c.begin(key, { wait_ms: 1_000, turn_ms: 60_000 });
  if (!("start" in b)) throw new Error("expected a start");
  const gen = b.start.generation;
  const run = c.run(key, b.turn, { command: "true" }, { timeout_ms: 10_000 });
  await c.next(key, gen, status(gen));
  await c.result(key, gen, { generation: gen, seq: 1, response: { ok: true, result: 0 }, status: status(gen) });
  await run;
  await c.release(key, b.turn);
  return { key, gen };
}

// (1) idle: polls back to back, counted.
const idle = await session(0);
for (const k of Object.keys(counts)) counts[k] = 0;
const t0 = Date.now();
while (Date.now() - t0 < idleS * 1000) await c.next(idle.key, idle.gen, status(idle.gen));
const minutes = (Date.now() - t0) / 60_000;
const perMin = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Math.round(v / minutes)]));

// (2) hand-over to a poll held past the fast interval, and a whole command on an idle runner. Its answer is its
// next poll, posted to the sync route as the runner posts it (the same route on every version of the coordinator).
const handover: number[] = [];
const roundTrip: number[] = [];
const s = await session(1);
const hub = liveHub(liveService(c), undefined);
const claims = { t: s.key.tenant, w: s.key.workspace, r: "live", exp: Date.now() / 1000 + 3600, l: { s: s.key.session, g: s.gen } };
const url = "https://api.example/v1/sync/live/result";
const answerAndPoll = async (seq: number, i: number): Promise<LiveNext> => {
  const body = { generation: s.gen, seq, response: { ok: true, result: i }, status: status(s.gen), poll: {} };
  const res = await handleSyncLive(new Request(url, { method: "POST", body: JSON.stringify(body) }), new URL(url), claims, hub);
  return (await res.json()) as LiveNext;
};
let poll: Promise<LiveNext> = c.next(s.key, s.gen, status(s.gen));
for (const k of Object.keys(counts)) counts[k] = 0;
for (let i = 0; i < samples; i++) {
  await sleep(heldMs + Math.random() * intervals.slow_ms); // at any phase of the poll's reads
  const t = performance.now();
  const call = c.call(s.key, { command: `echo ${i}` }, { wait_ms: 1_000, turn_ms: 60_000, timeout_ms: 10_000 });
  const got = await poll;
  handover.push(performance.now() - t);
  if (!("command" in got)) throw new Error(`expected a command: ${JSON.stringify(got)}`);
  poll = answerAndPoll(got.command.seq, i);
  await call;
  roundTrip.push(performance.now() - t);
}
const perCommand = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, (v / samples).toFixed(1)]));
await c.end(s.key, "deleted");
await poll;
await server.stop();

const ms = (xs: number[], p: number) => `${percentile([...xs].sort((a, b) => a - b), p).toFixed(1)} ms`;
console.log(`intervals: ${intervals.fast_ms} ms for ${intervals.fast_for_ms} ms, then ${intervals.slow_ms} ms; poll held ${LIVE_TIMINGS.poll_ms} ms`);
console.log(`| idle session, per minute (${idleS} s) | GetItem ${perMin.GetItemCommand} | PutItem ${perMin.PutItemCommand} | DeleteItem ${perMin.DeleteItemCommand ?? 0} |`);
console.log(`| command to a poll held ${heldMs} ms: poll has it (p50 / p99 of ${samples}) | ${ms(handover, 50)} / ${ms(handover, 99)} |`);
console.log(`| the whole call on an idle runner (call → poll → result → answer) | ${ms(roundTrip, 50)} / ${ms(roundTrip, 99)} |`);
console.log(`| item operations per command (its idle wait before included: ${heldMs} ms held) | GetItem ${perCommand.GetItemCommand} | PutItem ${perCommand.PutItemCommand} |`);
