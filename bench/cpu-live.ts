/**
 * The `live` workload of bench/cpu-profile.ts (#29; docs/benchmarks/investigations-live.md): the
 * bench's Worker frozen (bench/wrangler.toml, the LIVE Durable Object; bench/freeze.ts: a source
 * edit mid-run restarts nothing), the local runner, a workspace of `--files` files (archive import,
 * as bench/live-trace.ts), a session's live sandbox warmed up by 5 untimed calls, then `--calls` bash
 * `true` calls with keep_alive (after an untimed PUT of `--edits` files each, when set).
 *
 *   npx node bench/cpu-profile.ts live [--files=10000] [--calls=40] [--edits=0] [--cpu-only | --runner] [--top=40] [--out=…]
 *
 * --cpu-only: no profiler; the CPU of each process over the timed calls (/proc), per call: the
 * Worker's workerd (the one that is not `wrangler dev`'s proxy: the larger of the two), the proxy's,
 * the runner with its reaped sandboxes, and this process (the client's fetch); then the runner's part
 * by process: its Node process, what it reaped, and the live sandbox's processes by name. Otherwise a
 * V8 profile over the timed calls: of the Worker, summarised with the frozen bundle's source map, or
 * with --runner of the runner's Node process (its inspector; dist/container/local-server.mjs's map).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { LocalRunner } from "./bash-e2e.ts";
import { buildCorpora } from "./corpus.ts";
import { tarGz } from "./tar-gz.ts";
import { freezeWorker } from "./freeze.ts";
import { commOf, cpuOf } from "./proc-cpu.ts";
import { descendants, freePort, startWorker, type WorkerProcess } from "../test/support/wrangler-dev.ts";

export interface LiveDeps<Profile> {
  arg: (name: string, dflt: string) => string;
  tenant: (w: WorkerProcess, limits?: unknown, id?: string) => Promise<string>;
  profiled: (w: WorkerProcess, work: () => Promise<void>, sourceMap?: string) => Promise<Profile>;
}

/** This process's own CPU (ms). */
const selfCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export async function live<Profile>({ arg, tenant, profiled }: LiveDeps<Profile>): Promise<Profile | null> {
  const files = Number(arg("files", "10000")), calls = Number(arg("calls", "40")), edits = Number(arg("edits", "0"));
  const corpus = buildCorpora([files], "bench/.data")[0]!.files;
  LocalRunner.build();
  const ofRunner = process.argv.includes("--runner");
  const runnerInspector = ofRunner ? await freePort() : 0;
  const runner = new LocalRunner(await freePort(), ofRunner ? [`--inspect=127.0.0.1:${runnerInspector}`] : []);
  await runner.start();
  const port = await freePort();
  const frozen = freezeWorker("bench/wrangler.toml");
  const w = await startWorker({ config: frozen.config, port, vars: runner.workerVars(port, "prof") });
  try {
    const key = await tenant(w, { calls_per_minute: 1_000_000 });
    const auth = { authorization: `Bearer ${key}` };
    const ws = "live";
    const imp = await fetch(`${w.url}/v1/workspaces?id=${ws}`, { method: "POST", headers: { ...auth, "content-type": "application/gzip" }, body: tarGz(corpus) });
    if (imp.status !== 201) throw new Error(`import: ${imp.status} ${await imp.text()}`);
    const call = async (i: number) => {
      for (let e = 0; e < edits; e++) await (await fetch(`${w.url}/v1/workspaces/${ws}/files/live-prof/e${e}.txt`, { method: "PUT", headers: auth, body: `edit ${i}\n` })).text();
      const r = await fetch(`${w.url}/v1/workspaces/${ws}/tools/bash`, { method: "POST", headers: { ...auth, "content-type": "application/json", "x-session-id": "prof" }, body: JSON.stringify({ command: "true", keep_alive: true, timeout: 60 }) });
      const body = (await r.json()) as { ok: boolean; error?: unknown };
      if (!body.ok) throw new Error(JSON.stringify(body.error));
    };
    for (let i = 0; i < 5; i++) await call(i);
    const timed = async () => {
      for (let i = 0; i < calls; i++) await call(i);
      await new Promise((r) => setTimeout(r, 1200)); // the work after the last answer (the audit entry)
    };
    if (ofRunner) {
      const map = "dist/container/local-server.mjs.map";
      return await profiled({ inspectorPort: runnerInspector } as WorkerProcess, timed, readFileSync(map, "utf8"));
    }
    if (!process.argv.includes("--cpu-only")) {
      const dir = dirname(frozen.config);
      const map = ["worker.js.map", "index.js.map"].map((f) => join(dir, f)).find((f) => existsSync(f));
      return await profiled(w, timed, map ? readFileSync(map, "utf8") : undefined);
    }
    const workerds = descendants(w.child.pid!).filter((p) => commOf(p) === "workerd");
    const runnerPids = () => [runner.pid!, ...descendants(runner.pid!)];
    const runnerParts = () => {
      const node = cpuOf([runner.pid!]).total;
      const parts: Record<string, number> = { "runner's node": node, "reaped by it": cpuOf([runner.pid!], { reaped: true }).total - node };
      for (const [comm, ms] of Object.entries(cpuOf(descendants(runner.pid!), { reaped: true }).by)) parts[comm] = (parts[comm] ?? 0) + ms;
      return parts;
    };
    const before = { workerd: workerds.map((p) => cpuOf([p]).total), runner: cpuOf(runnerPids(), { reaped: true }).total, parts: runnerParts(), self: selfCpu() };
    const t0 = performance.now();
    await timed();
    const wall = performance.now() - t0 - 1200;
    const workerd = workerds.map((p, i) => (cpuOf([p]).total - before.workerd[i]!) / calls).sort((a, b) => b - a);
    const run = (cpuOf(runnerPids(), { reaped: true }).total - before.runner) / calls;
    const self = (selfCpu() - before.self) / calls;
    console.log(`${files} files, ${calls} live calls${edits ? ` after ${edits} edited files each` : " (no change)"}: ${(wall / calls).toFixed(1)} ms a call (the edits' PUTs included); CPU ms per call (the 1.2 s after the last answer included):`);
    console.log(`  Worker's workerd ${workerd[0]?.toFixed(1)}  proxy's workerd ${workerd.slice(1).reduce((a, b) => a + b, 0).toFixed(1)}  runner + sandbox ${run.toFixed(1)}  client ${self.toFixed(1)}`);
    // The runner's part by process (a sandbox process seen only after the start counts from 0).
    const parts = Object.entries(runnerParts()).map(([k, ms]) => `${k} ${((ms - (before.parts[k] ?? 0)) / calls).toFixed(1)}`);
    console.log(`  runner by process: ${parts.join("  ")}`);
    return null;
  } finally {
    await w.stop();
    await runner.stop();
    frozen.remove();
  }
}
