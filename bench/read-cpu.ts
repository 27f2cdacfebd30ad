/**
 * Where a `read` spends its server CPU (issue #11 §4): latency and the CPU time of every process of
 * `wrangler dev` (workerd and wrangler's Node, from /proc: robust on a shared machine where client
 * latency is not) per request, for the floor's GET, its parts side by side (bench/read-cpu-worker.ts)
 * and Toolshed's `read` with and without its usage line. 20 files of 15 KB, one session: after the
 * warm-up every read is a repeat read; "read-first" reads in a new session each time (the session's
 * first read of the file: its record is read and written after the answer). Variants are measured
 * in turn, `rounds` times.
 *
 *   npx node bench/read-cpu.ts [--n=200] [--rounds=3] [--only=get,read,read-quiet] [--lines=300]
 *
 * --lines: lines of ~50 bytes per file (300: ~15 KB; the bench's read targets are 1-64 KB).
 */
import { cpuOf } from "./proc-cpu.ts";
import { descendants, setupTenant, startWorker } from "../test/support/wrangler-dev.ts";

const arg = (name: string, dflt: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const N = Number(arg("n", "200"));
const ROUNDS = Number(arg("rounds", "3"));
const only = arg("only", "")?.split(",").filter(Boolean);
const LINES = Number(arg("lines", "300"));

const w = await startWorker({ config: "bench/read-cpu.wrangler.toml" });
try {
  const pids = [w.child.pid!, ...descendants(w.child.pid!)];
  const t = await setupTenant(w, "probe");
  const content = Array.from({ length: LINES }, (_, i) => `export const v${i} = ${i}; // some line of code here`).join("\n") + "\n";
  for (let i = 0; i < 20; i++) await fetch(`${t.base}/files/src/f${i}.ts`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": String(Buffer.byteLength(content)) }, body: content });
  const probe = (mode: string) => async (i: number) => {
    const r = await fetch(`${w.url}/__probe`, { method: "POST", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ mode, tenant: "probe", ws: "main", path: `src/f${i % 20}.ts` }) });
    await r.text();
    if (!r.ok) throw new Error(`probe ${mode}: ${r.status}`);
  };
  let calls = 0;
  const read = (quiet: boolean, first = false) => async (i: number) => {
    const r = await fetch(`${t.base}/tools/read`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": first ? `f${calls++}` : "s1", ...(quiet ? { "x-probe-quiet": "1" } : {}) }, body: JSON.stringify({ file_path: `src/f${i % 20}.ts` }) });
    const b = await r.text();
    if (!r.ok) throw new Error(`read: ${b}`);
  };
  await probe("kvput")(0);
  const variants: Record<string, (i: number) => Promise<void>> = { noop: probe("noop"), get: probe("get"), "get+meta": probe("get+meta"), "get+kv": probe("get+kv"), "get+meta+kv": probe("get+meta+kv"), "get+log": probe("get+log"), "get+body": probe("get+body"), read: read(false), "read-quiet": read(true), "read-first": read(false, true) };
  const names = Object.keys(variants).filter((n) => !only.length || only.includes(n));
  const res: Record<string, { ms: number[]; cpu: number[]; by: Record<string, number> }> = {};
  for (const n of names) {
    for (let i = 0; i < 30; i++) await variants[n]!(i); // warm-up: every file read once by the session
    res[n] = { ms: [], cpu: [], by: {} };
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const n of names) {
      const c0 = cpuOf(pids);
      for (let i = 0; i < N; i++) {
        const s = performance.now();
        await variants[n]!(i);
        res[n]!.ms.push(performance.now() - s);
      }
      const c1 = cpuOf(pids);
      res[n]!.cpu.push((c1.total - c0.total) / N);
      for (const k of Object.keys(c1.by)) res[n]!.by[k] = (res[n]!.by[k] ?? 0) + (c1.by[k]! - (c0.by[k] ?? 0)) / N / ROUNDS;
    }
  }
  const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!;
  console.log(`${N} x ${ROUNDS} per variant; server CPU = every process of wrangler dev, ms per request`);
  for (const n of names) {
    const v = res[n]!;
    const cpu = v.cpu.reduce((a, b) => a + b, 0) / v.cpu.length;
    console.log(`${n.padEnd(12)} p50 ${pct(v.ms, 0.5).toFixed(2).padStart(6)} ms  p90 ${pct(v.ms, 0.9).toFixed(2).padStart(6)}  server cpu ${cpu.toFixed(2)} [${v.cpu.map((x) => x.toFixed(2)).join(" ")}]  ${Object.entries(v.by).map(([k, x]) => `${k}=${x.toFixed(2)}`).join(" ")}`);
  }
} finally {
  await w.stop();
}
