/**
 * Rows of the workspace lifecycle (issue #11) for `npm run bench`'s one table: import and export
 * of each size (files/s in the note), then at the largest size checkpoint, diff, restore and fork;
 * and the `git init && git add -A && git commit` write-back (10,000 files by default,
 * --git-files=N to change). One sample each (they are seconds long); the time is the client's.
 *
 * Other row sources register the same way: a function (ctx) => Promise<Row[]> in run.ts's
 * `rowSources` list (bench/run.ts), e.g. bash cold/warm at 10,000 files.
 */
import type { Corpus } from "./corpus.ts";
import type { Cell } from "./stats.ts";
import type { Row } from "./table.ts";
import { tarGz } from "./tar-gz.ts";

export interface RowContext {
  url: string;
  key: string;
  corpora: Corpus[];
  /** A bash runner is there (the write-back row needs it). */
  bash: boolean;
  log: (s: string) => void;
  arg: (name: string, def: string) => string;
  /** The bench Worker's admin token (a row that needs its own tenant or limits: bench/time-to-interactive.ts). */
  adminToken?: string;
}
export type RowSource = (ctx: RowContext) => Promise<Row[]>;

const one = (ms: number): Cell => ({ n: 1, p50: Math.round(ms), p99: Math.round(ms), mean: Math.round(ms), errors: 0 });


async function req(ctx: RowContext, method: string, path: string, body?: unknown, type = "application/json"): Promise<{ ms: number; j: any; bytes: number }> {
  const t = performance.now();
  const r = await fetch(`${ctx.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ctx.key}`, ...(body !== undefined ? { "content-type": type } : {}) },
    ...(body !== undefined ? { body: type === "application/json" ? JSON.stringify(body) : (body as Buffer) } : {}),
  });
  const buf = await r.arrayBuffer();
  const ms = performance.now() - t;
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${new TextDecoder().decode(buf).slice(0, 300)}`);
  const j = (r.headers.get("content-type") ?? "").includes("json") ? JSON.parse(new TextDecoder().decode(buf)) : null;
  return { ms, j, bytes: buf.byteLength };
}

const rate = (n: number, ms: number) => `${Math.round((n / ms) * 1000)} files/s`;

/** Import / export per size; checkpoint, diff, restore, fork at the largest. */
export const lifecycleRows: RowSource = async (ctx) => {
  const rows: Row[] = [];
  const run = Date.now().toString(36);
  for (const c of ctx.corpora) {
    const id = `imp-${c.size}-${run}`;
    const imp = await req(ctx, "POST", `/v1/workspaces?id=${id}`, tarGz(c.files), "application/gzip");
    rows.push({ op: "import (tar.gz, create + index)", size: c.size, cells: { toolshed: one(imp.ms) }, note: rate(c.files.length, imp.ms) });
    const exp = await req(ctx, "GET", `/v1/workspaces/${id}/export`);
    rows.push({ op: "export (tar.gz)", size: c.size, cells: { toolshed: one(exp.ms) }, note: rate(c.files.length, exp.ms) });
    ctx.log(`  ${c.size} import ${imp.ms.toFixed(0)} ms, export ${exp.ms.toFixed(0)} ms`);
    if (c !== ctx.corpora.at(-1)) continue;
    const cp0 = await req(ctx, "POST", `/v1/workspaces/${id}/checkpoints`, { name: "imported" });
    const changed = c.files.slice(0, Math.min(100, c.files.length));
    for (const f of changed) await req(ctx, "PUT", `/v1/workspaces/${id}/files/${f.path.split("/").map(encodeURIComponent).join("/")}`, Buffer.from(`${f.text}\n// changed\n`), "application/octet-stream");
    const cp1 = await req(ctx, "POST", `/v1/workspaces/${id}/checkpoints`, { name: "changed" });
    const diff = await req(ctx, "GET", `/v1/workspaces/${id}/diff?from=${cp0.j.id}&to=${cp1.j.id}&limit=100`);
    const restore = await req(ctx, "POST", `/v1/workspaces/${id}/checkpoints/${cp0.j.id}/restore`);
    const fork = await req(ctx, "POST", "/v1/workspaces", { id: `fork-${c.size}-${run}`, from_workspace: id, checkpoint: cp1.j.id });
    rows.push(
      { op: `checkpoint (${changed.length} files changed)`, size: c.size, cells: { toolshed: one(cp1.ms) } },
      { op: `diff (${diff.j.changes.length} changes, text diffs)`, size: c.size, cells: { toolshed: one(diff.ms) } },
      { op: "restore", size: c.size, cells: { toolshed: one(restore.ms) } },
      { op: "fork (from a checkpoint)", size: c.size, cells: { toolshed: one(fork.ms) } },
    );
  }
  return rows;
};

/** `git init && git add -A && git commit` on an imported workspace of --git-files files (default 10,000, the size): the call end to end. */
export const gitWritebackRows: RowSource = async (ctx) => {
  const size = Number(ctx.arg("git-files", "10000"));
  if (!ctx.bash) return [{ op: "git commit write-back", size, cells: {}, note: "n/a (no bash runner)" }];
  const largest = ctx.corpora.at(-1)!;
  const files = largest.files.slice(0, size);
  const id = `git-${size}-${Date.now().toString(36)}`;
  await req(ctx, "POST", `/v1/workspaces?id=${id}`, tarGz(files), "application/gzip");
  const bash = async (command: string) => {
    const t = performance.now();
    const r = await fetch(`${ctx.url}/v1/workspaces/${id}/tools/bash`, { method: "POST", headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json", "x-session-id": "bench" }, body: JSON.stringify({ command, timeout: 600 }) });
    const b = (await r.json()) as any;
    if (!b.ok) throw new Error(`bash: ${JSON.stringify(b.error)}`);
    return { ms: performance.now() - t, d: b.data };
  };
  await bash("echo warm-up"); // the cold start is not what this row measures
  const c = await bash("git init -q && git add -A && git commit -qm import");
  return [{ op: "git commit write-back", size: files.length, cells: { toolshed: one(c.ms) }, note: `${c.d.files_changed?.length ?? "?"} files written back; the command itself ${c.d.duration_ms ?? "?"} ms, the rest is sync and write-back` }];
};
