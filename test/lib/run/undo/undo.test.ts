/** Per-call undo through HTTP (workerd, local R2): lib/run/undo/, lib/api/routes/undo.ts. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import { newTenant, testApp, upload, type Tenant } from "../../../helpers.js";
import { changeAfterLook } from "../../../support/change-after-look.js";

const app = testApp();

const undo = (t: Tenant, body: Record<string, unknown>, session = "s1", ws = t.ws) =>
  t.req(`/v1/workspaces/${ws}/undo`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

const text = async (t: Tenant, path: string) => {
  const r = await t.req(`/v1/workspaces/${t.ws}/files/${path}`);
  return r.status === 200 ? r.text() : null;
};

/** Every object of the workspace (files and x/), key → etag. */
async function snapshot(t: Tenant): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  let cursor: string | undefined;
  do {
    const r = await env.FILES.list({ prefix: `t/${t.tenant}/w/${t.ws}/`, ...(cursor ? { cursor } : {}) });
    for (const o of r.objects) if (!/\/audit\//.test(o.key)) out[o.key] = o.etag; // each call's audit entry is not what undo restores
    cursor = r.truncated ? r.cursor : undefined;
  } while (cursor);
  return out;
}

describe("undo of tool calls", () => {
  it("write (create and overwrite), edit, delete are undone; search follows", async () => {
    const t = await newTenant(app);
    const w = await t.call("write", { file_path: "a.txt", content: "one alpha\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(typeof w.body.call_id).toBe("string");
    await t.call("read", { file_path: "a.txt" });
    const e = await t.call("edit", { file_path: "a.txt", old_string: "alpha", new_string: "bravo" });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    expect(await text(t, "a.txt")).toBe("one bravo\n");
    const u = await undo(t, { call_id: e.body.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    expect(u.body.restored).toEqual([{ path: "a.txt", action: "restored" }]);
    expect(await text(t, "a.txt")).toBe("one alpha\n");
    const g = await t.call("grep", { pattern: "bravo", output_mode: "files_with_matches" });
    expect(g.body.output).not.toContain("a.txt");
    const g2 = await t.call("grep", { pattern: "alpha", output_mode: "files_with_matches" });
    expect(g2.body.output).toContain("a.txt");
    // A second undo of the same call: CONFLICT, nothing written.
    const before = await snapshot(t);
    const again = await undo(t, { call_id: e.body.call_id });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("CONFLICT");
    expect(await snapshot(t)).toEqual(before);
    // Session undo: the newest not yet undone is the create; undoing it deletes the file.
    const s = await undo(t, {});
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    expect(s.body.call_id).toBe(w.body.call_id);
    expect(await text(t, "a.txt")).toBeNull();
  });

  it("delete and move are undone; copy too", async () => {
    const t = await newTenant(app);
    await upload(t, "d/x.txt", "x\n");
    await upload(t, "d/y.txt", "y\n");
    const del = await t.call("delete", { path: "d/x.txt" });
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    expect((await undo(t, { call_id: del.body.call_id })).status).toBe(200);
    expect(await text(t, "d/x.txt")).toBe("x\n");
    const mv = await t.call("move", { from: "d/y.txt", to: "e/y.txt" });
    expect(mv.status, JSON.stringify(mv.body)).toBe(200);
    expect(await text(t, "d/y.txt")).toBeNull();
    const u = await undo(t, { call_id: mv.body.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    expect(await text(t, "d/y.txt")).toBe("y\n");
    expect(await text(t, "e/y.txt")).toBeNull();
    const cp = await t.call("copy", { from: "d", to: "c" });
    expect(cp.status, JSON.stringify(cp.body)).toBe(200);
    expect((await undo(t, { call_id: cp.body.call_id })).status).toBe(200);
    expect(await text(t, "c/x.txt")).toBeNull();
    expect(await text(t, "d/x.txt")).toBe("x\n");
  });

  it("is refused as a whole when a file changed since; storage unchanged", async () => {
    const t = await newTenant(app);
    await upload(t, "a.txt", "a\n");
    await upload(t, "b.txt", "b\n");
    const p = await t.call("apply_patch", { patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch" });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    await upload(t, "b.txt", "changed by someone\n");
    const before = await snapshot(t);
    const u = await undo(t, { call_id: p.body.call_id });
    expect(u.status).toBe(409);
    expect(u.body.error.code).toBe("FILE_MODIFIED");
    expect(u.body.error.details.files).toEqual(["b.txt"]);
    expect(await snapshot(t)).toEqual(before);
  });

  it("a file changed between undo's check and its restore is not overwritten: CONFLICT, the other writer's version kept", async () => {
    const { storage, arm } = changeAfterLook(r2Driver(env.FILES), "changed by someone\n");
    const t = await newTenant(testApp({ storage }));
    await upload(t, "a.txt", "a\n");
    const p = await t.call("apply_patch", { patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch" });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    arm("a.txt", "head"); // undo's check of the version the call left: the other writer lands right after it
    const u = await undo(t, { call_id: p.body.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(409);
    expect(u.body.error.details.left).toEqual(["a.txt"]);
    expect(await text(t, "a.txt")).toBe("changed by someone\n");
  });

  it("over the lower layer (after a checkpoint) references the pack", async () => {
    const t = await newTenant(app);
    await upload(t, "low.txt", "lower bytes\n");
    const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(cp.status).toBe(201);
    await t.call("read", { file_path: "low.txt" });
    const w = await t.call("write", { file_path: "low.txt", content: "upper bytes\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    const blobs = Object.keys(await snapshot(t)).filter((k) => /\/x\/undo\/.*\/b-/.test(k));
    expect(blobs).toEqual([]);
    expect((await undo(t, { call_id: w.body.call_id })).status).toBe(200);
    expect(await text(t, "low.txt")).toBe("lower bytes\n");
  });

  it("lists a session's undoable calls; tenant B gets 404 and changes nothing", async () => {
    const main = await newTenant(app);
    // A workspace only tenant A has (every test tenant has a "main").
    expect((await main.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "only-a" }) })).status).toBe(201);
    const t = { ...main, ws: "only-a" };
    const w = await t.req(`/v1/workspaces/only-a/tools/write`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify({ file_path: "f.txt", content: "f\n" }) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    expect(w.status).toBe(200);
    const l = await t.req(`/v1/workspaces/${t.ws}/undo?session=s1`);
    const body = (await l.json()) as any;
    expect(l.status).toBe(200);
    expect(body.calls[0]).toMatchObject({ call_id: w.body.call_id, tool: "write", paths: ["f.txt"], undone: false });
    const b = await newTenant(app);
    const before = await snapshot(t);
    expect((await b.req(`/v1/workspaces/${t.ws}/undo?session=s1`)).status).toBe(404);
    const r = await b.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ call_id: w.body.call_id }) });
    expect(r.status).toBe(404);
    expect(await snapshot(t)).toEqual(before);
  });
});
