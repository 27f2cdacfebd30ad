/**
 * `npm run bench` end to end at a tiny size: wrangler dev with the bench Worker, upload, every
 * op against Toolshed, the floor and the MCP server (and ripgrep when installed), table and
 * results.json, and the business layer's rows (bench/business.ts: two more wrangler starts, on and off; they
 * failed unnoticed for a stop when only the log said so). Proves the bench works; the numbers mean nothing here.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "toolshed-bench-smoke-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("runs the bench on a 20-file workspace and writes results.json", () => {
  const hasRg = spawnSync("sh", ["-c", "command -v rg"]).status === 0;
  const out = join(dir, "results.json");
  const args = ["bench/run.ts", "--sizes=20", "--iterations=2", "--budget=1", `--skip=bash${hasRg ? "" : ",rg"}`, `--out=${out}`, `--data=${join(dir, "data")}`];
  const stdout = execFileSync(process.execPath, args, { encoding: "utf8", timeout: 150_000, env: { ...process.env, PATH: `${join(process.cwd(), "node_modules/.bin")}:${process.env.PATH}` } });
  expect(stdout).toContain("targets:");
  const results = JSON.parse(readFileSync(out, "utf8"));
  // The tool ops, each against the floor.
  const ops = results.rows.filter((r: any) => r.cells.floor);
  expect(ops.length).toBe(9);
  for (const row of ops) {
    expect(row.cells.toolshed?.n, `${row.op}: ${row.cells.toolshed?.error}`).toBe(2);
    expect(row.cells.floor?.n, `${row.op} floor: ${row.cells.floor?.error}`).toBe(2);
  }
  // The workspace lifecycle rows (bench/lifecycle.ts): one sample each, none failed.
  const lifecycle = results.rows.filter((r: any) => /^(import|export|checkpoint|diff|restore|fork)\b/.test(r.op));
  expect(lifecycle.map((r: any) => r.op.split(" ")[0])).toEqual(["import", "export", "checkpoint", "diff", "restore", "fork"]);
  for (const row of lifecycle) expect(row.cells.toolshed?.n, `${row.op}: ${row.note}`).toBe(1);
  expect(results.checks.filter((c: any) => !c.ok)).toEqual([]);
  // The business layer on and off: read, write and edit, each sampled on both sides.
  expect(results.business_error).toBeUndefined();
  expect(results.business.map((r: any) => r.op)).toEqual(["read", "write (4 KB)", "edit (16 KB file)"]);
  for (const row of results.business) expect([row.on.n, row.off.n], row.op).toEqual([2, 2]);
}, 180_000);
