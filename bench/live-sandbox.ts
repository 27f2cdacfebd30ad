/**
 * Live sandboxes (issue #29), runner side only (the latency through the API: `npm run bench`'s live rows, bench/live.ts): the in-process time of a no-change command on a
 * workspace of `files` files, in a live sandbox vs a fresh run, and the memory of idle live
 * sandboxes. The real handler and bwrap; the workspace in memory (no HTTP); the live channel
 * in process; then one idle live sandbox on the process sandbox (Lambda's), when run as root. Usage: node bench/run-bundled.mjs bench/live-sandbox.ts [files=10000] [runs=15] [idle sandboxes=4]
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { processTree } from "../infra/container/live-status.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHandler } from "../infra/container/handler.js";
import { processSandbox, processesOf } from "../infra/container/sandbox-process.js";
import { signEvent } from "../lib/exec/runner-auth.js";
import type { RunRequest, RunResult } from "../lib/exec/types.js";
import type { LiveChannel } from "../lib/sync/live-client.js";
import type { LiveEnded, LiveNext, LiveResultPost, LiveStatus } from "../lib/sync/live-types.js";
import { storageSyncClient } from "../lib/sync/storage.js";
import { storageRunRecords, RUN_MARGIN_MS } from "../lib/sync/run-records.js";
import { memoryDriver } from "../lib/storage/drivers/memory.js";
import { filesPrefix } from "../lib/layout/paths.js";

const SECRET = "bench-secret-0123456789abcdef";
const [files = 10_000, runs = 15, idle = 4] = process.argv.slice(2).map(Number);

class Queue implements LiveChannel<RunRequest, RunResult> {
  private q: LiveNext<RunRequest>[] = [];
  private wake: (() => void) | null = null;
  private answers = new Map<number, (p: LiveResultPost<RunResult>) => void>();
  private seq = 0;
  async next(_s: LiveStatus, signal?: AbortSignal) {
    while (!this.q.length) await new Promise<void>((res, rej) => ((this.wake = res), signal?.addEventListener("abort", () => rej(signal.reason), { once: true })));
    return this.q.shift()!;
  }
  /** As the API: the answer recorded, then the poll it carries (LiveResultPost.poll) served as `next`. */
  async result(p: LiveResultPost<RunResult>, signal?: AbortSignal) {
    this.answers.get(p.seq)?.(p);
    return p.poll ? this.next(p.status, signal) : null;
  }
  async ended(_e: LiveEnded) {}
  push(n: LiveNext<RunRequest>) {
    this.q.push(n);
    this.wake?.();
  }
  send(request: RunRequest) {
    const seq = ++this.seq;
    const p = new Promise<LiveResultPost<RunResult>>((r) => this.answers.set(seq, r));
    this.push({ command: { seq, request } });
    return p;
  }
}

const driver = memoryDriver();
const root = mkdtempSync(join(tmpdir(), "live-bench-"));
chmodSync(root, 0o711);
const channels = new Map<string, Queue>();
const handler = createHandler({
  root, secret: SECRET,
  syncClient: (r) => storageSyncClient(driver, r.tenant, r.workspace),
  runRecords: (r) => storageRunRecords(driver, r.tenant, r.workspace, r.idempotency_key, Date.now() + r.timeout_ms + RUN_MARGIN_MS),
  liveChannel: (r) => channels.get(r.live!.generation)!,
});
let k = 0;
const req = (workspace: string, command: string, extra: Partial<RunRequest> = {}): RunRequest => ({
  version: 1, idempotency_key: `b${++k}`, tenant: "t1", workspace, command, timeout_ms: 60_000, sync: { url: "http://127.0.0.1:1", token: "x" }, ...extra,
});
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const body = new TextEncoder().encode("x".repeat(100));
for (let i = 0; i < files; i++) await driver.put(`${filesPrefix("t1", "big")}d${i % 100}/f${i}.txt`, body);

// Fresh runs (warm slot after the first).
const fresh: number[] = [];
let freshLast: RunResult | null = null;
for (let i = 0; i <= runs; i++) {
  const r = req("big", "true");
  const t0 = performance.now();
  const res = await handler(await signEvent(SECRET, r), { tenantId: "t1" });
  if (!res.ok) throw new Error(JSON.stringify(res.error));
  if (i > 0) fresh.push(performance.now() - t0);
  if (i === runs) freshLast = res.result as RunResult;
}

// A live sandbox on the same workspace (another slot: cold on its first command).
const live: number[] = [];
let liveLast: RunResult | null = null;
const ch = new Queue();
channels.set("big", ch);
const ended = handler(await signEvent(SECRET, req("big", "", { live: { generation: "big", idle_ms: 600_000, max_life_ms: 600_000 } })), { tenantId: "t1" });
let status: LiveStatus | null = null;
for (let i = 0; i <= runs; i++) {
  const t0 = performance.now();
  const p = await ch.send(req("big", "true"));
  if (!p.response.ok) throw new Error(JSON.stringify(p.response.error));
  if (i > 0) live.push(performance.now() - t0);
  status = p.status;
  liveLast = p.response.result;
}
ch.push({ end: "deleted" });
await ended;

// Idle live sandboxes: one command each, then their memory.
const small: Queue[] = [];
const ends: Promise<unknown>[] = [];
const rss: number[] = [];
for (let i = 0; i < idle; i++) {
  const q = new Queue();
  channels.set(`s${i}`, q);
  small.push(q);
  ends.push(handler(await signEvent(SECRET, req(`s${i}`, "", { live: { generation: `s${i}`, idle_ms: 600_000, max_life_ms: 600_000 } })), { tenantId: "t1" }));
  const p = await q.send(req(`s${i}`, "echo hi > f.txt"));
  rss.push(p.status.rss_bytes ?? 0);
}
// The whole tree of each sandbox as the host sees it (outer bwrap included): RSS and PSS (shared pages split).
const heapBefore = process.memoryUsage().rss;
const trees = await (async () => {
  const out: { rss_mib: number; pss_mib: number; processes: number }[] = [];
  for (const n of readdirSync("/proc")) {
    if (!/^\d+$/.test(n)) continue;
    try {
      if (readFileSync(`/proc/${n}/comm`, "utf8").trim() !== "bwrap") continue;
      const st = readFileSync(`/proc/${n}/stat`, "utf8");
      if (Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]) !== process.pid) continue;
    } catch {
      continue;
    }
    const procs = await processTree(Number(n));
    let pss = 0;
    for (const p of procs) pss += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${p.hostPid}/smaps_rollup`, "utf8"))?.[1] ?? 0) * 1024;
    out.push({ rss_mib: +(procs.reduce((a, p) => a + p.rssBytes, 0) / 1048576).toFixed(1), pss_mib: +(pss / 1048576).toFixed(1), processes: procs.length });
  }
  return out;
})();
const withServer = await (async () => {
  const q = small[0]!;
  await q.send(req("s0", "cd /tmp && python3 -m http.server 8123 --bind 127.0.0.1 >/dev/null 2>&1 &"));
  const p = await q.send(req("s0", "true"));
  return p.status.rss_bytes ?? 0;
})();
for (const q of small) q.push({ end: "deleted" });
await Promise.all(ends);
await handler.close();
rmSync(root, { recursive: true, force: true });

// The process sandbox (AWS Lambda's container function: one live sandbox per execution environment,
// its commands as one user): an idle live sandbox is its session shell and what it left running.
// Needs root (commands run as another uid); skipped otherwise.
const processIdle = process.getuid?.() === 0 ? await (async () => {
  const UID = 64125;
  const proot = mkdtempSync(join(tmpdir(), "live-bench-proc-"));
  chmodSync(proot, 0o711);
  const link = join(proot, "workspace");
  const ph = createHandler({
    root: proot, secret: SECRET,
    sandbox: processSandbox({ stateDir: join(proot, "sandbox"), egress: "none", runAs: { uid: UID, gid: UID }, workspace: { link, path: link } }),
    syncClient: (r) => storageSyncClient(driver, r.tenant, r.workspace),
    runRecords: (r) => storageRunRecords(driver, r.tenant, r.workspace, r.idempotency_key, Date.now() + r.timeout_ms + RUN_MARGIN_MS),
    liveChannel: (r) => channels.get(r.live!.generation)!,
  });
  const q = new Queue();
  channels.set("p0", q);
  const end = ph(await signEvent(SECRET, req("p0", "", { live: { generation: "p0", idle_ms: 600_000, max_life_ms: 600_000 } })), { tenantId: "t1" });
  await q.send(req("p0", "echo hi > f.txt"));
  const mem = async () => {
    let rss = 0, pss = 0;
    const pids = await processesOf(UID, new Set());
    for (const pid of pids) {
      rss += Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
      pss += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0) * 1024;
    }
    return { processes: pids.length, rss_mib: +(rss / 1048576).toFixed(1), pss_mib: +(pss / 1048576).toFixed(1) };
  };
  const idleTree = await mem();
  await q.send(req("p0", "cd /tmp && python3 -m http.server 8124 --bind 127.0.0.1 >/dev/null 2>&1 &"));
  await q.send(req("p0", "sleep 0.5"));
  const withServerTree = await mem();
  q.push({ end: "deleted" });
  await end;
  await ph.close();
  rmSync(proot, { recursive: true, force: true });
  return { idle: idleTree, with_http_server: withServerTree };
})() : "skipped (needs root)";

const MiB = 1024 * 1024;
console.log(JSON.stringify({
  files, runs,
  fresh_p50_ms: +p50(fresh).toFixed(1), fresh_min_ms: +Math.min(...fresh).toFixed(1),
  live_p50_ms: +p50(live).toFixed(1), live_min_ms: +Math.min(...live).toFixed(1),
  fresh_last: freshLast && { sync_in_ms: freshLast.sync.sync_in_ms, command_ms: freshLast.duration_ms, sync_out_ms: freshLast.sync.sync_out_ms },
  live_last: liveLast && { sync_in_ms: liveLast.sync.sync_in_ms, command_ms: liveLast.duration_ms, sync_out_ms: liveLast.sync.sync_out_ms },
  live_status_after: status && { rss_mib: +((status.rss_bytes ?? 0) / MiB).toFixed(1), cpu_ms: status.cpu_ms },
  idle_sandbox_rss_mib: rss.length > 6 ? `${rss.length} sandboxes, median ${+(p50(rss) / MiB).toFixed(1)}` : rss.map((b) => +(b / MiB).toFixed(1)),
  idle_sandbox_host_trees: trees.length > 6 ? { count: trees.length, rss_mib_total: +trees.reduce((a, t) => a + t.rss_mib, 0).toFixed(1), pss_mib_total: +trees.reduce((a, t) => a + t.pss_mib, 0).toFixed(1) } : trees,
  runner_rss_mib: +(heapBefore / 1048576).toFixed(1),
  idle_with_http_server_rss_mib: +(withServer / MiB).toFixed(1),
  process_sandbox_idle: processIdle,
}, null, 1));
