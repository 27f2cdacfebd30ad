/**
 * Every tool's MCP annotations, pinned (issue #30 §8): clients' review processes read them (a
 * read-only tool may be auto-approved, a destructive one asks), so each value is a decision, and a
 * change to one is a change to this table and to docs/tools.md#annotations. The rules that tie them
 * to a tool's permission are checked for every tool, custom tools' defaults included, and the
 * catalog (`GET /v1/tools?format=mcp`) must carry exactly the tools' own values.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { Tool } from "../../../lib/contract/tool.js";

// name: readOnly, destructive, idempotent, openWorld (R = read-only, D = destructive, I = idempotent, O = open world)
const PINNED: Record<string, string> = {
  read: "R--I-", ls: "R--I-", glob: "R--I-", grep: "R--I-", find: "R--I-",
  write: "--DI-", edit: "--D--", multi_edit: "--D--", apply_patch: "--D--", insert: "-----",
  copy: "--D--", move: "--D--", delete: "--DI-",
  bash: "--D-O", run_code: "--D-O", bash_output: "R----", kill_shell: "--DI-",
  task: "--D-O", task_output: "R--I-",
  todo_read: "R--I-", todo_write: "--DI-", ask_user: "----O", pending_result: "R--I-",
  web_fetch: "R--IO", web_search: "R--IO",
};

const code = (t: Pick<Tool, "annotations">) => {
  const a = t.annotations;
  return `${a.readOnlyHint ? "R" : "-"}-${a.destructiveHint ? "D" : "-"}${a.idempotentHint ? "I" : "-"}${a.openWorldHint ? "O" : "-"}`;
};

describe("tool annotations", () => {
  it("every built-in tool's annotations are the pinned table's, and the table names no other tool", () => {
    expect(Object.fromEntries(tools.map((t) => [t.name, code(t)]))).toEqual(PINNED);
  });

  it.each(tools.map((t) => [t.name, t] as const))("%s: the hints agree with its permission", (_name, t) => {
    const a = t.annotations;
    expect(a.title.length).toBeGreaterThan(0);
    expect(a.title.length).toBeLessThanOrEqual(64);
    // A read-only tool destroys nothing (the spec: destructiveHint is meaningful only when not read-only).
    if (a.readOnlyHint) expect(a.destructiveHint).toBe(false);
    // A tool that may change files or run commands is never announced as read-only.
    if (t.permission === "write" || (t.permission === "execute" && t.name !== "bash_output" && t.name !== "task_output")) expect(a.readOnlyHint).toBe(false);
    // A tool that reaches the network, or runs commands that may, is open-world.
    if (t.permission === "network" || t.name === "bash" || t.name === "run_code" || t.name === "task") expect(a.openWorldHint).toBe(true);
  });

  it("docs/tools.md's annotations table is the pinned table", () => {
    const doc = readFileSync(new URL("../../../docs/tools.md", import.meta.url), "utf8");
    const section = doc.slice(doc.indexOf("## Annotations"));
    expect(section.length).toBeGreaterThan(0);
    const yes = (cell: string) => (cell.trim() === "yes" ? true : cell.trim() === "no" ? false : null);
    const rows: Record<string, string> = {};
    for (const line of section.split("\n")) {
      const m = /^\| `([a-z_]+)` \|([^|]+)\|([^|]+)\|([^|]+)\|([^|]+)\|/.exec(line);
      if (!m) continue;
      const [r, d, i, o] = [m[2]!, m[3]!, m[4]!, m[5]!].map(yes);
      rows[m[1]!] = `${r ? "R" : "-"}-${d ? "D" : "-"}${i ? "I" : "-"}${o ? "O" : "-"}`;
    }
    expect(rows).toEqual(PINNED);
  });

  it("the MCP catalog carries each tool's own annotations", async () => {
    const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: "admin" }, tools);
    const post = async (path: string, body: unknown) => (await (await app.request(path, { method: "POST", headers: { authorization: "Bearer admin", "content-type": "application/json" }, body: JSON.stringify(body) })).json()) as any;
    await post("/v1/admin/tenants", { id: "ann" });
    const key = (await post("/v1/admin/tenants/ann/keys", {})).key;
    const r = await app.request("/v1/tools?format=mcp", { headers: { authorization: `Bearer ${key}` } });
    expect(r.status).toBe(200);
    const listed = ((await r.json()) as any).tools as { name: string; annotations: Tool["annotations"] }[];
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(listed.length).toBeGreaterThan(0);
    for (const l of listed) expect(l.annotations, l.name).toEqual(byName.get(l.name)!.annotations);
  });
});
