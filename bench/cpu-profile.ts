/**
 * Where the API's CPU goes (#31 §3/§4): a V8 CPU profile of workerd (`wrangler dev`'s inspector,
 * Chrome DevTools protocol `Profiler.start/stop`) while a workload runs, summarised as self time by
 * function and by source file (the bundle's source map gives each sample's original file).
 *
 *   npx node bench/cpu-profile.ts uploads [--files=5000] [--batch=1000] [--skip-batches=1] [--top=40] [--out=prof.cpuprofile]
 *   npx node bench/cpu-profile.ts puts [--files=1000] [--inflight=8] [--skip=100] [--top=40] [--out=…] [--cpu-only]
 *   npx node bench/cpu-profile.ts tti [--runs=20] [--top=40] [--out=…]
 *   npx node bench/cpu-profile.ts ops [--profile=read,write,edit] [--calls=200] [--cpu-only] [--top=40] [--out=…]   (bench/cpu-ops.ts)
 *   npx node bench/cpu-profile.ts live [--files=10000] [--calls=40] [--edits=0] [--cpu-only] [--top=40] [--out=…]   (bench/cpu-live.ts)
 *   npx node bench/cpu-profile.ts show saved.cpuprofile     (summarise a saved profile again)
 *
 * --cpu-only (uploads): no profiler; the CPU workerd spent (/proc) over the timed batches and the
 * index upkeep after them (3 s), per batch and per 1,000 files: the figure load disturbs least.
 *
 * puts: bench/.data/10000's first --files files through one PUT /files/{path} each, --inflight at a time
 * (as bench/uploads.ts), into a fresh workspace; the first --skip files are untimed warm-up outside the
 * profile; --cpu-only as for uploads (per 1,000 files, the upkeep after them included).
 *
 * uploads: bench/.data/10000's first --files files through POST …/uploads (NDJSON, mode=all), one batch
 * in flight; the first --skip-batches batches are untimed warm-up outside the profile. tti: create a
 * workspace + `bash node -v` (the local runner over its Invoke endpoint), 2 untimed, then --runs profiled.
 * `--out` writes the raw profile (open it in Chrome DevTools' Performance panel).
 */
import { readFileSync, readdirSync, writeFileSync, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { SourceMap } from "node:module";
import { descendants, freePort, startWorker, type WorkerProcess } from "../test/support/wrangler-dev.ts";
import { commOf, cpuOf } from "./proc-cpu.ts";
import { ops } from "./cpu-ops.ts";
import { live } from "./cpu-live.ts";

const arg = (name: string, dflt: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const mode = process.argv[2] ?? "uploads";

interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

/** A CDP session over the inspector's WebSocket. */
async function inspector(port: number) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl: string; title?: string }[];
  const target = targets.find((t) => !/proxy/i.test(t.title ?? "")) ?? targets[0];
  if (!target) throw new Error(`no inspector target on port ${port}`);
  // The inspector proxy wants an Origin it knows (miniflare ALLOWED_ORIGIN_HOSTNAMES); undici takes headers here.
  const ws = new WebSocket(target.webSocketDebuggerUrl, { headers: { origin: `http://127.0.0.1:${port}` } } as any);
  await new Promise((ok, fail) => {
    ws.addEventListener("open", ok);
    ws.addEventListener("error", fail);
  });
  let id = 0;
  const waiting = new Map<number, (r: any) => void>();
  ws.addEventListener("message", (m: { data: unknown }) => {
    const msg = JSON.parse(String(m.data)) as { id?: number };
    if (msg.id && waiting.has(msg.id)) {
      waiting.get(msg.id)!(msg);
      waiting.delete(msg.id);
    }
  });
  const send = (method: string, params: unknown = {}) => new Promise<any>((ok, fail) => {
    const n = ++id;
    waiting.set(n, (r) => (r.error ? fail(new Error(`${method}: ${JSON.stringify(r.error)}`)) : ok(r.result)));
    ws.send(JSON.stringify({ id: n, method, params }));
  });
  return { send, close: () => ws.close() };
}

/** The bundle wrangler dev runs and its source map (the newest .wrangler/tmp/dev-*, beside the config: the root's or bench/'s). */
function bundleMap(): { sm: SourceMap; file: string; raw: string } | null {
  const dirs = [".wrangler/tmp", "bench/.wrangler/tmp"].filter((tmp) => existsSync(tmp))
    .flatMap((tmp) => readdirSync(tmp).filter((d) => d.startsWith("dev-")).map((d) => join(tmp, d)))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  for (const d of dirs) {
    const js = readdirSync(d).find((f) => f.endsWith(".js.map"));
    if (js) {
      const raw = readFileSync(join(d, js), "utf8");
      return { sm: new SourceMap(JSON.parse(raw)), file: js.replace(/\.map$/, ""), raw };
    }
  }
  return null;
}

function summarise(p: Profile, map: ReturnType<typeof bundleMap>, top: number): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  // Each sample counts as one interval, not as its time delta: on a loaded machine the thread is
  // often descheduled between two samples, and a delta would charge that wait to whatever ran last.
  const interval = p.samples.length ? (p.endTime - p.startTime) / p.samples.length : 0;
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (byDelta ? (p.timeDeltas[i] ?? 0) : SAMPLING_US));
  const where = (cf: CallFrame): { file: string; fn: string } => {
    let file = cf.url || "(native)";
    if (map && cf.url.endsWith(map.file) && cf.lineNumber >= 0) {
      const e = map.sm.findEntry(cf.lineNumber, cf.columnNumber) as { originalSource?: string; originalLine?: number };
      if (e?.originalSource) file = `${e.originalSource.replace(/^.*?(?=(lib|functions|infra|node_modules)\/)/, "")}:${(e.originalLine ?? 0) + 1}`;
    }
    return { file, fn: cf.functionName || "(anonymous)" };
  };
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (id: number) => { const n = byId.get(id)!; const w = where(n.callFrame); return `${w.fn} ${w.file}`; };
  /** Self time of each function by its callers (3 frames up), for the top functions. */
  const callers = new Map<string, Map<string, number>>();
  const byFn = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const w = where(n.callFrame);
    total += us;
    const fnKey = `${w.fn}  ${w.file}`;
    byFn.set(fnKey, (byFn.get(fnKey) ?? 0) + us);
    const up: string[] = [];
    for (let q = parent.get(id), k = 0; q !== undefined && k < 3; q = parent.get(q), k++) up.push(label(q));
    const cm = callers.get(fnKey) ?? new Map<string, number>();
    cm.set(up.join(" < "), (cm.get(up.join(" < ")) ?? 0) + us);
    callers.set(fnKey, cm);
    const fileKey = w.file.replace(/:\d+$/, "").replace(/^(node_modules\/(@[^/]+\/)?[^/]+)\/.*$/, "$1");
    byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
  }
  const idle = [...self].filter(([id]) => /^\((idle|program|garbage collector)\)$/.test(byId.get(id)!.callFrame.functionName)).reduce((a, [, us]) => a + us, 0);
  const ms = (us: number) => (us / 1000).toFixed(1).padStart(9);
  console.log(`\nprofile ${((p.endTime - p.startTime) / 1000).toFixed(0)} ms, ${p.samples.length} samples (one per ${interval.toFixed(0)} µs of wall time on average, each counted as ${byDelta ? "its time delta" : `${SAMPLING_US} µs`}): ${ms(total).trim()} ms, of which idle/program/GC ${ms(idle).trim()} ms`);
  console.log(`\nself time by function (top ${top}):`);
  for (const [k, us] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(us)} ms  ${k}`);
  console.log(`\ncallers of the top 12 (3 frames up):`);
  for (const [k] of [...byFn].sort((a, b) => b[1] - a[1]).filter(([k]) => !/^\((idle|program|garbage collector)\)/.test(k)).slice(0, 12)) {
    console.log(`  ${k}`);
    for (const [c, us] of [...callers.get(k)!].sort((a, b) => b[1] - a[1]).slice(0, 4)) console.log(`  ${ms(us)} ms  < ${c}`);
  }
  console.log(`\nself time by file (top ${top}):`);
  for (const [k, us] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(us)} ms  ${k}`);
}

let map: ReturnType<typeof bundleMap> = null;
/** The sampling interval asked of V8 (µs). */
const SAMPLING_US = 200;
/** --by=delta: weigh each sample by its time delta (V8's default view) instead of one interval. */
const byDelta = arg("by", "count") === "delta";

async function profiled<T>(w: WorkerProcess, work: () => Promise<T>, sourceMap?: string): Promise<Profile> {
  const cdp = await inspector(w.inspectorPort);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: SAMPLING_US });
  await cdp.send("Profiler.start");
  await work();
  const { profile } = await cdp.send("Profiler.stop");
  cdp.close();
  // The bundle's source map: a frozen Worker's (given), or wrangler dev's own, read before it stops (it may remove its bundle).
  map = sourceMap ? { sm: new SourceMap(JSON.parse(sourceMap)), file: (JSON.parse(sourceMap) as { file?: string }).file ?? "worker.js", raw: sourceMap } : bundleMap();
  return profile as Profile;
}

async function tenant(w: WorkerProcess, limits?: unknown, t = `prof${Date.now().toString(36)}`): Promise<string> {
  const admin = async (m: string, p: string, b: unknown) => (await fetch(`${w.url}${p}`, { method: m, headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(b) })).json() as any;
  await admin("POST", "/v1/admin/tenants", { id: t });
  if (limits) await admin("PUT", `/v1/admin/tenants/${t}/limits`, limits);
  return (await admin("POST", `/v1/admin/tenants/${t}/keys`, {})).key;
}

/** CPU (ms, /proc) of every workerd process of `w`. */
const workerdCpu = (w: WorkerProcess) => cpuOf(descendants(w.child.pid!).filter((p) => commOf(p) === "workerd")).total;

async function uploads(): Promise<Profile | null> {
  const n = Number(arg("files", "5000")), size = Number(arg("batch", "1000")), skip = Number(arg("skip-batches", "1"));
  const paths = (JSON.parse(readFileSync("bench/.data/10000.manifest.json", "utf8")) as [string, number][]).slice(0, n).map(([p]) => p);
  const files = paths.map((p) => ({ path: p, text: readFileSync(join("bench/.data/10000", p), "utf8") }));
  const w = await startWorker({ port: await freePort() });
  try {
    const key = await tenant(w);
    const h = { authorization: `Bearer ${key}` };
    await fetch(`${w.url}/v1/workspaces`, { method: "POST", headers: { ...h, "content-type": "application/json" }, body: JSON.stringify({ id: "ws" }) });
    const bodies: string[] = [];
    for (let b = 0; b * size < files.length; b++) bodies.push(files.slice(b * size, (b + 1) * size).map((f) => JSON.stringify({ path: f.path, content: f.text })).join("\n") + "\n");
    const send = async (b: number) => {
      const s = performance.now();
      const r = await fetch(`${w.url}/v1/workspaces/ws/uploads?mode=all`, { method: "POST", headers: { ...h, "content-type": "application/x-ndjson" }, body: bodies[b] });
      const j: any = await r.json();
      console.log(`batch ${b}: ${r.status} written ${j.written} ${(performance.now() - s).toFixed(0)} ms, ${(bodies[b]!.length / 1e6).toFixed(1)} MB`);
    };
    for (let b = 0; b < Math.min(skip, bodies.length); b++) await send(b);
    if (process.argv.includes("--cpu-only")) {
      const cpu0 = workerdCpu(w);
      const t0 = performance.now();
      for (let b = skip; b < bodies.length; b++) await send(b);
      const wall = performance.now() - t0;
      await new Promise((r) => setTimeout(r, 3000)); // the index upkeep after the last answer
      const cpu = workerdCpu(w) - cpu0;
      const timed = files.length - Math.min(skip * size, files.length);
      console.log(`${timed} files in ${bodies.length - skip} batches: ${Math.round((timed / wall) * 1000)} files/s; workerd CPU ${cpu} ms (answers + upkeep), ${Math.round(cpu / (bodies.length - skip))} ms per batch, ${Math.round((cpu / timed) * 1000)} ms per 1,000 files`);
      return null;
    }
    return await profiled(w, async () => {
      for (let b = skip; b < bodies.length; b++) await send(b);
      await new Promise((r) => setTimeout(r, 1500)); // the index upkeep after the last answer
    });
  } finally {
    await w.stop();
  }
}

async function puts(): Promise<Profile | null> {
  const n = Number(arg("files", "1000")), inflight = Number(arg("inflight", "8")), skip = Number(arg("skip", "100"));
  const paths = (JSON.parse(readFileSync("bench/.data/10000.manifest.json", "utf8")) as [string, number][]).slice(0, n).map(([p]) => p);
  const files = paths.map((p) => ({ path: p, bytes: readFileSync(join("bench/.data/10000", p)) }));
  const w = await startWorker({ port: await freePort() });
  try {
    const key = await tenant(w);
    const h = { authorization: `Bearer ${key}` };
    await fetch(`${w.url}/v1/workspaces`, { method: "POST", headers: { ...h, "content-type": "application/json" }, body: JSON.stringify({ id: "ws" }) });
    const send = async (from: number, to: number) => {
      let next = from;
      await Promise.all(Array.from({ length: inflight }, async () => {
        while (next < to) {
          const f = files[next++]!;
          const r = await fetch(`${w.url}/v1/workspaces/ws/files/${f.path.split("/").map(encodeURIComponent).join("/")}`, { method: "PUT", headers: h, body: f.bytes });
          if (!r.ok) throw new Error(`PUT ${f.path}: ${r.status} ${await r.text()}`);
          await r.arrayBuffer();
        }
      }));
    };
    await send(0, Math.min(skip, files.length));
    const timed = files.length - Math.min(skip, files.length);
    const run = async () => {
      const t0 = performance.now();
      await send(Math.min(skip, files.length), files.length);
      const wall = performance.now() - t0;
      console.log(`${timed} PUTs, ${inflight} in flight: ${wall.toFixed(0)} ms, ${Math.round((timed / wall) * 1000)} files/s`);
    };
    if (process.argv.includes("--cpu-only")) {
      const cpu0 = workerdCpu(w);
      await run();
      await new Promise((r) => setTimeout(r, 3000)); // the upkeep after the last answer
      const cpu = workerdCpu(w) - cpu0;
      console.log(`workerd CPU ${cpu} ms (answers + upkeep), ${Math.round((cpu / timed) * 1000)} ms per 1,000 files`);
      return null;
    }
    return await profiled(w, async () => {
      await run();
      await new Promise((r) => setTimeout(r, 1500)); // the upkeep after the last answer
    });
  } finally {
    await w.stop();
  }
}

async function tti(): Promise<Profile> {
  const runs = Number(arg("runs", "20"));
  const { LocalRunner } = await import("./bash-e2e.ts");
  LocalRunner.build();
  const runner = new LocalRunner(await freePort());
  await runner.start();
  const port = await freePort();
  const w = await startWorker({ port, vars: runner.workerVars(port, "prof") });
  try {
    const key = await tenant(w, { concurrent_runs: 16, calls_per_minute: 100_000 });
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    let i = 0;
    const one = async () => {
      const id = `t${i++}`;
      const s = performance.now();
      const made = await fetch(`${w.url}/v1/workspaces`, { method: "POST", headers, body: JSON.stringify({ id }) });
      if (made.status >= 300) throw new Error(`create: ${made.status} ${await made.text()}`);
      const r = (await (await fetch(`${w.url}/v1/workspaces/${id}/tools/bash`, { method: "POST", headers, body: JSON.stringify({ command: "node -v" }) })).json()) as any;
      if (!r.ok) throw new Error(`bash: ${JSON.stringify(r).slice(0, 300)}`);
      return performance.now() - s;
    };
    await one(); await one();
    const times: number[] = [];
    const p = await profiled(w, async () => { for (let k = 0; k < runs; k++) times.push(await one()); });
    times.sort((a, b) => a - b);
    console.log(`${runs} create + node -v: p50 ${times[Math.floor(runs / 2)]!.toFixed(0)} ms`);
    return p;
  } finally {
    await w.stop();
    await runner.stop();
  }
}

if (mode === "show") {
  // Summarise a saved profile again: show <file.cpuprofile> (its source map beside it: <file>.map).
  const file = process.argv[3]!;
  const raw = existsSync(`${file}.map`) ? readFileSync(`${file}.map`, "utf8") : null;
  const sources = raw ? { sm: new SourceMap(JSON.parse(raw)), file: (JSON.parse(raw) as { file?: string }).file ?? "cloudflare.js", raw } : null;
  summarise(JSON.parse(readFileSync(file, "utf8")) as Profile, sources, Number(arg("top", "40")));
  process.exit(0);
}
const profile = mode === "tti" ? await tti() : mode === "puts" ? await puts() : mode === "ops" ? await ops({ arg, tenant, profiled }) : mode === "live" ? await live({ arg, tenant, profiled }) : await uploads();
if (!profile) process.exit(0);
const out = arg("out", "");
const sources = map as ReturnType<typeof bundleMap>;
if (out) {
  writeFileSync(out, JSON.stringify(profile));
  if (sources) writeFileSync(`${out}.map`, sources.raw);
}
summarise(profile, sources, Number(arg("top", "40")));
