/**
 * Explicit directories (markers, docs/storage.md "Directories") against files_per_workspace (issue
 * #28): each marker is one entry of the quota, charged before it is made and given back when it is
 * removed, by every writer (raw PUT of a directory, import, move and copy, delete, undo), and the
 * recount counts them. The LIMITS Durable Object in workerd over local R2. Before, markers counted
 * nowhere: a full workspace took any number of them.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import { countStored } from "../../../lib/limits/storage-quota.js";
import { openWorkspace } from "../../../lib/layers/open.js";
import { ManifestCache } from "../../../lib/layers/manifest.js";
import { filesPrefix } from "../../../lib/layout/paths.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { admin, newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { snapshot } from "../archive/helpers.js";
import { tar } from "../archive/archives.js";

const limits = durableLimits(env.LIMITS);
const limitsApp = () => testApp({ limits });

async function setLimits(t: Tenant, l: Record<string, number>) {
  expect((await admin(t.app, `/v1/admin/tenants/${t.tenant}/limits`, l, "PUT")).status).toBe(200);
}

async function refused(res: Response | { status: number; body: any }, usage: number, limit: number) {
  const body = res instanceof Response ? ((await res.json()) as any) : res.body;
  expect(res.status, JSON.stringify(body)).toBe(413);
  expect(body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "files_per_workspace", usage, limit } });
  expect(body.error.message).toContain(`files_per_workspace quota is ${limit}`);
}

const mkdir = (t: Tenant, dir: string) => t.req(`/v1/workspaces/${t.ws}/files/${dir}/`, { method: "PUT", headers: { "content-length": "0" } });
const rmdir = (t: Tenant, dir: string) => t.req(`/v1/workspaces/${t.ws}/files/${dir}/`, { method: "DELETE" });
const importTar = (t: Tenant, items: Parameters<typeof tar>[0]) => t.req(`/v1/workspaces/${t.ws}/import`, { method: "POST", headers: { "content-type": "application/x-tar" }, body: tar(items) });

/** The limits object's count of the workspace, and the count a listing of its tree gives (the recount's). */
async function counts(t: Tenant): Promise<{ charged: number; listed: number }> {
  const d = await limits.chargeStorage(t.tenant, { key_id: "" }, t.ws, { files: 0, bytes: 0 });
  if (!d.ok) throw new Error(JSON.stringify(d));
  const storage = r2Driver(env.FILES);
  const { driver } = await openWorkspace({ storage, manifests: new ManifestCache() }, t.tenant, t.ws);
  return { charged: d.files, listed: (await countStored(driver, filesPrefix(t.tenant, t.ws))).files };
}

/**
 * The workspace's count as the code before 2026-12-02 kept it in the LIMITS object's storage (`usage/<ws>`:
 * files and bytes, markers not counted, no version), and the object restarted (a deploy, an eviction) so it loads it.
 */
async function keptBeforeMarkers(t: Tenant, files: number, bytes: number): Promise<void> {
  const stub = env.LIMITS.get(env.LIMITS.idFromName(t.tenant));
  await runInDurableObject(stub, (_o, state: DurableObjectState) => state.storage.put(`usage/${t.ws}`, { files, bytes }));
  await runInDurableObject(stub, (_o, state: DurableObjectState) => state.abort("restarted to load the old count")).catch(() => {});
}

describe("explicit directories count against files_per_workspace", () => {
  it("a count kept before markers counted is counted again at its first charge: its first decision is exact, and a marker removed before it frees nothing it never took", async () => {
    const t = await newTenant(limitsApp());
    await setLimits(t, { files_per_workspace: 3 });
    await upload(t, "a.txt", "a");
    expect((await mkdir(t, "d1")).status).toBe(201);
    expect((await mkdir(t, "d2")).status).toBe(201);
    // The old code counted a.txt only: 1 entry of 3 stored. Its first decision: the workspace is full.
    await keptBeforeMarkers(t, 1, 1);
    const before = await snapshot(t.tenant);
    await refused(await mkdir(t, "d3"), 3, 3);
    expect(await snapshot(t.tenant)).toEqual(before);
    expect(await counts(t)).toEqual({ charged: 3, listed: 3 });
    // Again, and a marker removed first: its give-back meets the old count (before, 1 became 0 while 2 entries stayed).
    await keptBeforeMarkers(t, 1, 1);
    expect((await rmdir(t, "d1")).status).toBe(200);
    expect((await mkdir(t, "d3")).status).toBe(201);
    expect(await counts(t)).toEqual({ charged: 3, listed: 3 });
    await refused(await t.call("write", { file_path: "b.txt", content: "b" }), 3, 3);
  });


  it("a raw PUT of a directory past the quota is 413 naming it, nothing written; an existing one costs nothing; a delete of an empty directory frees its entry", async () => {
    const t = await newTenant(limitsApp());
    await setLimits(t, { files_per_workspace: 3 });
    await upload(t, "a.txt", "a");
    expect((await mkdir(t, "d1")).status).toBe(201);
    expect((await mkdir(t, "d2")).status).toBe(201);
    const before = await snapshot(t.tenant);
    const r = await mkdir(t, "d3");
    expect(((await r.clone().json()) as any).error.message).toContain("The directory d3/ needs 1 more entry (an explicit directory counts as a file)");
    await refused(r, 3, 3);
    await refused(await t.call("write", { file_path: "b.txt", content: "b" }), 3, 3);
    expect(await snapshot(t.tenant)).toEqual(before);
    // Made again: there already, no new entry.
    expect((await mkdir(t, "d1")).status).toBe(200);
    expect(await counts(t)).toEqual({ charged: 3, listed: 3 });
    // The raw DELETE of an empty directory frees its entry; so does the delete tool.
    expect((await rmdir(t, "d1")).status).toBe(200);
    expect((await mkdir(t, "d3")).status).toBe(201);
    expect((await t.call("delete", { path: "d2" })).status).toBe(200);
    expect((await t.call("write", { file_path: "b.txt", content: "b" })).status).toBe(200);
    await refused(await mkdir(t, "d4"), 3, 3);
    expect(await counts(t)).toEqual({ charged: 3, listed: 3 });
  });

  it("an import whose empty directories pass the quota is refused whole, storage as it was; one that fits counts them", async () => {
    const t = await newTenant(limitsApp());
    await setLimits(t, { files_per_workspace: 5 });
    await upload(t, "a.txt", "a");
    const before = await snapshot(t.tenant);
    const dirs = Array.from({ length: 6 }, (_, i) => ({ name: `e${i}/`, type: "5" as const }));
    const r = await importTar(t, [{ name: "b.txt", body: "b" }, ...dirs]);
    await refused(r, 1, 5);
    expect(await snapshot(t.tenant)).toEqual(before);
    const ok = await importTar(t, [{ name: "b.txt", body: "b" }, ...dirs.slice(0, 3)]);
    expect(ok.status, await ok.clone().text()).toBe(200);
    expect(((await ok.json()) as any).empty_directories).toBe(3);
    expect(await counts(t)).toEqual({ charged: 5, listed: 5 });
    await refused(await mkdir(t, "one-more"), 5, 5);
  });

  it("move and copy of explicit directories charge the markers they make and free those they remove; the count stays the recount's", async () => {
    const t = await newTenant(limitsApp());
    await setLimits(t, { files_per_workspace: 4 });
    expect((await mkdir(t, "src/empty")).status).toBe(201);
    await upload(t, "src/f.txt", "f");
    // src/empty/ and src/f.txt: a copy needs 2 more entries (the file and the marker).
    expect((await t.call("copy", { from: "src", to: "dst" })).status).toBe(200);
    expect(await counts(t)).toEqual({ charged: 4, listed: 4 });
    const before = await snapshot(t.tenant);
    const r = await t.call("copy", { from: "src/empty", to: "third" });
    await refused(r, 4, 4);
    expect(await snapshot(t.tenant)).toEqual(before);
    // A move of an empty directory makes its marker at the target before it removes the source's: at a full quota it is refused, nothing moved.
    await refused(await t.call("move", { from: "dst/empty", to: "moved" }), 4, 4);
    expect((await t.call("delete", { path: "dst/f.txt" })).status).toBe(200);
    expect((await t.call("move", { from: "dst/empty", to: "moved" })).status).toBe(200);
    expect(await counts(t)).toEqual({ charged: 3, listed: 3 });
  });

  it("undo that makes a directory again counts its marker: past the quota it is refused before it writes (413 naming the quota), and the count stays the recount's", async () => {
    const t = await newTenant(limitsApp());
    await setLimits(t, { files_per_workspace: 2 });
    const undo = (callId: string) => t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ call_id: callId }) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    expect((await mkdir(t, "d1")).status).toBe(201);
    await upload(t, "a.txt", "a");
    const del = await t.call("delete", { path: "d1" });
    expect(del.status).toBe(200);
    expect((await t.call("write", { file_path: "b.txt", content: "b" })).status).toBe(200);
    const u = await undo(del.body.call_id);
    await refused(u, 2, 2); // before 2026-12-02: 409 CONFLICT, once the files were put back (lib/run/undo/undo-room.ts)
    expect(await counts(t)).toEqual({ charged: 2, listed: 2 });
  });

  it("a fork from a checkpoint counts the explicit directories of its manifest: past the quota, no workspace is made", async () => {
    const t = await newTenant(limitsApp());
    await setLimits(t, { files_per_workspace: 3 });
    expect((await mkdir(t, "d1")).status).toBe(201);
    expect((await mkdir(t, "d2")).status).toBe(201);
    await upload(t, "a.txt", "a");
    const cp = (await (await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json()) as any;
    expect(cp.id).toBeTruthy();
    await setLimits(t, { files_per_workspace: 2 });
    const before = await snapshot(t.tenant);
    const fork = (body: Record<string, unknown>) => t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    await refused(await fork({ id: "from-cp", from_workspace: t.ws, checkpoint: cp.id }), 0, 2);
    expect(await snapshot(t.tenant)).toEqual(before);
    await setLimits(t, { files_per_workspace: 3 });
    expect((await fork({ id: "from-cp", from_workspace: t.ws, checkpoint: cp.id })).status).toBe(201);
    expect(await counts({ ...t, ws: "from-cp" })).toEqual({ charged: 3, listed: 3 });
  });
});
