/** The one results table (op x size, each system's p50/p99 and sample count, ratios) and the targets. */
import type { System } from "./ops.ts";
import type { Cell } from "./stats.ts";

export interface Row {
  op: string;
  size: number;
  /** undefined: the system has no such op; "missing": Toolshed lacks the tool. */
  cells: Partial<Record<System, Cell | "missing">>;
  note?: string;
}

export interface Target {
  what: string;
  factor: number | null;
  limit: number;
  pass: boolean;
}

const SYSTEMS: System[] = ["toolshed", "floor", "rg", "mcp"];

const num = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

function cellText(c: Cell | "missing" | undefined): string {
  if (c === undefined) return "-";
  if (c === "missing") return "n/a (tool missing)";
  if (c.n === 0) return `ERR (${c.errors})`;
  return `${num(c.p50)} / ${num(c.p99)} x${c.n}${c.errors ? ` !${c.errors}` : ""}`;
}

export function ratio(a: Cell | "missing" | undefined, b: Cell | "missing" | undefined): number | null {
  if (!a || !b || a === "missing" || b === "missing" || a.n === 0 || b.n === 0 || !(b.p50 > 0)) return null;
  return a.p50 / b.p50;
}

const ratioText = (r: number | null) => (r === null ? "-" : r >= 10 ? `${r.toFixed(0)}x` : `${r.toFixed(2)}x`);

export function renderTable(rows: Row[]): string {
  const head = ["op", "files", ...SYSTEMS.map((s) => `${s} p50/p99 ms xN`), "ts/floor", "ts/rg", "ts/mcp"];
  const body = rows.map((r) => [
    r.op,
    String(r.size),
    ...SYSTEMS.map((s) => cellText(r.cells[s])),
    ratioText(ratio(r.cells.toolshed, r.cells.floor)),
    ratioText(ratio(r.cells.toolshed, r.cells.rg)),
    ratioText(ratio(r.cells.toolshed, r.cells.mcp)),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cols: string[]) => cols.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  const out = [line(head), widths.map((w) => "-".repeat(w)).join("  ")];
  let last = "";
  for (let i = 0; i < rows.length; i++) {
    if (last && rows[i]!.op !== last && rows[i]!.op.split(" ")[0] !== last.split(" ")[0]) out.push("");
    out.push(line(body[i]!) + (rows[i]!.note ? `   ${rows[i]!.note}` : ""));
    last = rows[i]!.op;
  }
  return out.join("\n");
}

export function renderTargets(targets: Target[]): string {
  return targets
    .map((t) => `  ${t.pass ? "PASS" : "MISS"}  ${t.what}: ${t.factor === null ? "not measured" : `${t.factor.toFixed(2)}x`} (target <= ${t.limit}x)`)
    .join("\n");
}
