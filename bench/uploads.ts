/**
 * Batch uploads (#31 §3) for `npm run bench`'s one table: each corpus uploaded into a fresh
 * workspace through POST /v1/workspaces/{ws}/uploads (NDJSON, mode=all) in batches of at most
 * --upload-batch files (default 1,000) and 16 MiB, one batch in flight, files/s in the note; beside
 * it, in the same sitting, the first 500 files of the corpus through one PUT per file (8 in flight,
 * as the bench's own loading does), so the ratio is of one run. One sample each (the time is the client's).
 *   alone: npm run bench -- --sizes=10000 --skip=ops,rg,mcp,bash,bash-scale,lifecycle,git,business
 */
import type { Cell } from "./stats.ts";
import type { Row } from "./table.ts";
import type { RowSource } from "./lifecycle.ts";

const one = (ms: number): Cell => ({ n: 1, p50: Math.round(ms), p99: Math.round(ms), mean: Math.round(ms), errors: 0 });
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

export const uploadRows: RowSource = async (ctx) => {
  const rows: Row[] = [];
  const run = Date.now().toString(36);
  const perBatch = Number(ctx.arg("upload-batch", "1000"));
  const headers = { authorization: `Bearer ${ctx.key}` };
  const create = async (id: string) => {
    const r = await fetch(`${ctx.url}/v1/workspaces`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ id }) });
    if (r.status !== 201) throw new Error(`create ${id}: ${r.status} ${await r.text()}`);
  };
  for (const c of ctx.corpora) {
    const id = `up-${c.size}-${run}`;
    await create(id);
    const batches: string[][] = [[]];
    let bytes = 0;
    for (const f of c.files) {
      const line = JSON.stringify({ path: f.path, content: f.text });
      if (batches.at(-1)!.length >= perBatch || (bytes > 0 && bytes + line.length > MAX_BATCH_BYTES)) (batches.push([]), (bytes = 0));
      batches.at(-1)!.push(line);
      bytes += line.length;
    }
    const t = performance.now();
    for (const b of batches) {
      const r = await fetch(`${ctx.url}/v1/workspaces/${id}/uploads?mode=all`, { method: "POST", headers: { ...headers, "content-type": "application/x-ndjson" }, body: b.join("\n") + "\n" });
      const j = (await r.json()) as { written?: number };
      if (r.status !== 200 || j.written !== b.length) throw new Error(`batch upload: ${r.status} ${JSON.stringify(j).slice(0, 300)}`);
    }
    const ms = performance.now() - t;
    // The same run's one-PUT-per-file rate, on the first 500 files (8 in flight).
    const sample = c.files.slice(0, 500);
    const pid = `put-${c.size}-${run}`;
    await create(pid);
    let next = 0;
    const t2 = performance.now();
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < sample.length) {
        const f = sample[next++]!;
        const r = await fetch(`${ctx.url}/v1/workspaces/${pid}/files/${f.path.split("/").map(encodeURIComponent).join("/")}`, { method: "PUT", headers, body: f.text });
        if (!r.ok) throw new Error(`PUT ${f.path}: ${r.status}`);
        await r.arrayBuffer();
      }
    }));
    const putMs = performance.now() - t2;
    const batchRate = rate(c.files.length, ms);
    const putRate = rate(sample.length, putMs);
    rows.push({ op: `upload, batches of ${perBatch} (NDJSON)`, size: c.size, cells: { toolshed: one(ms) }, note: `${batchRate} files/s; one PUT per file in the same run: ${putRate} files/s (${sample.length} files, 8 in flight): ${(batchRate / putRate).toFixed(1)}×` });
    ctx.log(`  ${c.size} batch upload ${ms.toFixed(0)} ms (${batchRate} files/s), PUT per file ${putRate} files/s`);
  }
  return rows;
};
