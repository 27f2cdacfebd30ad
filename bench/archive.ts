/**
 * Import and export rates (issue #11): `node bench/archive.ts [--sizes=100,1000,10000] [--baseline]`.
 * Starts Toolshed in `wrangler dev` (local R2/KV), builds a tar.gz of the bench's real source
 * files (bench/corpus.ts; untimed), then times, per size, end to end from the client:
 *   import  POST /v1/workspaces?id=... with the tar.gz (create + import + search index)
 *   export  GET  /v1/workspaces/{ws}/export, the whole tar.gz read
 * and, with --baseline, the same files through PUT /v1/workspaces/{ws}/files (8 in flight).
 * Prints files/s and MB/s; does not touch bench/results.json.
 */
import { startWorker } from "../test/support/wrangler-dev.ts";
import { setupTenant } from "../test/support/wrangler-dev.ts";
import { pickFiles } from "./corpus.ts";
import { ToolshedClient } from "./toolshed.ts";
import { tarGz } from "./tar-gz.ts";

const arg = (name: string, def: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? def;
const sizes = arg("sizes", "100,1000,10000").split(",").map(Number);
const baseline = process.argv.includes("--baseline");
/** --versions: after each import, checkpoint / change 100 files / checkpoint / diff / restore / fork (lib/layers/). */
const versions = process.argv.includes("--versions");
const enc = new TextEncoder();


const w = await startWorker();
try {
  const { key } = await setupTenant(w, "archbench", "scratch");
  const auth = { authorization: `Bearer ${key}` };
  const all = pickFiles(Math.max(...sizes));
  const rows: string[] = [];
  for (const size of sizes) {
    const files = all.slice(0, size);
    const raw = files.reduce((n, f) => n + enc.encode(f.text).length, 0);
    const body = tarGz(files);
    const id = `imp-${size}`;
    let t = performance.now();
    const r = await fetch(`${w.url}/v1/workspaces?id=${id}`, { method: "POST", headers: { ...auth, "content-type": "application/gzip" }, body });
    const report = (await r.json()) as any;
    const importMs = performance.now() - t;
    if (r.status !== 201) throw new Error(`import ${size}: ${r.status} ${JSON.stringify(report)}`);
    t = performance.now();
    const e = await fetch(`${w.url}/v1/workspaces/${id}/export`, { headers: auth });
    const exported = (await e.arrayBuffer()).byteLength;
    const exportMs = performance.now() - t;
    const line = (op: string, ms: number) => `| ${op} | ${size} | ${(raw / 1e6).toFixed(1)} MB | ${(ms / 1000).toFixed(2)} s | ${Math.round((size / ms) * 1000)} | ${((raw / 1e6) / (ms / 1000)).toFixed(1)} |`;
    rows.push(line("import (tar.gz, create + index)", importMs), line("export (tar.gz)", exportMs));
    console.error(`size ${size}: import ${report.import.files} files, ${body.length} B gz, ${importMs.toFixed(0)} ms; export ${exported} B gz, ${exportMs.toFixed(0)} ms`);
    if (versions) {
      const post = async (path: string, body?: unknown) => {
        const t0 = performance.now();
        const res = await fetch(`${w.url}${path}`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
        const j = (await res.json()) as any;
        if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(j)}`);
        return { ms: performance.now() - t0, j };
      };
      const cp0 = await post(`/v1/workspaces/${id}/checkpoints`, { name: "imported" });
      const changed = files.slice(0, Math.min(100, files.length));
      const c = new ToolshedClient(w.url, key, id);
      await c.upload(changed.map((f) => ({ ...f, text: `${f.text}\n// changed\n` })), 8);
      const cp1 = await post(`/v1/workspaces/${id}/checkpoints`, { name: "changed" });
      let t1 = performance.now();
      const d = await fetch(`${w.url}/v1/workspaces/${id}/diff?from=${cp0.j.id}&to=${cp1.j.id}&limit=100`, { headers: auth });
      const dj = (await d.json()) as any;
      const diffMs = performance.now() - t1;
      const rs = await post(`/v1/workspaces/${id}/checkpoints/${cp0.j.id}/restore`);
      const fk = await post("/v1/workspaces", { id: `fork-${size}`, from_workspace: id, checkpoint: cp1.j.id });
      const vline = (op: string, ms: number) => `| ${op} | ${size} | ${(raw / 1e6).toFixed(1)} MB | ${(ms / 1000).toFixed(2)} s | — | — |`;
      rows.push(
        vline("checkpoint (nothing changed)", cp0.ms),
        vline(`checkpoint (${changed.length} files changed)`, cp1.ms),
        vline(`diff (${dj.changes.length} changes with text diffs)`, diffMs),
        vline(`restore (${rs.j.removed} upper objects removed)`, rs.ms),
        vline("fork (from a checkpoint)", fk.ms),
      );
    }
    if (baseline) {
      await fetch(`${w.url}/v1/workspaces`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ id: `put-${size}` }) });
      const c = new ToolshedClient(w.url, key, `put-${size}`);
      rows.push(line("baseline: PUT per file, 8 in flight", await c.upload(files, 8)));
    }
  }
  console.log("| op | files | raw | time | files/s | MB/s |\n|---|---|---|---|---|---|");
  console.log(rows.join("\n"));
} finally {
  await w.stop();
}
