/**
 * `npm run bench`: Toolshed in the Workers runtime (wrangler dev, local R2/KV) against the floor
 * (same R2 operations in the same Worker), ripgrep and the MCP filesystem server, on workspaces
 * of real source files. Prints one table and writes bench/results.json.
 *
 *   npm run bench [-- --sizes=100,1000,10000 --iterations=30 --budget=15 --skip=ops,rg,mcp,bash,bash-scale,lifecycle,git,business --git-files=10000 --out=bench/results.json --data=bench/.data]
 *   (budget: seconds of sampling per cell, after which it stops at >= 3 samples; --skip=ops: no uploads and no per-op rows)
 */
import { execSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { cpus, platform, release, totalmem } from "node:os";
import { freePort, startWorker, type WorkerProcess } from "../test/support/wrangler-dev.ts";
import { FloorClient } from "./baselines/floor.ts";
import { McpFilesystem } from "./baselines/mcp.ts";
import { ensureRipgrep } from "./baselines/rg.ts";
import { bashUnavailable, benchBash, LocalRunner, type BashRow } from "./bash-e2e.ts";
import { freezeWorker } from "./freeze.ts";
import { buildCorpora, rareLiteral, resetScratch, type Corpus } from "./corpus.ts";
import { buildOps, COMMON, editSeed, GLOB, NO_LITERAL, SCRATCH, type Op, type System } from "./ops.ts";
import { measureTogether, type Cell, type MeasureOptions } from "./stats.ts";
import { ratio, renderTable, renderTargets, type Row, type Target } from "./table.ts";
import { benchTenant, ToolshedClient } from "./toolshed.ts";
import { gitWritebackRows, lifecycleRows, type RowSource } from "./lifecycle.ts";
import { uploadRows } from "./uploads.ts";
import { benchBashScale } from "./bash-scale.ts";
import { liveRows } from "./live.ts";
import { benchBusiness, renderBusiness, type BusinessRow } from "./business.ts";
import { timeToInteractiveRows } from "./time-to-interactive.ts";
import { importCorpus, SEARCH_TOOLS, shapeOp, systemsOn, type Shape } from "./shapes.ts";

/** Row sources run after the per-op rows (skip one with --skip=<name>); to add rows, add a source here. */
const rowSources: Record<string, RowSource> = { lifecycle: lifecycleRows, uploads: uploadRows, git: gitWritebackRows, live: liveRows, tti: timeToInteractiveRows };

const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const sizes = arg("sizes", "100,1000,10000").split(",").map(Number).sort((a, b) => a - b);
const measureOpts: MeasureOptions = { iterations: Number(arg("iterations", "30")), budgetMs: Number(arg("budget", "15")) * 1000, minIterations: Math.min(3, Number(arg("iterations", "30"))), warmup: 2 };
const skip = new Set(arg("skip", "").split(",").filter(Boolean));
/** --ops=read,write,edit: only the per-op rows of these tools (default: all). */
const onlyTools = new Set(arg("ops", "").split(",").filter(Boolean));
/** --shapes=raw,imported: the workspace shapes the per-op rows run on (bench/shapes.ts; imported: search rows only). */
const shapes = new Set(arg("shapes", "raw,imported").split(",").filter(Boolean) as Shape[]);
if (process.argv.includes("--no-bash")) skip.add("bash");
const out = arg("out", "bench/results.json");
const DATA = arg("data", "bench/.data");
const TENANT = "bench";

const log = (s: string) => console.log(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${s}`);
const t0 = performance.now();
const cleanups: (() => Promise<void>)[] = [];
async function cleanup() {
  while (cleanups.length) {
    try {
      await cleanups.pop()!();
    } catch {}
  }
}
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    console.error(`\n${sig}: stopping everything the bench started`);
    void cleanup().then(() => process.exit(130));
  });
}

function git(cmd: string): string {
  try {
    return execSync(`git ${cmd}`, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "unknown";
  }
}

async function main() {
  mkdirSync(DATA, { recursive: true });
  const rgVersion = skip.has("rg") ? "skipped" : ensureRipgrep();
  log(`${rgVersion}; building corpora ${sizes.join(", ")} from node_modules`);
  const corpora = buildCorpora(sizes, DATA);
  const rare = rareLiteral(corpora[0]!, corpora.at(-1)!);
  for (const c of corpora) log(`corpus ${c.size}: ${c.files.length} files, ${(c.bytes / 1e6).toFixed(1)} MB`);
  log(`rare literal: ${JSON.stringify(rare.literal)} (in ${rare.files} file(s) of the largest set)`);

  // The runner (bash) must be listening before the Worker starts: its URL is a Worker var.
  const bashMissing = skip.has("bash") ? "skipped (--skip=bash)" : bashUnavailable();
  let runner: LocalRunner | null = null;
  const port = await freePort();
  const vars: Record<string, string> = {};
  if (!bashMissing) {
    LocalRunner.build();
    runner = new LocalRunner(await freePort());
    cleanups.push(() => runner!.stop());
    await runner.start();
    Object.assign(vars, runner.workerVars(port));
  }
  const frozen = freezeWorker("bench/wrangler.toml");
  cleanups.push(async () => frozen.remove());
  const worker: WorkerProcess = await startWorker({ config: frozen.config, port, vars });
  cleanups.push(() => worker.stop());
  log(`wrangler dev on ${worker.url}${runner ? `, bash runner on ${runner.url}` : ""}`);

  const rows: Row[] = [];
  const found: { op: string; size: number; expected?: number; found: Op["found"]; toolshed_details?: unknown }[] = [];
  const uploads: Record<number, { ms: number; files_per_s: number }> = {};
  const clients = new Map<number, ToolshedClient>();
  let tools: string[] = [];


  /** Measures the ops' rows on one shape of the corpus (systems in turn: measureTogether). */
  async function measureOps(corpus: Corpus, shape: Shape, ops: Op[], ts: ToolshedClient) {
    for (const op of ops.filter((o) => onlyTools.size === 0 || onlyTools.has(o.tool))) {
      if (op.tool === "write") mkdirSync(join(corpus.dir, SCRATCH), { recursive: true }); // MCP write_file makes no directories
      if (op.tool === "edit") await seedEdit(corpus, ts, new FloorClient(worker.url, worker.adminToken, TENANT, ts.ws));
      const name = shapeOp(op.name, shape);
      const row: Row = { op: name, size: corpus.size, cells: {} };
      // The systems' samples alternate (measureTogether): background work falls on all of them alike.
      const runs: Partial<Record<System, (i: number) => Promise<number>>> = {};
      for (const sys of systemsOn(op, shape)) {
        const run = op.run[sys];
        if (!run || skip.has(sys)) continue;
        if (sys === "toolshed" && !tools.includes(op.tool)) {
          row.cells.toolshed = "missing";
          continue;
        }
        runs[sys] = run;
      }
      Object.assign(row.cells, await measureTogether(runs as Record<string, (i: number) => Promise<number>>, measureOpts));
      if (op.found.toolshed === -1) row.note = "toolshed: [Search incomplete] (files left unsearched)";
      rows.push(row);
      const found_ = Object.fromEntries(Object.entries(op.found).filter(([s]) => s in runs));
      found.push({ op: name, size: corpus.size, ...(op.expected !== undefined ? { expected: op.expected } : {}), found: found_, ...(op.details ? { toolshed_details: op.details } : {}) });
      const errs = Object.entries(row.cells).filter(([, c]) => typeof c === "object" && c.errors).map(([s, c]) => `${s}: ${(c as Cell).error}`);
      log(`  ${corpus.size} ${name}: ${Object.entries(row.cells).map(([s, c]) => `${s} ${typeof c === "object" ? `${c.p50}/${c.p99} x${c.n}` : c}`).join(", ")}${errs.length ? `  ERRORS ${errs.join("; ")}` : ""}`);
    }
  }

  for (const corpus of skip.has("ops") ? [] : corpora) {
    const ws = `w${corpus.size}`;
    const ts = await ToolshedClient.create(worker, TENANT, ws);
    clients.set(corpus.size, ts);
    tools = await ts.tools();
    if (shapes.has("raw")) {
      const ms = await ts.upload(corpus.files, 8, (n) => log(`  uploaded ${n}/${corpus.files.length}`));
      uploads[corpus.size] = { ms: Math.round(ms), files_per_s: Math.round(corpus.files.length / (ms / 1000)) };
      log(`workspace ${ws}: uploaded ${corpus.files.length} files in ${(ms / 1000).toFixed(1)} s through PUT /files`);
    }

    resetScratch(corpus, SCRATCH);
    const mcp = skip.has("mcp") ? null : await McpFilesystem.start(resolve(corpus.dir));
    const closeMcp = async () => mcp?.close();
    cleanups.push(closeMcp);
    const floor = new FloorClient(worker.url, worker.adminToken, TENANT, ws);
    if (shapes.has("raw")) log(`floor ${ws}: its own copy of the ${corpus.files.length} files put in ${((await floor.seed(corpus.files)) / 1000).toFixed(1)} s`);
    if (shapes.has("raw")) await measureOps(corpus, "raw", buildOps(corpus, { toolshed: ts, floor, mcp }, rare.literal), ts);
    if (shapes.has("imported")) {
      // ripgrep searches the corpus directory: without the raw rows' write/edit files, as the imported workspace is.
      resetScratch(corpus, SCRATCH);
      // The same files as one tar.gz: packs + manifest + index segments (bench/shapes.ts); search rows only.
      const imp = await importCorpus(worker.url, ts.key, `i${corpus.size}-${Date.now().toString(36)}`, corpus);
      log(`workspace ${imp.client.ws}: imported ${corpus.files.length} files in ${(imp.ms / 1000).toFixed(1)} s (tar.gz)`);
      await measureOps(corpus, "imported", buildOps(corpus, { toolshed: imp.client, floor, mcp: null }, rare.literal).filter((o) => SEARCH_TOOLS.has(o.tool)), imp.client);
    }
    cleanups.splice(cleanups.indexOf(closeMcp), 1);
    await closeMcp();
    resetScratch(corpus, SCRATCH);
  }

  let bashRows: BashRow[] = [];
  let bashNote: string | null = bashMissing;
  if (!bashMissing && !tools.includes("bash")) bashNote = "n/a (tool missing)";
  if (!bashNote && runner) {
    log("bash rows (echo hi; cold = runner restarted)");
    try {
      bashRows = await benchBash(runner, clients, measureOpts);
    } catch (e) {
      bashNote = `failed: ${(e as Error).message}`;
    }
    for (const b of bashRows) log(`  ${b.size} ${b.op}: ${b.cell.p50}/${b.cell.p99} x${b.cell.n}${b.cell.error ? ` ERR ${b.cell.error}` : ""}`);
  }
  for (const b of bashRows) rows.push({ op: b.op, size: b.size, cells: { toolshed: b.cell }, ...(b.note ? { note: b.note } : {}) });
  // bash on a workspace loaded by archive import (its files in packs): cold (runner restarted) and warm (bench/bash-scale.ts).
  if (runner && !skip.has("bash-scale") && sizes.at(-1)! >= 1000) {
    log("bash-scale rows (packed workspace)");
    try {
      const { key } = await benchTenant(worker, `${TENANT}-bash-scale`, "scratch");
      const scale = await benchBashScale(runner, worker.url, key, { sizes: [sizes.at(-1)!], coldRuns: 2, warmRuns: 20, git: false, log });
      for (const b of scale) rows.push({ op: b.op, size: b.size, cells: { toolshed: b.cell }, ...(b.note ? { note: b.note } : {}) });
    } catch (e) {
      rows.push({ op: "bash-scale", size: sizes.at(-1)!, cells: {}, note: `failed: ${(e as Error).message.slice(0, 200)}` });
    }
  }
  if (bashNote) for (const size of sizes.filter((s) => s === 100 || s === 10_000)) rows.push({ op: "bash echo hi", size, cells: {}, note: bashNote });

  for (const [name, source] of Object.entries(rowSources)) {
    if (skip.has(name)) continue;
    log(`${name} rows`);
    try {
      const { key } = await benchTenant(worker, `${TENANT}-${name}`, "scratch");
      // Without the per-op rows the tool list was never read: a runner means bash (a row that needs it fails saying so).
      rows.push(...(await source({ url: worker.url, key, corpora, bash: !!runner && (skip.has("ops") || tools.includes("bash")), log, arg, adminToken: worker.adminToken })));
    } catch (e) {
      rows.push({ op: name, size: sizes.at(-1)!, cells: {}, note: `failed: ${(e as Error).message.slice(0, 200)}` });
    }
  }

  // The business layer on and off (metering, limits, idempotency, audit), two more instances of the same bundle (business.ts).
  let business: BusinessRow[] = [];
  let businessError: string | undefined;
  if (!skip.has("business")) {
    log("business rows (metering, limits, idempotency and audit on and off)");
    try {
      business = await benchBusiness({ config: frozen.config, vars, corpus: corpora[0]!, measure: measureOpts, log, cleanups });
    } catch (e) {
      businessError = (e as Error).message.slice(0, 300);
      log(`business rows failed: ${businessError}`);
    }
  }

  const memory = worker.memory();
  // Table order: op, then size.
  const opOrder = [...new Set(rows.map((r) => r.op))];
  rows.sort((a, b) => opOrder.indexOf(a.op) - opOrder.indexOf(b.op) || a.size - b.size);

  const largest = sizes.at(-1)!;
  const cell = (op: string, size: number) => rows.find((r) => r.op === op && r.size === size)?.cells ?? {};
  const vsRg = (op: string, limit: number): Target => {
    const c = cell(op, largest);
    const f = ratio(c.toolshed, c.rg);
    return { what: `${largest} files: ${op} vs ripgrep (p50)`, factor: f, limit, pass: f !== null && f <= limit };
  };
  // Issue #31's targets, on each shape measured (bench/shapes.ts).
  const targets: Target[] = [...shapes].flatMap((shape) => [
    vsRg(shapeOp("grep rare literal", shape), 1.5),
    vsRg(shapeOp(`grep "${COMMON}" files, 100`, shape), 3),
    vsRg(shapeOp(`grep "${COMMON}" content, 50 lines`, shape), 3),
    vsRg(shapeOp(`grep /${NO_LITERAL}/ files, 100`, shape), 3),
    vsRg(shapeOp(`glob ${GLOB}`, shape), 2),
  ]);

  // Result counts every system reported: they should agree (toolshed ls/glob/grep pages are capped, so totals are compared).
  const checks = found
    .filter((f) => Object.keys(f.found).length > 0)
    .map((f) => {
      const values = Object.values(f.found);
      const bad = f.found.toolshed === -1 || (f.expected !== undefined && Object.values(f.found).some((v) => v !== f.expected)) || new Set(values).size > 1;
      return { ...f, ok: !bad };
    });

  const runtime_s = Math.round((performance.now() - t0) / 1000);
  const commit = git("rev-parse HEAD");
  const dirty = git("status --porcelain") !== "";
  const results = {
    commit,
    dirty_worktree: dirty,
    date: new Date().toISOString(),
    runtime_s,
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memory_gb: Math.round(totalmem() / 1e9), os: `${platform()} ${release()}`, node: process.version, ripgrep: rgVersion },
    settings: { ...measureOpts, budgetMs: measureOpts.budgetMs, note: "per row: each system's warm-up calls, then one sample of each system in turn, each up to `iterations` samples or until budgetMs per system passed (at least minIterations); p99 of fewer than 100 samples is the maximum" },
    corpus: { sizes: corpora.map((c) => ({ size: c.size, files: c.files.length, bytes: c.bytes })), source: "text files from node_modules, <= 256 KB each", rare_literal: rare, common_word: COMMON, regex_no_literal: NO_LITERAL, glob: GLOB },
    uploads,
    workerd_memory: { peak_bytes: memory.peak, rss_bytes: memory.rss },
    rows,
    checks,
    targets,
    business,
    ...(businessError ? { business_error: businessError } : {}),
  };
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);

  console.log(`\nToolshed bench @ ${commit.slice(0, 12)}${dirty ? " (+ uncommitted changes)" : ""}, ${results.date}, ${results.machine.cpus} x ${results.machine.cpu}, node ${process.version}`);
  console.log(`latency in ms, client wall time: p50 / p99 xN (N samples; p99 of N < 100 is the max); ratios are p50 / p50\n`);
  console.log(renderTable(rows));
  console.log(`\ntargets:\n${renderTargets(targets)}`);
  if (business.length) console.log(`\nbusiness layer on vs off (two instances of the same bundle, sampled in turn; ${business[0]!.files} files; client wall time):\n${renderBusiness(business)}`);
  const badChecks = checks.filter((c) => !c.ok);
  console.log(`\nresult checks (counts each system found; expected = computed from the files): ${badChecks.length === 0 ? "all agree" : `${badChecks.length} disagree`}`);
  for (const c of badChecks) console.log(`  ${c.size} ${c.op}: expected ${c.expected ?? "-"}, ${Object.entries(c.found).map(([s, v]) => `${s} ${v === -1 ? "INCOMPLETE" : v}`).join(", ")}`);
  console.log(`\nuploads: ${Object.entries(uploads).map(([s, u]) => `${s} files ${(u.ms / 1000).toFixed(1)} s (${u.files_per_s}/s)`).join(", ")}; workerd peak RSS ${(memory.peak / 1e6).toFixed(0)} MB`);
  console.log(`wrote ${out}; whole bench ${runtime_s} s`);
}

/** The edit targets: one 16 KB file per system (Toolshed and floor share the bucket, MCP uses disk). */
async function seedEdit(corpus: Corpus, ts: ToolshedClient, floor: FloorClient) {
  const seed = editSeed(corpus);
  await ts.put(`${SCRATCH}/edit-toolshed.js`, seed);
  await floor.op({ op: "write", path: `${SCRATCH}/edit-floor.js`, content: seed });
  mkdirSync(join(corpus.dir, SCRATCH), { recursive: true });
  writeFileSync(join(corpus.dir, SCRATCH, "edit-mcp.js"), seed);
}

try {
  await main();
} catch (e) {
  console.error(`bench failed: ${(e as Error)?.stack ?? e}`);
  process.exitCode = 1;
} finally {
  await cleanup();
  process.exit(process.exitCode ?? 0);
}
