/**
 * What a large bash write-back costs the API. Usage: node bench/run-bundled.mjs bench/writeback.ts [files=5000] [timeout s=600] [files|git]
 *
 * The API's sync endpoint (handleSync with the search indexer, as lib/runtime/workers.ts wires it, over
 * the memory driver) runs in a child process that reports its own CPU time; the runner (the
 * real handler code, bubblewrap) writes back a command that creates `files` text files of
 * ~1 KB in 50 directories, over HTTP on 127.0.0.1. Prints wall time of the write-back, API CPU
 * seconds, requests and storage operations by kind. Mode `git`: the files exist (a first run made
 * them), the measured run is `git init && git add -A && git commit` over them. WRITEBACK_LIMITS=1: the
 * storage quotas counted (memoryLimits in the API process), so a write-back's plan, hold and charges run.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { fork } from "node:child_process";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { runCommand, type RunnerDeps } from "../infra/container/runner.js";
import { bwrapSandbox } from "../infra/container/sandbox.js";
import { prepareStageDir } from "../infra/container/stage.js";
import { TreeCache } from "../infra/container/slot-cache.js";
import { httpSyncClient } from "../lib/sync/http.js";
import { handleSync } from "../lib/sync/server.js";
import { mintSyncToken } from "../lib/sync/token.js";
import { searchIndexer } from "../lib/search/indexer.js";
import { memoryDriver } from "../lib/storage/drivers/memory.js";
import { memoryLimits } from "../lib/limits/store.js";
import { workspaceMetaKey } from "../lib/layout/paths.js";
import { storageKeyValue } from "../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../lib/storage/types.js";

const SECRET = "bench-secret-0123456789abcdef";

/** Counts the driver's operations by kind. */
function counted(d: StorageDriver, ops: Record<string, number>): StorageDriver {
  return new Proxy(d, {
    get(target, prop, recv) {
      const v = Reflect.get(target, prop, recv);
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => {
        ops[String(prop)] = (ops[String(prop)] ?? 0) + 1;
        return v.apply(target, args);
      };
    },
  });
}

async function server(): Promise<void> {
  const ops: Record<string, number> = {};
  const driver = counted(memoryDriver(), ops);
  const kv = storageKeyValue(memoryDriver(), "kv/");
  const listeners = [searchIndexer({ onError: () => {} })];
  // WRITEBACK_LIMITS=1: the storage quotas counted (the limits in this process's memory), as a deployment counts them.
  const limits = process.env.WRITEBACK_LIMITS === "1" ? memoryLimits() : undefined;
  let requests = 0;
  let slowest = 0;
  let over1s = 0;
  const http = createServer(async (req, res) => {
    if (req.url === "/__stats") {
      const cpu = process.cpuUsage();
      res.end(JSON.stringify({ cpu_s: (cpu.user + cpu.system) / 1e6, requests, ops, slowest_ms: slowest, over_1s: over1s }));
      return;
    }
    requests++;
    const started = Date.now();
    res.on("finish", () => {
      const ms = Date.now() - started;
      slowest = Math.max(slowest, ms);
      if (ms > 1000) over1s++;
    });
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const r = await handleSync(new Request(`http://127.0.0.1${req.url}`, {
      method: req.method!, headers: req.headers as Record<string, string>,
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}),
    } as RequestInit), { driver, kv, secret: SECRET, listeners, ...(limits ? { limits } : {}) });
    res.writeHead(r.status, Object.fromEntries(r.headers));
    if (r.body) for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) res.write(c);
    res.end();
  });
  // The workspace's record (the sync API writes back only into a workspace that exists).
  await driver.put(workspaceMetaKey("bench", "wb"), new TextEncoder().encode(JSON.stringify({ id: "wb", name: "wb", created_at: new Date().toISOString() })));
  http.listen(0, "127.0.0.1", () => process.send!({ port: (http.address() as { port: number }).port }));
}

async function main(files: number, timeoutS: number, mode: string): Promise<void> {
  // WRITEBACK_PROF=<dir>: the API process writes a V8 CPU profile there (node --cpu-prof).
  const prof = process.env.WRITEBACK_PROF;
  const child = fork(process.argv[1]!, ["--server"], { stdio: "inherit", ...(prof ? { execArgv: ["--cpu-prof", `--cpu-prof-dir=${prof}`] } : {}) });
  const port = await new Promise<number>((r) => child.once("message", (m: { port: number }) => r(m.port)));
  const url = `http://127.0.0.1:${port}`;
  const stats = async () => (await (await fetch(`${url}/__stats`)).json()) as { cpu_s: number; requests: number; ops: Record<string, number>; slowest_ms: number; over_1s: number };
  const root = mkdtempSync(join(tmpdir(), "toolshed-bench-wb-"));
  chmodSync(root, 0o711);
  const owner = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : null;
  const deps: RunnerDeps = { cache: new TreeCache(join(root, "slots"), owner), sandbox: bwrapSandbox({ stateDir: join(root, "sandbox") }), owner, workDir: join(root, "work"), stageDir: join(root, "ws") };
  prepareStageDir(deps.stageDir);
  try {
    const token = await mintSyncToken(SECRET, { t: "bench", w: "wb", r: "k1" }, 3600);
    const sync = httpSyncClient({ url, token });
    const command = `python3 -c "
import os
for i in range(1, ${files} + 1):
    d = 'src/d%d' % (i % 50 + 1)
    os.makedirs(d, exist_ok=True)
    open('%s/f%d.ts' % (d, i), 'w').write('export const v%d = \\"%s\\";\\n' % (i, 'x' * 700))
"`;
    // Mode "git": the files are made by a first run, then measured: git init && git add -A && git commit.
    let measured = command;
    if (mode === "git") {
      await runCommand({ version: 1, idempotency_key: "k0", tenant: "bench", workspace: "wb", command, timeout_ms: timeoutS * 1000, sync: { url, token } }, sync, deps);
      measured = "git init -q && git add -A && git commit -qm import && git count-objects";
    }
    const before = await stats();
    const t0 = Date.now();
    const r = await runCommand({ version: 1, idempotency_key: "k1", tenant: "bench", workspace: "wb", command: measured, timeout_ms: timeoutS * 1000, sync: { url, token } }, sync, deps);
    const wall = Date.now() - t0;
    const after = await stats();
    const ops = Object.fromEntries(Object.entries(after.ops).map(([k, v]) => [k, v - (before.ops[k] ?? 0)]));
    console.log(JSON.stringify({
      files, mode, written: r.files_changed.length, stdout: r.stdout.trim().slice(0, 200), unsynced: r.unsynced?.count ?? 0,
      command_ms: r.duration_ms, writeback_ms: r.sync.sync_out_ms, run_ms: wall,
      api_cpu_s: +(after.cpu_s - before.cpu_s).toFixed(2), api_requests: after.requests - before.requests, slowest_request_ms: after.slowest_ms, requests_over_1s: after.over_1s, storage_ops: ops,
    }, null, 1));
  } finally {
    child.kill("SIGINT");
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv.includes("--server")) {
  process.on("SIGINT", () => process.exit(0)); // exit normally: --cpu-prof writes its profile on exit
  void server();
}
else void main(Number(process.argv[2] ?? 5000), Number(process.argv[3] ?? 600), process.argv[4] ?? "files");
