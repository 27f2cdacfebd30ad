/**
 * The diff of two versions names a change of a file's execute bit (git's "old mode / new mode"):
 * a `chmod` alone is a change a restore would undo, so it is never left out of the diff.
 * Modes are seeded and changed through the import route (a tar entry's mode).
 */
import { describe, expect, it } from "vitest";
import { newTenant, type Tenant } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { importReq } from "../archive/helpers.js";

const json = { "content-type": "application/json" };

async function checkpoint(t: Tenant, name: string): Promise<any> {
  const r = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: json, body: JSON.stringify({ name }) });
  expect(r.status).toBe(201);
  return r.json();
}

async function diff(t: Tenant, query: string): Promise<any[]> {
  const r = await t.req(`/v1/workspaces/${t.ws}/diff?${query}`);
  expect(r.status, await r.clone().text()).toBe(200);
  return ((await r.json()) as any).changes;
}

describe("execute bits in a diff", () => {
  it("a file whose execute bit changed (bytes the same) is changed, with the modes and git's mode lines; to a checkpoint and to the current state", async () => {
    const t = await newTenant();
    const files = (run: number, tool: number) => tar([{ name: "run.sh", body: "#!/bin/sh\necho hi\n", mode: run }, { name: "tool.sh", body: "#!/bin/sh\n", mode: tool }, { name: "same.txt", body: "same\n" }]);
    expect((await importReq(t, files(0o755, 0o644))).status).toBe(200);
    const before = await checkpoint(t, "before");
    expect(before.exec).toEqual(["run.sh"]);

    expect((await importReq(t, files(0o644, 0o755))).status).toBe(200);
    const now = await diff(t, `from=${before.id}`);
    expect(now.map((c) => [c.path, c.status, c.executable])).toEqual([
      ["run.sh", "changed", { from: true, to: false }],
      ["tool.sh", "changed", { from: false, to: true }],
    ]);
    expect(now[0].from_etag).toBe(now[0].to_etag);
    expect(now[0].diff).toBe("old mode 100755\nnew mode 100644");
    expect(now[1].diff).toBe("old mode 100644\nnew mode 100755");

    const after = await checkpoint(t, "after");
    expect((await diff(t, `from=${before.id}&to=${after.id}`)).map((c) => [c.path, c.executable])).toEqual([
      ["run.sh", { from: true, to: false }],
      ["tool.sh", { from: false, to: true }],
    ]);
    // Nothing changed since: no change listed.
    expect(await diff(t, `from=${after.id}`)).toEqual([]);
  });
});
