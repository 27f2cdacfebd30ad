/**
 * The write-back of `git init && git add -A && git commit` end to end (issue #11 §3):
 * `node bench/git-writeback.ts [--sizes=2000,10000]`. Starts Toolshed in `wrangler dev` (local
 * R2/KV) and the bash runner (infra/container/local-server.ts, as `npm run bench` does), loads
 * the bench's real source files by archive import (untimed), then times one bash call that
 * commits them: the command's own time and the call end to end. The write-back's own time
 * (sync_out_ms) is not in the tool's result: with TOOLSHED_LOG_SYNC_STATS=1 the runner prints its
 * sync timings (and a packed write-back's stage and commit requests) on stderr, `sync-stats {...}`.
 * Prints one JSON line per size; does not touch bench/results.json.
 */
import { freePort, setupTenant, startWorker } from "../test/support/wrangler-dev.ts";
import { LocalRunner } from "./bash-e2e.ts";
import { pickFiles } from "./corpus.ts";
import { tarGz } from "./tar-gz.ts";

const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const sizes = arg("sizes", "2000").split(",").map(Number);


LocalRunner.build();
const runner = new LocalRunner(await freePort());
await runner.start();
const port = await freePort();
const w = await startWorker({ port, vars: runner.workerVars(port) });
try {
  const { key } = await setupTenant(w, "gitbench", "scratch");
  const auth = { authorization: `Bearer ${key}` };
  const all = pickFiles(Math.max(...sizes));
  for (const size of sizes) {
    const files = all.slice(0, size);
    const id = `git-${size}`;
    const r = await fetch(`${w.url}/v1/workspaces?id=${id}`, { method: "POST", headers: { ...auth, "content-type": "application/gzip" }, body: tarGz(files) });
    if (r.status !== 201) throw new Error(`import ${size}: ${r.status} ${await r.text()}`);
    const bash = async (command: string) => {
      const t = performance.now();
      const res = await fetch(`${w.url}/v1/workspaces/${id}/tools/bash`, { method: "POST", headers: { ...auth, "content-type": "application/json", "x-session-id": "bench" }, body: JSON.stringify({ command, timeout: 600 }) });
      const body = (await res.json()) as any;
      if (!body.ok) throw new Error(`bash: ${JSON.stringify(body.error)}`);
      return { ms: Math.round(performance.now() - t), data: body.data };
    };
    await bash("echo warm-up"); // the first call downloads the workspace (cold start): not what is measured
    if (process.argv.includes("--extra")) {
      const warm = await bash("echo hi");
      const made = await bash("mkdir -p gen && for i in $(seq 1 3000); do echo \"line $i\" > gen/f$i.txt; done");
      console.log(JSON.stringify({ files: size, warm_echo_ms: warm.ms, create_3000_small_files_call_ms: made.ms, command_ms: made.data.duration_ms }));
    }
    const c = await bash("git init -q && git add -A && git commit -qm import && git count-objects");
    const d = c.data;
    if (process.env.DEBUG_GIT) console.error(JSON.stringify(d).slice(0, 1500));
    console.log(JSON.stringify({
      files: size, objects: d.stdout?.trim(), call_ms: c.ms, command_ms: d.duration_ms, written: d.files_created?.length, unsynced: d.unsynced?.count ?? 0, conflicts: d.conflicts?.length ?? 0, skipped: d.skipped?.length ?? 0,
    }));
  }
} finally {
  await w.stop();
  await runner.stop();
}
