/**
 * Live sessions (issue #29) in `npm run bench`: bash calls through the API (wrangler dev → the
 * local runner) on the largest corpus, loaded by archive import (packs, as bench/bash-scale.ts):
 *
 *   bash live, no change        `true` in the session's live sandbox (keep_alive), nothing changed since its last call
 *   bash fresh warm (same run)  `true` in a fresh sandbox on the runner's warm slot: sampled in turn with the row above
 *   bash live after 1 edit      one file rewritten through PUT .../files (untimed) before each call: the call syncs it in
 *
 * The notes give p95. The runner's own phases (sync in, command, sync out) and memory per idle
 * sandbox: `node bench/run-bundled.mjs bench/live-sandbox.ts` (docs/live-sessions.md). Skip with --skip=live.
 */
import type { RowContext, RowSource } from "./lifecycle.ts";
import { measureTogether, measure, type Cell, type MeasureOptions } from "./stats.ts";
import type { Row } from "./table.ts";
import { tarGz } from "./tar-gz.ts";

/** A request of step `what`; a network failure says which step and why (fetch's own message is only "fetch failed"). */
async function step(what: string, f: () => Promise<Response>): Promise<Response> {
  try {
    return await f();
  } catch (e) {
    const cause = (e as { cause?: unknown }).cause;
    throw new Error(`${what}: ${(e as Error).message}${cause ? ` (${String((cause as Error).message ?? cause)})` : ""}`);
  }
}

export const liveRows: RowSource = async (ctx: RowContext): Promise<Row[]> => {
  if (!ctx.bash) return [{ op: "bash live", size: ctx.corpora.at(-1)!.size, cells: {}, note: "no bash runner" }];
  const corpus = ctx.corpora.at(-1)!;
  const auth = { authorization: `Bearer ${ctx.key}` };
  const id = `live-${Date.now().toString(36)}`;
  const r = await step("import", () => fetch(`${ctx.url}/v1/workspaces?id=${id}`, { method: "POST", headers: { ...auth, "content-type": "application/gzip" }, body: tarGz(corpus.files) }));
  if (r.status !== 201) throw new Error(`import ${id}: ${r.status} ${await r.text()}`);
  ctx.log(`  live: workspace ${id} imported (${corpus.files.length} files)`);

  const bash = (name: string, session: string, keepAlive: boolean) => async (): Promise<number> => {
    const t = performance.now();
    const res = await step(`bash (${name})`, () =>
      fetch(`${ctx.url}/v1/workspaces/${id}/tools/bash`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json", "x-session-id": session },
        body: JSON.stringify({ command: "true", timeout: 60, ...(keepAlive ? { keep_alive: true } : {}) }),
      }),
    );
    const body = (await res.json()) as { ok: boolean; error?: unknown };
    const ms = performance.now() - t;
    if (!body.ok) throw new Error(`bash (${name}): ${JSON.stringify(body.error).slice(0, 300)}`);
    return ms;
  };
  const edit = async (i: number) => {
    const u = await fetch(`${ctx.url}/v1/workspaces/${id}/files/live-bench/edited.txt`, { method: "PUT", headers: auth, body: `edit ${i}\n` });
    if (u.status !== 200 && u.status !== 201) throw new Error(`edit: ${u.status} ${await u.text()}`);
  };

  const iterations = Number(ctx.arg("iterations", "30"));
  const opts: MeasureOptions = { iterations, budgetMs: Number(ctx.arg("budget", "15")) * 1000, minIterations: Math.min(3, iterations), warmup: 3 };
  // The live sandbox's first call starts it, the fresh one's first call fetches the workspace: both in the warm-ups.
  const live = bash("live", "bench-live", true);
  const together = await measureTogether({ live, fresh: bash("fresh", "bench-fresh", false) }, opts);
  const edited = await measure(async (i) => {
    await edit(i);
    return live();
  }, opts);
  await fetch(`${ctx.url}/v1/workspaces/${id}/sessions/bench-live/sandbox`, { method: "DELETE", headers: auth }).catch(() => {});

  const p95 = (c: Cell | undefined) => (c?.p95 !== undefined ? `p95 ${Math.round(c.p95)} ms: ` : "");
  const rows: Row[] = [
    { op: "bash live, no change", size: corpus.size, cells: { toolshed: together.live! }, note: `${p95(together.live)}live sandbox, keep_alive` },
    { op: "bash fresh warm (same run)", size: corpus.size, cells: { toolshed: together.fresh! }, note: `${p95(together.fresh)}sampled in turn with the live row` },
    { op: "bash live after 1 edit", size: corpus.size, cells: { toolshed: edited }, note: `${p95(edited)}a PUT of one file before each call (untimed)` },
  ];
  for (const row of rows) ctx.log(`  ${row.op}: p50 ${(row.cells.toolshed as Cell).p50} ms; ${row.note}`);
  return rows;
};
