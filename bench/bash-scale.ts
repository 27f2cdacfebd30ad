/**
 * bash at repository scale (issue #11 §3): rows `bash cold 10k`, `bash warm 10k` and
 * `git commit write-back`, on a workspace loaded by archive import (packs: the layout a
 * repository gets), end to end as `npm start` runs it (Worker → local Invoke stand-in → runner
 * → the Worker's /v1/sync).
 *
 *   cold:  the runner restarted (empty cache), then `echo hi`: the whole workspace is fetched
 *   warm:  `echo hi` again on the unchanged workspace
 *   git commit write-back: `git init -q && git add -A && git commit -qm import` once on a fresh
 *          copy of the workspace; the call's wall time (command + write-back), the command's own time in the note
 *
 *   --raw: the workspace is loaded by raw uploads instead (PUT …/files/{path}, one request per file,
 *          --inflight=N at a time, default 8: a plain workspace, one object per file, sealed into packs
 *          in the background as they come, lib/layers/background-seal.ts), and the first run after
 *          the load is its own row (`bash first`: it seals what the background left, at most
 *          SEAL_MAX_ON_CALL objects, lib/layers/auto-seal.ts)
 *
 * Standalone (starts its own wrangler dev and runner; prints the rows as JSON lines):
 *   node bench/bash-scale.ts [--sizes=10000] [--cold=3] [--warm=20] [--no-git] [--raw [--inflight=8]]
 * From bench/run.ts: benchBashScale(runner, workerUrl, key, opts).
 */
import { LocalRunner, type BashRow } from "./bash-e2e.ts";
import { pickFiles, type CorpusFile } from "./corpus.ts";
import { measure, type Cell } from "./stats.ts";
import { tarGz } from "./tar-gz.ts";



export interface ScaleOptions {
  sizes: number[];
  coldRuns: number;
  warmRuns: number;
  git: boolean;
  /** Load by raw uploads (a plain workspace) instead of an archive import. */
  raw?: boolean;
  /** Raw uploads in flight at once (default 8). */
  inflight?: number;
  files?: CorpusFile[];
  log?: (s: string) => void;
}

const one = (ms: number): Cell => ({ n: 1, p50: Math.round(ms), p99: Math.round(ms), mean: Math.round(ms), errors: 0 });

export async function benchBashScale(runner: LocalRunner, url: string, key: string, opts: ScaleOptions): Promise<BashRow[]> {
  const auth = { authorization: `Bearer ${key}` };
  const log = opts.log ?? (() => {});
  const all = opts.files ?? pickFiles(Math.max(...opts.sizes));
  const rows: BashRow[] = [];
  const upload = async (id: string, files: CorpusFile[]) => {
    const r = await fetch(`${url}/v1/workspaces`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ id }) });
    if (r.status !== 201) throw new Error(`create ${id}: ${r.status} ${await r.text()}`);
    let next = 0;
    await Promise.all(Array.from({ length: opts.inflight ?? 8 }, async () => {
      while (next < files.length) {
        const f = files[next++]!;
        const p = f.path.split("/").map(encodeURIComponent).join("/");
        const u = await fetch(`${url}/v1/workspaces/${id}/files/${p}`, { method: "PUT", headers: auth, body: f.text });
        if (u.status !== 200 && u.status !== 201) throw new Error(`upload ${f.path}: ${u.status} ${await u.text()}`);
      }
    }));
  };
  const load = async (id: string, files: CorpusFile[]) => {
    if (opts.raw) return upload(id, files);
    const r = await fetch(`${url}/v1/workspaces?id=${id}`, { method: "POST", headers: { ...auth, "content-type": "application/gzip" }, body: tarGz(files) });
    if (r.status !== 201) throw new Error(`import ${id}: ${r.status} ${await r.text()}`);
  };
  const bash = async (id: string, command: string) => {
    const t = performance.now();
    const res = await fetch(`${url}/v1/workspaces/${id}/tools/bash`, { method: "POST", headers: { ...auth, "content-type": "application/json", "x-session-id": "bench" }, body: JSON.stringify({ command, timeout: 600 }) });
    const body = (await res.json()) as { ok: boolean; data?: any; error?: unknown };
    if (!body.ok) throw new Error(`bash: ${JSON.stringify(body.error)}`);
    return { ms: performance.now() - t, data: body.data };
  };
  const stamp = Date.now().toString(36);
  for (const size of opts.sizes) {
    const files = all.slice(0, size);
    const label = size >= 1000 ? `${size / 1000}k` : String(size);
    const id = `scale-${size}-${stamp}`;
    const t0 = performance.now();
    await load(id, files);
    const loaded = performance.now() - t0;
    if (opts.raw) {
      log(`raw upload ${label}: ${Math.round(loaded)} ms`);
      await runner.restart();
      const r = await bash(id, "echo hi");
      if (r.data.stdout !== "hi\n") throw new Error(`unexpected ${JSON.stringify(r.data).slice(0, 300)}`);
      const rate = Math.round(files.length / (loaded / 1000));
      rows.push({ op: `bash first ${label}`, size, cell: one(r.ms), note: `after raw uploads (${files.length} PUTs, ${opts.inflight ?? 8} in flight, ${Math.round(loaded)} ms, ${rate} files/s), runner restarted: the first run (it seals what the background seal left, at most 1,024 objects)` });
      log(`bash first ${label}: ${Math.round(r.ms)} ms`);
    }
    const cold = await measure(async () => {
      await runner.restart();
      const r = await bash(id, "echo hi");
      if (r.data.stdout !== "hi\n") throw new Error(`unexpected ${JSON.stringify(r.data).slice(0, 300)}`);
      return r.ms;
    }, { iterations: opts.coldRuns, minIterations: opts.coldRuns, warmup: 0, budgetMs: Infinity });
    rows.push({ op: `bash cold ${label}`, size, cell: cold, note: "runner restarted (new empty root; old roots deleted when the bench ends): the whole workspace is fetched" });
    log(`bash cold ${label}: p50 ${cold.p50} ms${cold.error ? ` ERROR ${cold.error}` : ""}`);
    const warm = await measure(async () => {
      const r = await bash(id, "echo hi");
      if (r.data.stdout !== "hi\n") throw new Error(`unexpected ${JSON.stringify(r.data).slice(0, 300)}`);
      return r.ms;
    }, { iterations: opts.warmRuns, minIterations: Math.min(3, opts.warmRuns), warmup: 2, budgetMs: 30_000 });
    rows.push({ op: `bash warm ${label}`, size, cell: warm });
    log(`bash warm ${label}: p50 ${warm.p50} ms${warm.error ? ` ERROR ${warm.error}` : ""}`);
    if (!opts.git) continue;
    const gid = `scale-git-${size}-${stamp}`;
    await load(gid, files);
    await bash(gid, "echo warm-up"); // the cold start is not what this row measures
    const c = await bash(gid, "git init -q && git add -A && git commit -qm import && git count-objects");
    const d = c.data;
    const note = `${d.files_changed?.length ?? 0} files written, command ${d.duration_ms} ms, unsynced ${d.unsynced?.count ?? 0}, conflicts ${d.conflicts?.length ?? 0}`;
    rows.push({ op: `git commit write-back`, size, cell: one(c.ms), note });
    log(`git commit write-back ${label}: ${Math.round(c.ms)} ms; ${note}`);
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { freePort, startWorker } = await import("../test/support/wrangler-dev.ts");
  const { benchTenant } = await import("./toolshed.ts");
  const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
  LocalRunner.build();
  const runner = new LocalRunner(await freePort());
  await runner.start();
  const port = await freePort();
  const w = await startWorker({ port, vars: runner.workerVars(port) });
  try {
    const { key } = await benchTenant(w, "scalebench", "scratch");
    const rows = await benchBashScale(runner, w.url, key, {
      sizes: arg("sizes", "10000").split(",").map(Number),
      coldRuns: Number(arg("cold", "3")),
      warmRuns: Number(arg("warm", "20")),
      git: !process.argv.includes("--no-git"),
      raw: process.argv.includes("--raw"),
      inflight: Number(arg("inflight", "8")),
      log: (s) => console.error(`[bash-scale] ${s}`),
    });
    for (const r of rows) console.log(JSON.stringify(r));
  } finally {
    await w.stop();
    await runner.stop();
  }
}
