/**
 * storage_bytes and files_per_workspace on their real engine: the LIMITS Durable Object in workerd
 * over local R2. Every refusal is QUOTA_EXCEEDED naming quota, usage and limit, before any byte is
 * written (storage snapshot identical, the refusal's audit entry aside); deletes give the budget back;
 * concurrent writers near the limit pass exactly up to it (docs/limits-and-quotas.md: the bound).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../lib/limits/durable-object.js";
import { admin, newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { snapshot } from "../archive/helpers.js";
import { tar } from "../archive/archives.js";

const limitsApp = () => testApp({ limits: durableLimits(env.LIMITS) });

async function setLimits(t: Tenant, limits: Record<string, number>) {
  expect((await admin(t.app, `/v1/admin/tenants/${t.tenant}/limits`, limits, "PUT")).status).toBe(200);
}

const put = (t: Tenant, path: string, body: string, ws = t.ws) =>
  t.req(`/v1/workspaces/${ws}/files/${path}`, { method: "PUT", headers: { "content-length": String(new TextEncoder().encode(body).length) }, body });

async function refused(res: Response | { status: number; body: any }, quota: string, usage: number, limit: number) {
  const body = res instanceof Response ? ((await res.json()) as any) : res.body;
  expect(res.status, JSON.stringify(body)).toBe(413);
  expect(body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota, usage, limit } });
  expect(body.error.message).toContain(`${quota} quota is ${limit}`);
}

describe("files_per_workspace", () => {
  it("a write, an upload and an import past it are refused before any byte is written; an overwrite is not a new file; a delete gives the place back", async () => {
    const t = await newTenant(limitsApp());
    await setLimits(t, { files_per_workspace: 3 });
    expect((await t.call("write", { file_path: "a.txt", content: "a" })).status).toBe(200);
    await upload(t, "b.txt", "b");
    await upload(t, "c.txt", "c");
    const before = await snapshot(t.tenant);
    await refused(await t.call("write", { file_path: "d.txt", content: "d" }), "files_per_workspace", 3, 3);
    await refused(await put(t, "d.txt", "d"), "files_per_workspace", 3, 3);
    await refused(await t.req(`/v1/workspaces/${t.ws}/import`, { method: "POST", headers: { "content-type": "application/x-tar" }, body: tar([{ name: "d.txt", body: "d" }]) }), "files_per_workspace", 3, 3);
    expect(await snapshot(t.tenant)).toEqual(before);
    // Overwriting a file adds no file.
    await upload(t, "b.txt", "bb");
    expect((await t.call("write", { file_path: "a.txt", content: "aa" }, "s1")).status).toBe(200);
    // A delete gives its place back.
    expect((await t.req(`/v1/workspaces/${t.ws}/files/c.txt`, { method: "DELETE" })).status).toBe(200);
    expect((await t.call("write", { file_path: "d.txt", content: "d" })).status).toBe(200);
    await refused(await put(t, "e.txt", "e"), "files_per_workspace", 3, 3);
  });
});

describe("storage_bytes", () => {
  it("across the tenant's workspaces: an upload, a write, an import, a fork and a restore that would cross it are refused, storage unchanged; deletes give the bytes back", async () => {
    const t = await newTenant(limitsApp());
    await setLimits(t, { storage_bytes: 100 });
    await upload(t, "big.txt", "x".repeat(60));
    const cp = (await (await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json()) as any;
    expect(cp.id).toBeTruthy();
    expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "other" }) })).status).toBe(201);
    await upload(t, "o.txt", "y".repeat(30)); // main: 90 bytes, the tenant's all
    const before = await snapshot(t.tenant);
    await refused(await put(t, "more.txt", "z".repeat(11)), "storage_bytes", 90, 100);
    await refused(await t.call("write", { file_path: "more.txt", content: "z".repeat(11) }), "storage_bytes", 90, 100);
    await refused(await put(t, "x.txt", "z".repeat(11), "other"), "storage_bytes", 90, 100);
    await refused(await t.req(`/v1/workspaces/other/import`, { method: "POST", headers: { "content-type": "application/x-tar" }, body: tar([{ name: "p.txt", body: "p".repeat(20) }]) }), "storage_bytes", 90, 100);
    await refused(await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "forked", from_workspace: t.ws, checkpoint: cp.id }) }), "storage_bytes", 90, 100);
    expect(await snapshot(t.tenant)).toEqual(before);
    // Within the budget: exactly up to the limit.
    await upload(t, "ten.txt", "t".repeat(10));
    await refused(await put(t, "one.txt", "1"), "storage_bytes", 100, 100);
    // Deletes give the bytes back: the big file's 60 bytes are free again.
    expect((await t.req(`/v1/workspaces/${t.ws}/files/big.txt`, { method: "DELETE" })).status).toBe(200);
    await upload(t, "other-file.txt", "w".repeat(50));
    // 90 bytes again (o, ten, other-file); an empty file is a file of no bytes.
    await upload(t, "pad.txt", "");
    await refused(await put(t, "fill.txt", "f".repeat(40), "other"), "storage_bytes", 90, 100);
    // The restore makes main the checkpoint's tree (big.txt alone): 60 bytes, within the limit.
    const restored = await t.req(`/v1/workspaces/${t.ws}/checkpoints/${cp.id}/restore`, { method: "POST" });
    expect(restored.status).toBe(200);
    // The restored tree (big.txt, 60 bytes) is what is counted now: 40 bytes are free.
    await upload(t, "forty.txt", "4".repeat(40));
    await refused(await put(t, "one.txt", "1"), "storage_bytes", 100, 100);
  });

  it("a restore that would cross it is refused before the switch", async () => {
    const t = await newTenant(limitsApp());
    await setLimits(t, { storage_bytes: 100 });
    await upload(t, "big.txt", "x".repeat(60));
    const cp = (await (await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json()) as any;
    expect((await t.req(`/v1/workspaces/${t.ws}/files/big.txt`, { method: "DELETE" })).status).toBe(200);
    expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "other" }) })).status).toBe(201);
    await upload({ ...t, ws: "other" }, "o.txt", "o".repeat(70));
    const before = await snapshot(t.tenant);
    await refused(await t.req(`/v1/workspaces/${t.ws}/checkpoints/${cp.id}/restore`, { method: "POST" }), "storage_bytes", 70, 100);
    expect(await snapshot(t.tenant)).toEqual(before);
  });
});

describe("concurrent writers near the limit", () => {
  it("20 concurrent new files through two app instances at files_per_workspace 5 (4 there): exactly 1 passes; 20 concurrent 10-byte uploads with 50 bytes free: exactly 5 pass", async () => {
    const one = limitsApp();
    const two = limitsApp(); // another isolate: the same object
    const t = await newTenant(one);
    await setLimits(t, { files_per_workspace: 5, storage_bytes: 1000 });
    for (const p of ["a", "b", "c", "d"]) await upload(t, `${p}.txt`, "1");
    const as = (app: typeof one) => (path: string, init: RequestInit) => app.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, ...(init.headers as Record<string, string>) } });
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => as(i % 2 ? two : one)(`/v1/workspaces/${t.ws}/files/n${i}.txt`, { method: "PUT", headers: { "content-length": "1" }, body: "n" })));
    expect(first.filter((r) => r.status === 201).length).toBe(1);
    expect(first.filter((r) => r.status === 413).length).toBe(19);
    // Bytes: a fresh tenant, 950 of 1000 bytes used in files, 20 uploads of 10 bytes each.
    const u = await newTenant(one);
    await setLimits(u, { storage_bytes: 1000 });
    await upload(u, "base.bin", "b".repeat(950));
    const asU = (app: typeof one) => (path: string, init: RequestInit) => app.request(path, { ...init, headers: { authorization: `Bearer ${u.key}`, ...(init.headers as Record<string, string>) } });
    const second = await Promise.all(Array.from({ length: 20 }, (_, i) => asU(i % 2 ? two : one)(`/v1/workspaces/${u.ws}/files/m${i}.txt`, { method: "PUT", headers: { "content-length": "10" }, body: "m".repeat(10) })));
    expect(second.filter((r) => r.status === 201).length).toBe(5);
    expect(second.filter((r) => r.status === 413).length).toBe(15);
  }, 120_000);
});

describe("undo", () => {
  const undo = (t: Tenant, callId: string) =>
    t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ call_id: callId }) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
  const status = async (t: Tenant, path: string) => (await t.req(`/v1/workspaces/${t.ws}/files/${path}`, {})).status;

  it("an undo that would pass files_per_workspace or storage_bytes on its way is refused whole before it writes (413, nothing restored), and runs once there is room", async () => {
    const t = await newTenant(limitsApp(), { policy: { gate: [] } });
    await setLimits(t, { files_per_workspace: 6 });
    for (const n of [1, 2, 3, 4, 5]) await upload(t, `d/f${n}.txt`, "x");
    const del = await t.call("delete", { path: "d", recursive: true }, "s1");
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    for (const n of [1, 2, 3]) await upload(t, `g${n}.txt`, "g"); // room for 3 of the 5 files the undo puts back
    const u = await undo(t, del.body.call_id);
    expect(u.status, JSON.stringify(u.body)).toBe(413);
    expect(u.body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "files_per_workspace", limit: 6, needed: 5 } });
    expect(u.body.error.message).toContain(`Undo of call ${del.body.call_id} needs 5 more files`);
    for (const n of [1, 2, 3, 4, 5]) expect(await status(t, `d/f${n}.txt`)).toBe(404); // before: three of them put back, then 409 CONFLICT
    // Room made: the same undo runs whole (the refusal did not claim it).
    for (const n of [1, 2, 3]) expect((await t.req(`/v1/workspaces/${t.ws}/files/g${n}.txt`, { method: "DELETE" })).status).toBe(200);
    expect((await undo(t, del.body.call_id)).status).toBe(200);
    for (const n of [1, 2, 3, 4, 5]) expect(await status(t, `d/f${n}.txt`)).toBe(200);

    // Bytes: a 100-byte version put back over the 1-byte one the call left needs 99 bytes more.
    const b = await newTenant(limitsApp());
    await setLimits(b, { storage_bytes: 150 });
    expect((await b.call("write", { file_path: "big.txt", content: "x".repeat(100) }, "s1")).status).toBe(200);
    const shrink = await b.call("write", { file_path: "big.txt", content: "y" }, "s1");
    expect(shrink.status).toBe(200);
    await upload(b, "fill.bin", "f".repeat(100)); // 101 of 150 used
    const ub = await undo(b, shrink.body.call_id);
    expect(ub.status, JSON.stringify(ub.body)).toBe(413);
    expect(ub.body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "storage_bytes", limit: 150, needed: 99 } });
    expect(await (await b.req(`/v1/workspaces/${b.ws}/files/big.txt`, {})).text()).toBe("y");
  });
});
