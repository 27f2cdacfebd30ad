/**
 * Time to interactive (#31 §4), the figure third parties publish for hosted sandboxes: create a
 * workspace (POST /v1/workspaces), then `bash node -v` in it, end to end from the client, through
 * the API and the bash runner over the local Invoke endpoint (the runner protocol production uses on
 * Lambda: bench/bash-e2e.ts LocalRunner). Rows: sequential (p50/p95 of --tti-runs, default 30) and
 * bursts (--tti-bursts, default 10,50: that many create + node -v started at once; p50/p95 of each
 * one's own time, and the burst's wall time in the note).
 *
 * Its own tenant (made with the admin token) whose concurrent_runs and calls_per_minute are raised
 * above the largest burst: the defaults (8 runs at once) would refuse most of a burst of 50, and the
 * row measures speed, not the limit. Every workspace it made is deleted after the timing.
 *
 * Alone: `npx node bench/time-to-interactive.ts [--tti-runs=30] [--tti-bursts=10,50]` (builds and
 * starts the runner and `wrangler dev` itself). In `npm run bench`: the `tti` row source (--skip=tti).
 * Alone, the notes also give the CPU each call costs (from /proc: workerd, wrangler's Node, the runner
 * with the sandboxes it reaped, this client) and, per burst, the least wall time that CPU allows on
 * this machine's cores (all of it spread evenly) beside the measured one, and the busiest single
 * thread of wrangler dev (workerd runs the Worker's JavaScript on one thread: one core at most).
 */
import { availableParallelism } from "node:os";
import type { Cell } from "./stats.ts";
import { percentile } from "./stats.ts";
import type { Row } from "./table.ts";
import type { RowContext, RowSource } from "./lifecycle.ts";

/** The anchors' published figures (computesdk/benchmarks, May 2026), ms: sequential p50 and a burst of 100. */
export const ANCHORS = { daytona: { p50: 186, burst100: 367 }, e2b: { p50: 491, burst100: 822 } } as const;

const round = (x: number) => Math.round(x * 10) / 10;

function cellOf(samples: number[], errors: number, error?: string): Cell {
  const s = [...samples].sort((a, b) => a - b);
  if (!s.length) return { n: 0, p50: NaN, p99: NaN, mean: NaN, errors, ...(error ? { error } : {}) };
  return { n: s.length, p50: round(percentile(s, 50)), p95: round(percentile(s, 95)), p99: round(percentile(s, 99)), mean: round(s.reduce((a, b) => a + b, 0) / s.length), errors, ...(error ? { error } : {}) };
}

interface Ready {
  url: string;
  key: string;
}

/** A tenant of its own, with limits above the largest burst. */
async function tenantFor(url: string, adminToken: string, largestBurst: number): Promise<Ready> {
  const tenant = `tti-${Date.now().toString(36)}`;
  const admin = async (method: string, path: string, body: unknown) => {
    const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${(await r.text()).slice(0, 200)}`);
    return r.json() as Promise<any>;
  };
  await admin("POST", "/v1/admin/tenants", { id: tenant });
  await admin("PUT", `/v1/admin/tenants/${tenant}/limits`, { concurrent_runs: largestBurst * 2, calls_per_minute: 100_000 });
  const { key } = await admin("POST", `/v1/admin/tenants/${tenant}/keys`, {});
  return { url, key };
}

/** One create + `node -v`: its wall time; throws unless node answered. */
async function createAndRun(t: Ready, id: string): Promise<number> {
  const headers = { authorization: `Bearer ${t.key}`, "content-type": "application/json" };
  const started = performance.now();
  const made = await fetch(`${t.url}/v1/workspaces`, { method: "POST", headers, body: JSON.stringify({ id }) });
  if (made.status !== 201) throw new Error(`create ${id}: ${made.status} ${(await made.text()).slice(0, 200)}`);
  await made.arrayBuffer();
  const ran = await fetch(`${t.url}/v1/workspaces/${id}/tools/bash`, { method: "POST", headers, body: JSON.stringify({ command: "node -v" }) });
  const body = (await ran.json()) as { ok: boolean; output?: string; error?: { code: string; message: string } };
  const ms = performance.now() - started;
  if (!body.ok || !/v\d+\.\d+/.test(body.output ?? "")) throw new Error(`node -v in ${id}: ${ran.status} ${JSON.stringify(body.error ?? body.output).slice(0, 200)}`);
  return ms;
}

/**
 * CPU time (ms) so far of each server part (standalone: the API's processes, the runner with its
 * reaped sandboxes); keys "thread:<part>:<id>" are single threads inside a part (counted in it
 * already), of which the busiest is reported: one thread can use one core at most.
 */
export type CpuMeter = () => Record<string, number>;

const THREAD = "thread:";

/** CPU spent by each part between two readings, its total, and the busiest single thread's (ms). */
function cpuSpent(meter: CpuMeter | undefined, before: Record<string, number> | undefined) {
  if (!meter || !before) return null;
  const now = meter();
  const delta = Object.entries(now).map(([k, v]) => [k, v - (before[k] ?? 0)] as const);
  const parts = Object.fromEntries(delta.filter(([k]) => !k.startsWith(THREAD)));
  const threads = delta.filter(([k]) => k.startsWith(THREAD)).sort((a, b) => b[1] - a[1]);
  const busiest = threads[0] ? { ms: threads[0][1], of: threads[0][0].split(":")[1]! } : { ms: 0, of: "-" };
  return { parts, busiest, total: Object.values(parts).reduce((a, b) => a + b, 0) };
}

const fmtParts = (parts: Record<string, number>, n: number) => Object.entries(parts).map(([k, v]) => `${k} ${Math.round(v / n)}`).join(", ");

export async function timeToInteractive(t: Ready, opts: { runs: number; bursts: number[]; log: (s: string) => void; cpu?: CpuMeter; cores?: number; machine?: () => { busy: number; idle: number; iowait: number } }): Promise<Row[]> {
  const cores = opts.cores ?? availableParallelism();
  const client = () => {
    const u = process.cpuUsage();
    return { client: (u.user + u.system) / 1000 };
  };
  const meter: CpuMeter | undefined = opts.cpu ? () => ({ ...opts.cpu!(), ...client() }) : undefined;
  const run = Date.now().toString(36);
  const made: string[] = [];
  const rows: Row[] = [];
  try {
    // Two untimed first: the runner's and the Worker's first use of everything.
    for (let i = 0; i < 2; i++) await createAndRun(t, `tti-${run}-w${i}`).finally(() => made.push(`tti-${run}-w${i}`));
    const seq: number[] = [];
    let errors = 0;
    let firstError: string | undefined;
    const seqCpu0 = meter?.();
    for (let i = 0; i < opts.runs; i++) {
      const id = `tti-${run}-s${i}`;
      made.push(id);
      try {
        seq.push(await createAndRun(t, id));
      } catch (e) {
        errors++;
        firstError ??= (e as Error).message;
      }
    }
    const seqCpu = cpuSpent(meter, seqCpu0);
    // CPU per call (server parts and the client): what a burst of n needs of the machine's cores at the least.
    const perCall = seqCpu ? seqCpu.total / opts.runs : null;
    const cpuNote = seqCpu ? `; CPU per call ${Math.round(perCall!)} ms (${fmtParts(seqCpu.parts, opts.runs)})` : "";
    const cell = cellOf(seq, errors, firstError);
    rows.push({ op: "time to interactive (create + bash node -v), sequential", size: 0, cells: { toolshed: cell }, note: `Daytona p50 ${ANCHORS.daytona.p50} ms, E2B ${ANCHORS.e2b.p50} ms (published)${cpuNote}` });
    opts.log(`  sequential x${cell.n}: p50 ${cell.p50} p95 ${cell.p95} ms${cpuNote}${errors ? `, ${errors} errors: ${firstError}` : ""}`);
    for (const n of opts.bursts) {
      const ids = Array.from({ length: n }, (_, i) => `tti-${run}-b${n}-${i}`);
      made.push(...ids);
      const cpu0 = meter?.();
      const machine0 = opts.machine?.();
      const started = performance.now();
      const settled = await Promise.allSettled(ids.map((id) => createAndRun(t, id)));
      const wall = performance.now() - started;
      const spent = cpuSpent(meter, cpu0);
      const machine1 = opts.machine?.();
      // The whole machine meanwhile (other processes too): busy, idle and I/O-wait core-ms as shares of cores x wall.
      const share = (a: number, b: number) => `${Math.round(((a - b) / (cores * wall)) * 100)}%`;
      const machineNote = machine0 && machine1 ? `; machine meanwhile: busy ${share(machine1.busy, machine0.busy)}, idle ${share(machine1.idle, machine0.idle)}, I/O wait ${share(machine1.iowait, machine0.iowait)} of ${cores} cores` : "";
      // The CPU floor of the burst: all of its CPU spread over every core, nothing waiting on anything else.
      const burstCpu = spent
        ? `; CPU ${Math.round(spent.total)} ms (${Math.round(spent.total / n)} per call: ${fmtParts(spent.parts, n)}) / ${cores} cores = ${Math.round(spent.total / cores)} ms at the least, vs ${Math.round(wall)} ms wall${perCall ? ` (sequential CPU x ${n} / ${cores} = ${Math.round((perCall * n) / cores)} ms)` : ""}; busiest thread ${Math.round(spent.busiest.ms)} ms (${spent.busiest.of})${machineNote}`
        : "";
      const ok = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
      const failed = settled.flatMap((s) => (s.status === "rejected" ? [String((s.reason as Error)?.message ?? s.reason)] : []));
      const c = cellOf(ok, failed.length, failed[0]);
      rows.push({ op: `time to interactive, burst of ${n} (each)`, size: 0, cells: { toolshed: c }, note: `all ${n} done in ${Math.round(wall)} ms${burstCpu}; bursts of 100 published: Daytona ${ANCHORS.daytona.burst100} ms, E2B ${ANCHORS.e2b.burst100} ms` });
      opts.log(`  burst ${n}: p50 ${c.p50} p95 ${c.p95} ms, all done in ${Math.round(wall)} ms${burstCpu}${failed.length ? `, ${failed.length} failed: ${failed[0]}` : ""}`);
    }
  } finally {
    for (const id of made) await fetch(`${t.url}/v1/workspaces/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } }).then((r) => r.arrayBuffer()).catch(() => {});
  }
  return rows;
}

const optionsOf = (arg: RowContext["arg"]) => ({ runs: Number(arg("tti-runs", "30")), bursts: arg("tti-bursts", "10,50").split(",").filter(Boolean).map(Number).filter((n) => n > 0) });

/** The `tti` row source of `npm run bench` (bench/run.ts). */
export const timeToInteractiveRows: RowSource = async (ctx) => {
  const op = "time to interactive (create + bash node -v)";
  if (!ctx.bash) return [{ op, size: 0, cells: {}, note: "n/a (no bash runner)" }];
  if (!ctx.adminToken) return [{ op, size: 0, cells: {}, note: "n/a (no admin token to raise the tenant's concurrent_runs for the bursts)" }];
  const o = optionsOf(ctx.arg);
  return timeToInteractive(await tenantFor(ctx.url, ctx.adminToken, Math.max(1, ...o.bursts)), { ...o, log: ctx.log });
};

if (import.meta.url === `file://${process.argv[1]}`) {
  const { LocalRunner } = await import("./bash-e2e.ts");
  const { descendants, freePort, startWorker } = await import("../test/support/wrangler-dev.ts");
  const { commOf, cpuOf, machineCpu, threadsOf } = await import("./proc-cpu.ts");
  const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
  LocalRunner.build();
  const runner = new LocalRunner(await freePort());
  await runner.start();
  const port = await freePort();
  const w = await startWorker({ port, vars: runner.workerVars(port) });
  try {
    const o = optionsOf(arg);
    // The API: every process of wrangler dev (workerd, wrangler's Node); the runner: its process and the sandboxes it reaped.
    const apiPids = () => [w.child.pid!, ...descendants(w.child.pid!)];
    // workerd runs the Worker's JavaScript (the API, its Durable Objects) on one thread: its share is the part one core bounds.
    const cpu = () => {
      const api = cpuOf(apiPids()).by;
      const named = [...apiPids().map((p) => [p, commOf(p) === "workerd" ? "workerd" : "wrangler"] as const), ...(runner.pid ? [[runner.pid, "runner"] as const] : [])];
      const threads = named.flatMap(([p, of]) => Object.entries(threadsOf(p)).map(([tid, ms]) => [`thread:${of}:${p}/${tid}`, ms] as const));
      return { workerd: api.workerd ?? 0, wrangler: Object.entries(api).reduce((a, [k, v]) => (k === "workerd" ? a : a + v), 0), runner: cpuOf(runner.pid ? [runner.pid] : [], { reaped: true }).total, ...Object.fromEntries(threads) };
    };
    const rows = await timeToInteractive(await tenantFor(w.url, w.adminToken, Math.max(1, ...o.bursts)), { ...o, cpu, machine: machineCpu, log: (s) => console.error(`[tti] ${s}`) });
    for (const r of rows) console.log(JSON.stringify(r));
  } finally {
    await w.stop();
    await runner.stop();
  }
}
