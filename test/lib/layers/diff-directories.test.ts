/**
 * The diff between versions lists explicit empty directories (lib/layers/diff.ts): one made by
 * PUT <dir>/ (mkdir) is `added` with `directory: true`, one removed is `deleted`, as files are, both
 * against a checkpoint (the current state: upper markers) and between two checkpoints (manifest
 * `dir/` entries); a directory that only gained files is not a change (its files are). Real local R2.
 */
import { describe, expect, it } from "vitest";
import { newTenant, upload, UNGATED, type Tenant } from "../../helpers.js";

const json = { "content-type": "application/json" };
const mkdir = (t: Tenant, dir: string) => t.req(`/v1/workspaces/${t.ws}/files/${dir}/`, { method: "PUT", headers: { "content-length": "0" } });
const rmdir = (t: Tenant, dir: string) => t.req(`/v1/workspaces/${t.ws}/files/${dir}/`, { method: "DELETE" });

async function checkpoint(t: Tenant): Promise<string> {
  const r = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: json, body: "{}" });
  expect(r.status).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

async function diff(t: Tenant, query: string): Promise<any[]> {
  const r = await t.req(`/v1/workspaces/${t.ws}/diff?${query}`);
  const body = (await r.json()) as any;
  expect(r.status, JSON.stringify(body)).toBe(200);
  return body.changes;
}

describe("diff and explicit empty directories", () => {
  it("an empty directory made or removed is a change, against the current state and between checkpoints; one that gained files is not", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "src/a.ts", "a\n");
    for (const d of ["gone", "fills"]) expect((await mkdir(t, d)).status).toBe(201);
    const before = await checkpoint(t);
    expect((await mkdir(t, "build/out")).status).toBe(201);
    expect((await rmdir(t, "gone")).status).toBeLessThan(300);
    await upload(t, "fills/x.txt", "x\n");
    const expected = [
      { path: "build/out", status: "added", directory: true },
      { path: "fills/x.txt", status: "added" },
      { path: "gone", status: "deleted", directory: true },
    ];
    const now = await diff(t, `from=${before}`);
    expect(now.map((c) => ({ path: c.path, status: c.status, ...(c.directory ? { directory: c.directory } : {}) }))).toEqual(expected);
    expect(now[0]).toEqual({ path: "build/out", status: "added", directory: true });
    const after = await checkpoint(t);
    const between = await diff(t, `from=${before}&to=${after}`);
    expect(between.map((c) => ({ path: c.path, status: c.status, ...(c.directory ? { directory: c.directory } : {}) }))).toEqual(expected);
    // The other way round: the directory made is deleted, the one removed is back; paged one change at a time, each once.
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const r = await t.req(`/v1/workspaces/${t.ws}/diff?from=${after}&to=${before}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      const body = (await r.json()) as any;
      seen.push(...body.changes.map((c: any) => `${c.status} ${c.path}${c.directory ? "/" : ""}`));
      cursor = body.cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(["deleted build/out/", "deleted fills/x.txt", "added gone/"]);
    expect(await diff(t, `from=${after}`)).toEqual([]);
  });
});
