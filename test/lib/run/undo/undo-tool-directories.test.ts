/**
 * Undo of a tool call that made or removed explicit (empty) directories, through the HTTP tool route
 * (workerd, local R2): delete (recursive, and of an empty directory) and move journal the markers they
 * remove and make, as bash's write-back does (lib/workspace/directories.ts), so undo puts the tree back
 * as the user saw it: empty directories included. Before, the files came back and the empty
 * directories did not (a recursive delete, a directory move), and deleting an empty directory gave
 * nothing to undo.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, UNGATED, upload, type Tenant } from "../../../helpers.js";

const app = testApp();

const undo = (t: Tenant, body: Record<string, unknown>) =>
  t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

const mkdir = async (t: Tenant, dir: string) => expect((await t.req(`/v1/workspaces/${t.ws}/files/${dir}/`, { method: "PUT" })).status).toBe(201);

/** The tree as storage holds it: every file and marker (`dir/`) → etag. */
async function tree(t: Tenant): Promise<Record<string, string>> {
  const prefix = `t/${t.tenant}/w/${t.ws}/f/`;
  const out: Record<string, string> = {};
  let cursor: string | undefined;
  do {
    const r = await env.FILES.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of r.objects) out[o.key.slice(prefix.length)] = o.etag;
    cursor = r.truncated ? r.cursor : undefined;
  } while (cursor);
  return out;
}

async function filled(): Promise<Tenant> {
  const t = await newTenant(app, UNGATED);
  await upload(t, "a/f.txt", "f\n");
  await mkdir(t, "a/empty");
  await mkdir(t, "a/deep/er");
  await mkdir(t, "lone");
  return t;
}

describe("undo of tool calls that change explicit directories", () => {
  it("delete recursive: undo brings back the files and the empty directories below", async () => {
    const t = await filled();
    const before = await tree(t);
    expect(Object.keys(before)).toEqual(expect.arrayContaining(["a/empty/", "a/deep/er/"]));
    const del = await t.call("delete", { path: "a", recursive: true }, "s1");
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    expect(Object.keys(await tree(t))).toEqual(["lone/"]);
    const u = await undo(t, { call_id: del.body.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    expect(u.body.restored).toEqual(expect.arrayContaining([{ path: "a/empty/", action: "recreated" }, { path: "a/deep/er/", action: "recreated" }, { path: "a/f.txt", action: "recreated" }]));
    expect(await tree(t)).toEqual(before);
  });

  it("delete of an empty directory is undoable: it has a call_id, and undo makes the directory again", async () => {
    const t = await filled();
    const before = await tree(t);
    const del = await t.call("delete", { path: "lone" }, "s1");
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    expect(typeof del.body.call_id).toBe("string");
    const u = await undo(t, { call_id: del.body.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    expect(u.body.restored).toEqual([{ path: "lone/", action: "recreated" }]);
    expect(await tree(t)).toEqual(before);
  });

  it("move of a directory: undo puts its empty directories back at the source and leaves none at the target", async () => {
    const t = await filled();
    const before = await tree(t);
    const mv = await t.call("move", { from: "a", to: "b" }, "s1");
    expect(mv.status, JSON.stringify(mv.body)).toBe(200);
    expect(Object.keys(await tree(t)).sort()).toEqual(["b/deep/er/", "b/empty/", "b/f.txt", "lone/"]);
    const u = await undo(t, { call_id: mv.body.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    expect(await tree(t)).toEqual(before);
  });

  it("apply_patch that deletes a directory's last file and moves a file out of an explicit one: undo leaves the tree as it was (markers untouched by the call)", async () => {
    const t = await filled();
    await upload(t, "solo/only.txt", "x\n");
    await upload(t, "lone/f.txt", "f\n");
    const before = await tree(t);
    const patch = "*** Begin Patch\n*** Delete File: solo/only.txt\n*** Update File: lone/f.txt\n*** Move to: elsewhere/f.txt\n@@\n-f\n+g\n*** End Patch";
    const p = await t.call("apply_patch", { patch }, "s1");
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    expect(Object.keys(await tree(t))).toEqual(expect.arrayContaining(["lone/", "elsewhere/f.txt"]));
    expect(Object.keys(await tree(t)).filter((k) => k.startsWith("solo/"))).toEqual([]);
    const u = await undo(t, { call_id: p.body.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    expect(await tree(t)).toEqual(before);
  });

  it("a directory made again by another call since is not removed twice: undo of the delete is refused, nothing written", async () => {
    const t = await filled();
    const del = await t.call("delete", { path: "lone" }, "s1");
    await mkdir(t, "lone");
    await upload(t, "lone/new.txt", "mine\n");
    const now = await tree(t);
    const u = await undo(t, { call_id: del.body.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(409);
    expect(await tree(t)).toEqual(now);
  });

  it("a directory the call made, removed and made again with new content since: undo takes only the call's marker; the directory and the new content stay (no data lost)", async () => {
    const t = await filled();
    const cp = await t.call("copy", { from: "a", to: "c" }, "s1"); // makes c/empty/ and c/deep/er/
    expect(cp.status, JSON.stringify(cp.body)).toBe(200);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/c/empty/`, { method: "DELETE" })).status).toBe(200);
    await mkdir(t, "c/empty"); // the same zero-byte marker, the same etag: undo cannot tell it from the call's
    await upload(t, "c/empty/new.txt", "mine\n");
    const u = await undo(t, { call_id: cp.body.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    const after = await tree(t);
    expect(after["c/empty/new.txt"]).toBeDefined();
    expect(Object.keys(after).filter((k) => k.startsWith("c/"))).toEqual(["c/empty/new.txt"]);
    const ls = await t.call("ls", { path: "c/empty" });
    expect(ls.status, JSON.stringify(ls.body)).toBe(200);
    expect(ls.body.output).toContain("new.txt");
  });
});
