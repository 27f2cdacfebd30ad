/**
 * An import past the storage quotas stops writing once it passes what they could accept (issue #28;
 * lib/archive/import-bound.ts), instead of writing the whole archive and being refused at the end:
 * the LIMITS Durable Object in workerd over local R2, every storage operation counted
 * (test/support/counting-stores.ts) and the bytes of every pack PUT summed. Refused: QUOTA_EXCEEDED
 * naming quota, usage and limit, storage as it was. Before the bound, the 64 MiB tar.gz below wrote
 * 32 packs (64 MiB) and the zip 3 packs (20 MiB) before the charge at the end refused them.
 */
import { describe, expect, it } from "vitest";
import { packCountingApp } from "../../support/pack-counting-app.js";
import { admin, newTenant, type Tenant } from "../../helpers.js";
import { importReq, snapshot, workspaceFiles } from "../archive/helpers.js";
import { tar, zip } from "../archive/archives.js";
import { gzipBomb } from "../archive/bombs.js";

const MiB = 1024 * 1024;

const countingApp = () => packCountingApp();

async function setLimits(t: Tenant, limits: Record<string, number>) {
  expect((await admin(t.app, `/v1/admin/tenants/${t.tenant}/limits`, limits, "PUT")).status).toBe(200);
}

function quotaRefusal(r: { status: number; body: any }, quota: string, usage: number, limit: number) {
  expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(413);
  expect(r.body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota, usage, limit } });
  expect(r.body.error.message).toContain(`${quota} quota is ${limit}`);
  return r.body.error as { message: string; details: Record<string, number> };
}

const zeros = (n: number) => new Uint8Array(n);

describe("an import past the storage quotas stops writing at the bound", () => {
  it("a tar.gz bomb (64 MiB inflated, 2 MiB entries) under storage_bytes 5 MiB: refused after at most the bound's packs, storage as it was; by create-with-archive too", async () => {
    const { app, packs, reset } = countingApp();
    const t = await newTenant(app);
    await setLimits(t, { storage_bytes: 5 * MiB });
    const before = await snapshot(t.tenant);
    reset();
    const bomb = gzipBomb(64 * MiB, 2 * MiB);
    const r = await importReq(t, bomb.stream);
    // Two entries of 2 MiB (each streamed into a pack of its own), then the third would pass the bound: never read.
    expect(packs).toEqual({ puts: 2, bytes: 4 * MiB });
    const e = quotaRefusal(r, "storage_bytes", 0, 5 * MiB);
    expect(e.details).toMatchObject({ bytes_seen: 4 * MiB, bytes_allowed: 5 * MiB, entry: "bomb/2.bin", files_written: 0 });
    expect(e.message).toContain('The import stopped before "bomb/2.bin"');
    expect(bomb.pulled()).toBeLessThan(64 * 1024); // the gzip's 64 MiB are 64 KB compressed: read up to the third entry only
    expect(await snapshot(t.tenant)).toEqual(before);

    // POST /v1/workspaces with the same archive: refused the same way, no workspace left.
    reset();
    const created = await t.req("/v1/workspaces?id=bombed", { method: "POST", headers: { "content-type": "application/gzip" }, body: gzipBomb(64 * MiB, 2 * MiB).stream, duplex: "half" } as RequestInit);
    quotaRefusal({ status: created.status, body: await created.json() }, "storage_bytes", 0, 5 * MiB);
    expect(packs.puts).toBeLessThanOrEqual(2);
    expect(await snapshot(t.tenant)).toEqual(before);
  }, 60_000);

  it("a zip whose central directory declares more than the bound: refused before any entry is read, no pack written", async () => {
    const { app, packs, reset } = countingApp();
    const t = await newTenant(app);
    await setLimits(t, { storage_bytes: 4 * MiB });
    const body = await zip(Array.from({ length: 20 }, (_, i) => ({ name: `z/${i}.bin`, body: zeros(MiB), deflate: true })));
    const before = await snapshot(t.tenant);
    reset();
    const r = await importReq(t, body, "", { "content-type": "application/zip", "content-length": String(body.length) });
    expect(packs).toEqual({ puts: 0, bytes: 0 });
    const e = quotaRefusal(r, "storage_bytes", 0, 4 * MiB);
    expect(e.details).toMatchObject({ declared_bytes: 5 * MiB, bytes_allowed: 4 * MiB, files_written: 0 });
    expect(e.message).toContain("central directory declares");
    expect(await snapshot(t.tenant)).toEqual(before); // the spooled copy deleted too
  }, 60_000);

  it("a zip whose central directory lies (declares 1,000 bytes an entry, holds 1 MiB): still stopped by the bytes themselves, nothing written", async () => {
    const { app, packs, reset } = countingApp();
    const t = await newTenant(app);
    await setLimits(t, { storage_bytes: 4 * MiB });
    const body = await zip(Array.from({ length: 20 }, (_, i) => ({ name: `z/${i}.bin`, body: zeros(MiB), deflate: true, declaredSize: 1000 })));
    const before = await snapshot(t.tenant);
    reset();
    const r = await importReq(t, body, "", { "content-type": "application/zip", "content-length": String(body.length) });
    expect(r.status, JSON.stringify(r.body).slice(0, 400)).toBe(400);
    expect(r.body.error.details).toMatchObject({ reason: "size_mismatch", entry: "z/0.bin", files_written: 0 });
    expect(packs).toEqual({ puts: 0, bytes: 0 });
    expect(await snapshot(t.tenant)).toEqual(before);
  }, 60_000);

  it("files_per_workspace: a tar of 10 new files with room for 4 stops before the 5th; no pack written", async () => {
    const { app, packs, reset } = countingApp();
    const t = await newTenant(app);
    await setLimits(t, { files_per_workspace: 4 });
    const before = await snapshot(t.tenant);
    reset();
    const r = await importReq(t, tar(Array.from({ length: 10 }, (_, i) => ({ name: `f${i}.txt`, body: "x".repeat(1000) }))));
    expect(packs.puts).toBe(0); // the four files were still in the pack's buffer
    const e = quotaRefusal(r, "files_per_workspace", 0, 4);
    expect(e.details).toMatchObject({ files_seen: 4, files_allowed: 4, entry: "f4.txt", files_written: 0 });
    expect(await snapshot(t.tenant)).toEqual(before);
  }, 60_000);
});

describe("imports within the quotas pass", () => {
  it("an archive that fits passes; a replace near the quota that frees as much as it writes passes, and so does a merge that overwrites", async () => {
    const { app, packs, reset } = countingApp();
    const t = await newTenant(app);
    await setLimits(t, { storage_bytes: 4 * MiB, files_per_workspace: 4 });
    const three = (tag: string) => tar(["a", "b", "c"].map((n) => ({ name: `${tag}-${n}.bin`, body: zeros(MiB) })));
    expect((await importReq(t, three("old"), "?prefix=d")).status).toBe(200); // 3 MiB, 3 files of 4 MiB, 4 files
    // replace: 3 MiB of other files where 1 MiB is free: the old tree's 3 MiB go.
    reset();
    const r = await importReq(t, three("new"), "?prefix=d&mode=replace");
    expect(r.status, JSON.stringify(r.body).slice(0, 400)).toBe(200);
    expect(r.body).toMatchObject({ files: 3, created: 3, deleted: 3 });
    expect(packs.bytes).toBe(3 * MiB);
    expect([...(await workspaceFiles(t)).keys()].sort()).toEqual(["d/new-a.bin", "d/new-b.bin", "d/new-c.bin"]);
    // merge over the same paths: nothing new.
    const m = await importReq(t, three("new"), "?prefix=d");
    expect(m.status, JSON.stringify(m.body).slice(0, 400)).toBe(200);
    expect(m.body).toMatchObject({ files: 3, updated: 3 });
    // One more file than the room: the charge at the end still counts exactly (the bound is not the accounting).
    quotaRefusal(await importReq(t, tar([{ name: "e.bin", body: zeros(MiB + 1) }])), "storage_bytes", 3 * MiB, 4 * MiB);
  }, 60_000);
});
