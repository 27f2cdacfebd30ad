/**
 * No content is reserved (issue #25, docs/whiteouts.md): a file of any bytes, among them the 22
 * bytes that marked deletions before (v1) and lookalikes of the new mark, written by every door
 * (raw PUT, write, copy, Anthropic's create, a raw PUT over a whiteout and over a lower file),
 * survives a checkpoint (a seal), a fork and a restore with the same bytes; deletions of lower
 * files still hide them. Workspaces made before marks (a v1 whiteout in the upper layer, no mark
 * in the record) keep working. Through HTTP on local R2 (whose listings carry no content type).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { V1_WHITEOUT_BODY, WHITEOUT_CONTENT_TYPE, WHITEOUT_SIZE } from "../../../lib/layers/whiteout.js";

const app = testApp();
const enc = new TextEncoder();
const V1 = enc.encode(V1_WHITEOUT_BODY);
/** A guess at a mark: the new body's shape with made-up hex digits (the real one is 128 random bits). */
const GUESS = enc.encode(`\u0000toolshed:whiteout:v2:${"0123456789abcdef".repeat(2)}`);

const metaKey = (t: Tenant, ws = t.ws) => `t/${t.tenant}/w/${ws}/meta.json`;
const fileKey = (t: Tenant, path: string, ws = t.ws) => `t/${t.tenant}/w/${ws}/f/${path}`;

/** The bytes of `path` through the raw files route; null when it answers 404. */
async function bytesOf(t: Tenant, path: string, ws = t.ws): Promise<Uint8Array | null> {
  const r = await t.req(`/v1/workspaces/${ws}/files/${path}`);
  if (r.status === 404) return (await r.body?.cancel(), null);
  expect(r.status, path).toBe(200);
  return new Uint8Array(await r.arrayBuffer());
}

/** Every file of the workspace, by the ls tool. */
async function lsFiles(t: Tenant, ws = t.ws): Promise<string[]> {
  const r = await t.req(`/v1/workspaces/${ws}/tools/ls`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "", recursive: true }) });
  const body = (await r.json()) as any;
  expect(r.status, JSON.stringify(body)).toBe(200);
  return body.data.entries.filter((e: any) => e.type === "file").map((e: any) => e.path).sort();
}

async function expectFiles(t: Tenant, files: Record<string, Uint8Array | null>, ws = t.ws): Promise<void> {
  for (const [path, want] of Object.entries(files)) expect(await bytesOf(t, path, ws), `${ws}:${path}`).toEqual(want);
  const present = Object.entries(files).filter(([, b]) => b !== null).map(([p]) => p);
  const listed = new Set(await lsFiles(t, ws));
  for (const p of Object.keys(files)) expect(listed.has(p), `${ws}:${p} listed`).toBe(present.includes(p));
}

async function checkpoint(t: Tenant, name: string) {
  const r = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name }) });
  const body = (await r.json()) as any;
  expect(r.status, JSON.stringify(body)).toBe(201);
  return body;
}

async function restore(t: Tenant, id: string) {
  const r = await t.req(`/v1/workspaces/${t.ws}/checkpoints/${id}/restore`, { method: "POST" });
  expect(r.status, await r.clone().text()).toBe(200);
}

async function fork(t: Tenant, id: string) {
  const r = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id, from_workspace: t.ws }) });
  const body = (await r.json()) as any;
  expect(r.status, JSON.stringify(body)).toBe(201);
  return body;
}

async function ok(res: Promise<{ status: number; body: any }>) {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

describe("any bytes are a file, through every door", () => {
  it("the v1 whiteout's bytes and a guessed mark survive checkpoint, fork and restore; deletions still hide lower files", async () => {
    const t = await newTenant(app);
    for (const p of ["keep.txt", "gone.txt", "over.txt", "wo.txt"]) await upload(t, p, `${p}\n`);
    await checkpoint(t, "base");
    // A whiteout at gone.txt; at wo.txt one that a raw PUT of the v1 bytes then replaces.
    await ok(t.call("delete", { path: "gone.txt" }));
    await ok(t.call("delete", { path: "wo.txt" }));
    await upload(t, "wo.txt", V1);
    // Every door: raw PUT (new, over a lower file, with the whiteouts' own content type), write, copy, Anthropic's create.
    await upload(t, "doors/raw.bin", V1);
    await upload(t, "over.txt", V1);
    await upload(t, "doors/guess.bin", GUESS);
    const typed = await t.req(`/v1/workspaces/${t.ws}/files/doors/typed.bin`, { method: "PUT", headers: { "content-type": WHITEOUT_CONTENT_TYPE, "content-length": String(V1.length) }, body: V1 });
    expect(typed.status, await typed.clone().text()).toBe(201);
    await ok(t.call("write", { file_path: "doors/write.bin", content: V1_WHITEOUT_BODY }));
    await ok(t.call("copy", { from: "doors/raw.bin", to: "doors/copy.bin" }));
    const created = await t.req(`/v1/workspaces/${t.ws}/compat/anthropic/str_replace_based_edit_tool`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ command: "create", path: "/doors/anthropic.bin", file_text: V1_WHITEOUT_BODY }) });
    expect(((await created.json()) as any).is_error).toBe(false);

    const want: Record<string, Uint8Array | null> = {
      "keep.txt": enc.encode("keep.txt\n"),
      "gone.txt": null,
      "wo.txt": V1,
      "over.txt": V1,
      "doors/raw.bin": V1,
      "doors/guess.bin": GUESS,
      "doors/typed.bin": V1,
      "doors/write.bin": V1,
      "doors/copy.bin": V1,
      "doors/anthropic.bin": V1,
    };
    await expectFiles(t, want);
    const cp = await checkpoint(t, "after-doors");
    expect((await env.FILES.list({ prefix: fileKey(t, "") })).objects).toEqual([]); // all sealed
    await expectFiles(t, want);

    const f = await fork(t, "forked");
    expect(f.whiteout).toBeUndefined();
    await expectFiles(t, want, "forked");

    // Change and delete some after the checkpoint; the restore brings the same bytes back.
    await ok(t.call("delete", { path: "doors/raw.bin" }));
    await upload(t, "doors/write.bin", "other");
    await ok(t.call("delete", { path: "keep.txt" }));
    await expectFiles(t, { ...want, "doors/raw.bin": null, "doors/write.bin": enc.encode("other"), "keep.txt": null });
    await restore(t, cp.id);
    await expectFiles(t, want);
    await checkpoint(t, "after-restore");
    await expectFiles(t, want);
  });

  it("random small byte strings survive a seal, over lower files, new paths and whiteouts", async () => {
    let s = 20251127;
    // The high bits of an LCG (its low bits repeat with short periods).
    const r = (n: number) => Math.floor(((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * n);
    const t = await newTenant(app);
    const lower = Array.from({ length: 12 }, (_, i) => `lower/${i}.txt`);
    for (const p of lower) await upload(t, p, `lower ${p}\n`);
    await checkpoint(t, "base");
    const want: Record<string, Uint8Array | null> = Object.fromEntries(lower.map((p) => [p, enc.encode(`lower ${p}\n`)]));
    for (const p of lower.slice(0, 4)) {
      await ok(t.call("delete", { path: p }));
      want[p] = null;
    }
    let exact = 0;
    for (let i = 0; i < 60; i++) {
      // Lengths around the whiteouts' (v1: 22, marked: WHITEOUT_SIZE), and their bytes with one changed.
      const kind = r(4);
      const len = kind === 0 ? V1.length : kind === 1 ? WHITEOUT_SIZE : r(64);
      const bytes = kind === 0 ? V1.slice() : kind === 1 ? GUESS.slice() : Uint8Array.from({ length: len }, () => r(256));
      if (kind < 2 && r(2)) {
        const at = r(bytes.length);
        bytes[at] = bytes[at]! ^ (1 + r(255));
      } else if (kind === 0) exact++;
      const path = r(3) === 0 ? lower[r(lower.length)]! : `new/${i}.bin`;
      await upload(t, path, bytes);
      want[path] = bytes;
    }
    expect(exact).toBeGreaterThan(2); // the v1 bytes themselves, several times
    await expectFiles(t, want);
    await checkpoint(t, "sealed");
    await expectFiles(t, want);
  });

  it("the mark is the workspace's own and no answer shows it", async () => {
    const t = await newTenant(app);
    const other = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "other" }) });
    expect(((await other.json()) as any).whiteout).toBeUndefined();
    const marks = await Promise.all([t.ws, "other"].map(async (ws) => JSON.parse(await (await env.FILES.get(metaKey(t, ws)))!.text()).whiteout as string));
    expect(marks[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(marks[1]).toMatch(/^[0-9a-f]{32}$/);
    expect(marks[0]).not.toBe(marks[1]);
    const got = (await (await t.req(`/v1/workspaces/${t.ws}`)).json()) as any;
    expect(got.id).toBe(t.ws);
    expect(got.whiteout).toBeUndefined();
    const listed = (await (await t.req("/v1/workspaces")).json()) as any;
    for (const w of listed.workspaces) expect(w.whiteout).toBeUndefined();
    // A whiteout's body is never served: the deleted file is a 404, by every reader.
    await upload(t, "a.txt", "a\n");
    await checkpoint(t, "base");
    await ok(t.call("delete", { path: "a.txt" }));
    const wo = await env.FILES.head(fileKey(t, "a.txt"));
    expect(wo?.size).toBe(WHITEOUT_SIZE);
    expect(await bytesOf(t, "a.txt")).toBeNull();
    expect((await t.call("read", { file_path: "a.txt" })).body.error.code).toBe("NOT_FOUND");
  });
});

describe("workspaces made before marks", () => {
  /** A layered workspace as the code before marks left it: no mark in its record, a v1 whiteout over b.txt. */
  async function legacy(): Promise<Tenant> {
    const t = await newTenant(app);
    for (const p of ["a.txt", "b.txt", "c.txt"]) await upload(t, p, `${p}\n`);
    await checkpoint(t, "base");
    const meta = JSON.parse(await (await env.FILES.get(metaKey(t)))!.text());
    delete meta.whiteout;
    await env.FILES.put(metaKey(t), JSON.stringify(meta), { httpMetadata: { contentType: "application/json" } });
    await env.FILES.put(fileKey(t, "b.txt"), V1_WHITEOUT_BODY, { httpMetadata: { contentType: WHITEOUT_CONTENT_TYPE } });
    return t;
  }

  it("a v1 whiteout still hides its file; the v1 bytes written now are a file; a delete gives the record its mark", async () => {
    const t = await legacy();
    const want: Record<string, Uint8Array | null> = { "a.txt": enc.encode("a.txt\n"), "b.txt": null, "c.txt": enc.encode("c.txt\n") };
    await expectFiles(t, want);
    expect((await t.call("read", { file_path: "b.txt" })).body.error.code).toBe("NOT_FOUND");
    // The v1 bytes by a tenant: a new file, and over a lower one.
    await upload(t, "v1.bin", V1);
    await upload(t, "c.txt", V1);
    Object.assign(want, { "v1.bin": V1, "c.txt": V1 });
    await expectFiles(t, want);
    // The first whiteout of this record: the record gets its mark.
    await ok(t.call("delete", { path: "a.txt" }));
    want["a.txt"] = null;
    expect(JSON.parse(await (await env.FILES.get(metaKey(t)))!.text()).whiteout).toMatch(/^[0-9a-f]{32}$/);
    await expectFiles(t, want);
    await checkpoint(t, "sealed");
    await expectFiles(t, want);
    expect((await env.FILES.list({ prefix: fileKey(t, "") })).objects).toEqual([]);
    // Created again over the path the v1 whiteout hid.
    await upload(t, "b.txt", V1);
    want["b.txt"] = V1;
    await expectFiles(t, want);
  });

  it("a checkpoint of a record without a mark gives it one; a fork of it has its own", async () => {
    const t = await legacy();
    await upload(t, "v1.bin", V1);
    await checkpoint(t, "sealed");
    const mark = JSON.parse(await (await env.FILES.get(metaKey(t)))!.text()).whiteout;
    expect(mark).toMatch(/^[0-9a-f]{32}$/);
    await fork(t, "forked");
    expect(JSON.parse(await (await env.FILES.get(metaKey(t, "forked")))!.text()).whiteout).not.toBe(mark);
    const want = { "a.txt": enc.encode("a.txt\n"), "b.txt": null, "v1.bin": V1 };
    await expectFiles(t, want);
    await expectFiles(t, want, "forked");
  });
});
