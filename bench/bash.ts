/**
 * Bash rows of `npm run bench`: `echo hi` p50/p99 on workspaces of 100 and 10,000 files,
 * warm and cold, and the sync cost of a one-file change. Real sandbox (bubblewrap), the
 * in-process sync client over the memory driver (no network in the numbers).
 *
 *   node infra/container/build.mjs is not needed: bundle and run this file directly, e.g.
 *   npx esbuild bench/bash.ts --bundle --platform=node --format=esm --outfile=dist/bench-bash.mjs && node dist/bench-bash.mjs
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHandler } from "../infra/container/handler.js";
import { storageSyncClient } from "../lib/exec/sync-storage.js";
import type { RunRequest, RunResult } from "../lib/exec/types.js";
import { filesPrefix } from "../lib/paths.js";
import { memoryDriver } from "../lib/storage/drivers/memory.js";

export interface BenchRow {
  name: string;
  n: number;
  p50_ms: number;
  p99_ms: number;
  note?: string;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! * 10) / 10;
};

export async function benchBash(opts: { quick?: boolean } = {}): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const root = mkdtempSync(join(tmpdir(), "toolshed-bench-"));
  chmodSync(root, 0o711);
  const driver = memoryDriver();
  const handler = createHandler({ root, syncClient: (r) => storageSyncClient(driver, filesPrefix(r.tenant, r.workspace)) });
  let seq = 0;
  const run = async (workspace: string, command: string): Promise<RunResult> => {
    const req: RunRequest = { version: 1, idempotency_key: `b${++seq}`, tenant: "bench", workspace, command, timeout_ms: 60_000, sync: { url: "http://unused", token: "unused" } };
    const r = await handler(req);
    if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
    return r.result as RunResult;
  };
  const time = async (fn: () => Promise<unknown>) => {
    const t = performance.now();
    await fn();
    return performance.now() - t;
  };

  try {
    for (const files of [100, 10_000]) {
      const ws = `w${files}`;
      const sync = storageSyncClient(driver, filesPrefix("bench", ws));
      const body = new TextEncoder().encode("x".repeat(200) + "\n");
      for (let i = 0; i < files; i++) await sync.put(`d${Math.floor(i / 100)}/f${i}.txt`, body, {});

      const coldN = opts.quick ? 2 : files > 1000 ? 5 : 15;
      const cold: number[] = [];
      for (let i = 0; i < coldN; i++) {
        await handler.cache.forgetTenant("bench");
        cold.push(await time(() => run(ws, "echo hi")));
      }
      rows.push({ name: `bash echo hi, ${files} files, cold`, n: coldN, p50_ms: pct(cold, 50), p99_ms: pct(cold, 99), note: "downloads the whole workspace" });

      const warmN = opts.quick ? 5 : 50;
      const warm: number[] = [];
      let last: RunResult | null = null;
      for (let i = 0; i < warmN; i++) warm.push(await time(async () => (last = await run(ws, "echo hi"))));
      rows.push({ name: `bash echo hi, ${files} files, warm`, n: warmN, p50_ms: pct(warm, 50), p99_ms: pct(warm, 99), note: `downloaded ${last!.sync.downloaded_files} files` });

      // One file changed by a tool between calls, one file changed by the command.
      const inN = opts.quick ? 3 : 20;
      const syncIn: number[] = [];
      const syncOut: number[] = [];
      let r: RunResult | null = null;
      for (let i = 0; i < inN; i++) {
        await sync.put("d0/f0.txt", new TextEncoder().encode(`tool edit ${i}\n`), {});
        r = await run(ws, "echo edit >> d0/f1.txt");
        syncIn.push(r.sync.sync_in_ms);
        syncOut.push(r.sync.sync_out_ms);
      }
      rows.push({ name: `bash sync-in, 1 of ${files} files changed`, n: inN, p50_ms: pct(syncIn, 50), p99_ms: pct(syncIn, 99), note: `downloaded ${r!.sync.downloaded_files} file(s), ${r!.sync.downloaded_bytes} B; manifest ${r!.sync.manifest_files} entries` });
      rows.push({ name: `bash sync-out, 1 of ${files} files changed`, n: inN, p50_ms: pct(syncOut, 50), p99_ms: pct(syncOut, 99), note: `uploaded ${r!.sync.uploaded_files} file(s), ${r!.sync.uploaded_bytes} B (local walk + diff included)` });
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return rows;
}

if (process.argv[1] && /bench-bash\.m?js$|bench\/bash\.ts$/.test(process.argv[1])) {
  benchBash({ quick: process.argv.includes("--quick") }).then((rows) => {
    for (const r of rows) console.log(`${r.name.padEnd(44)} p50 ${String(r.p50_ms).padStart(8)} ms  p99 ${String(r.p99_ms).padStart(8)} ms  (n=${r.n}) ${r.note ?? ""}`);
  });
}
