/**
 * The business layer's cost (#28: metering, limits, idempotency and audit on and off in the same
 * run): two fresh `wrangler dev` instances of the same frozen bundle, one as deployed (usage
 * Durable Object, LIMITS Durable Object, an audit entry per change) whose writes and edits send an
 * `Idempotency-Key` (a new one per call), and one with `TOOLSHED_BUSINESS_OFF=all` whose calls send
 * none. Each gets one tenant and a workspace of the same files (the read targets of the smallest
 * corpus, the 16 KB edit seed); read, write (4 KB) and edit (16 KB file, an untimed read first)
 * are sampled on and off in turn (measureTogether), so the machine's load falls on both alike.
 * Skip with --skip=business.
 */
import { startWorker, type WorkerProcess } from "../test/support/wrangler-dev.ts";
import type { Corpus } from "./corpus.ts";
import { editSeed, readTargets, SCRATCH, sourceNear } from "./ops.ts";
import { measureTogether, type Cell, type MeasureOptions } from "./stats.ts";
import { ToolshedClient } from "./toolshed.ts";

export interface BusinessRow {
  op: string;
  files: number;
  on: Cell;
  off: Cell;
  /** on p50 / off p50. */
  ratio: number | null;
}

export interface BusinessOptions {
  /** The frozen bench config (freeze.ts) both instances serve. */
  config: string;
  /** The bench Worker's other vars (the runner's, when there is one). */
  vars: Record<string, string>;
  corpus: Corpus;
  measure: MeasureOptions;
  log: (s: string) => void;
  /** Stops the instances when the bench is interrupted. */
  cleanups: (() => Promise<void>)[];
}

const TENANT = "bench-business";

export async function benchBusiness(o: BusinessOptions): Promise<BusinessRow[]> {
  const stops: (() => Promise<void>)[] = [];
  const start = async (vars: Record<string, string>) => {
    const w = await startWorker({ config: o.config, vars: { ...o.vars, ...vars } });
    const stop = () => w.stop();
    stops.push(stop);
    o.cleanups.push(stop);
    return w;
  };
  const on: WorkerProcess = await start({});
  const off: WorkerProcess = await start({ TOOLSHED_BUSINESS_OFF: "all" });
  o.log(`business layer: on ${on.url}, off ${off.url} (TOOLSHED_BUSINESS_OFF=all)`);
  try {
    const targets = readTargets(o.corpus);
    const files = o.corpus.files.filter((f) => targets.includes(f.path));
    const clients = { on: await ToolshedClient.create(on, TENANT, "main"), off: await ToolshedClient.create(off, TENANT, "main") };
    for (const c of Object.values(clients)) {
      await c.upload(files, 8);
      await c.put(`${SCRATCH}/edit.js`, editSeed(o.corpus));
    }
    const idem = (side: "on" | "off", i: number, what: string): Record<string, string> => (side === "on" ? { "idempotency-key": `bench-${what}-${i}-${Math.random().toString(36).slice(2)}` } : {});
    const writeBody = sourceNear(o.corpus, 4 * 1024);
    const counter = { on: 0, off: 0 };
    const ops: Record<string, (side: "on" | "off") => (i: number) => Promise<number>> = {
      read: (side) => async (i) => (await clients[side].call("read", { file_path: targets[i % targets.length] })).ms,
      "write (4 KB)": (side) => async (i) => (await clients[side].call("write", { file_path: `${SCRATCH}/write.txt`, content: `${writeBody}\n// write ${i}\n` }, "bench", idem(side, i, "write"))).ms,
      "edit (16 KB file)": (side) => async (i) => {
        const file_path = `${SCRATCH}/edit.js`;
        await clients[side].call("read", { file_path });
        const ms = (await clients[side].call("edit", { file_path, old_string: `// bench counter ${counter[side]}`, new_string: `// bench counter ${counter[side] + 1}` }, "bench", idem(side, i, "edit"))).ms;
        counter[side]++;
        return ms;
      },
    };
    const rows: BusinessRow[] = [];
    for (const [op, run] of Object.entries(ops)) {
      const cells = await measureTogether({ on: run("on"), off: run("off") }, o.measure);
      const row = { op, files: files.length + 1, on: cells.on!, off: cells.off!, ratio: cells.on!.n && cells.off!.n && cells.off!.p50 > 0 ? cells.on!.p50 / cells.off!.p50 : null };
      rows.push(row);
      o.log(`  business ${op}: on ${row.on.p50}/${row.on.p95} x${row.on.n}, off ${row.off.p50}/${row.off.p95} x${row.off.n}, on/off ${row.ratio?.toFixed(2) ?? "-"}${row.on.error ?? row.off.error ? `  ERRORS ${row.on.error ?? ""} ${row.off.error ?? ""}` : ""}`);
    }
    return rows;
  } finally {
    for (const stop of stops.reverse()) {
      o.cleanups.splice(o.cleanups.indexOf(stop), 1);
      await stop();
    }
  }
}

const num = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? "-" : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

/** The rows as a table: p50 / p95 / p99 and samples of each side, and on/off of the p50s. */
export function renderBusiness(rows: BusinessRow[]): string {
  const head = ["op", "on: metering, limits, idempotency key, audit (p50/p95/p99 ms xN)", "off: TOOLSHED_BUSINESS_OFF=all, no key", "on/off p50"];
  const cell = (c: Cell) => (c.n === 0 ? `ERR (${c.errors})` : `${num(c.p50)} / ${num(c.p95)} / ${num(c.p99)} x${c.n}${c.errors ? ` !${c.errors}` : ""}`);
  const body = rows.map((r) => [r.op, cell(r.on), cell(r.off), r.ratio === null ? "-" : `${r.ratio.toFixed(2)}x`]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cols: string[]) => cols.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}
