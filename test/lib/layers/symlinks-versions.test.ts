/**
 * Checkpoint, restore, fork and diff carry the workspace's symlinks (docs/symlinks.md). Links are
 * seeded and changed through the import route; the export shows what a workspace holds.
 */
import { describe, expect, it } from "vitest";
import { ByteReader } from "../../../lib/archive/byte-reader.js";
import { readTar } from "../../../lib/archive/tar-reader.js";
import { newTenant, type Tenant } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { exportReq, importReq } from "../archive/helpers.js";

const json = { "content-type": "application/json" };

/** A workspace's links, as its export writes them. */
async function linksOf(t: Tenant, ws = t.ws): Promise<Record<string, string>> {
  const res = await exportReq(t, "", {}, ws);
  expect(res.status).toBe(200);
  const reader = new ByteReader(res.body!.pipeThrough(new DecompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>));
  const out: Record<string, string> = {};
  for await (const e of readTar(reader, { maxMetaBytes: 65536 })) if (e.kind === "symlink") out[e.name] = e.linkTarget!;
  return out;
}

async function checkpoint(t: Tenant, name: string): Promise<any> {
  const r = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: json, body: JSON.stringify({ name }) });
  expect(r.status).toBe(201);
  return r.json();
}

describe("symlinks through versions", () => {
  it("a checkpoint records the links; restore puts them back (added ones gone, removed ones back); fork and diff carry them", async () => {
    const t = await newTenant();
    expect((await importReq(t, tar([{ name: "real.txt", body: "r\n" }, { name: ".venv/bin/python", type: "2", linkname: "python3" }, { name: "keep", type: "2", linkname: "real.txt" }]))).status).toBe(200);
    const cp = await checkpoint(t, "with links");
    expect(cp.links).toEqual({ ".venv/bin/python": "python3", keep: "real.txt" });

    // Change the links: repoint one, add one, drop one (a file imported at its path replaces it).
    expect((await importReq(t, tar([{ name: ".venv/bin/python", type: "2", linkname: "/usr/bin/python3" }, { name: "new", type: "2", linkname: "x" }, { name: "keep", body: "now a file\n" }]))).status).toBe(200);
    expect(await linksOf(t)).toEqual({ ".venv/bin/python": "/usr/bin/python3", new: "x" });

    const diff = await t.req(`/v1/workspaces/${t.ws}/diff?from=${cp.id}`);
    expect(diff.status).toBe(200);
    const changes = Object.fromEntries(((await diff.json()) as any).changes.map((c: any) => [c.path, c.status]));
    expect(changes).toEqual({ ".venv/bin/python": "changed", keep: "changed", new: "added" });

    const restored = await t.req(`/v1/workspaces/${t.ws}/checkpoints/${cp.id}/restore`, { method: "POST" });
    expect(restored.status, await restored.clone().text()).toBe(200);
    expect(await linksOf(t)).toEqual({ ".venv/bin/python": "python3", keep: "real.txt" });

    const fork = await t.req(`/v1/workspaces`, { method: "POST", headers: json, body: JSON.stringify({ id: "forked", from_workspace: t.ws }) });
    expect(fork.status, await fork.clone().text()).toBe(201);
    expect(await linksOf(t, "forked")).toEqual({ ".venv/bin/python": "python3", keep: "real.txt" });
  });
});
