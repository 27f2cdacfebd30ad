/** Batch uploads: POST /v1/workspaces/{ws}/uploads (NDJSON), over the real app, local R2, KV and LIMITS. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableLimits } from "../../../../lib/limits/durable-object.js";
import { md5Hex } from "../../../../lib/storage/md5.js";
import { filesPrefix } from "../../../../lib/layout/paths.js";
import { updateModes } from "../../../../lib/layout/modes.js";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import { UPLOAD_MAX_FILE_BYTES } from "../../../../lib/api/routes/files-batch.js";
import { admin, executionContext, newTenant, testApp, upload, type Tenant } from "../../../helpers.js";
import { snapshot } from "../../archive/helpers.js";

const app = testApp();

type Line = { path: string; content?: string; content_base64?: string; if_match?: string; create?: true } | string;
const ndjson = (lines: Line[]) => lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\n") + "\n";

async function batch(t: Tenant, lines: Line[] | string, mode?: "all" | "each", req = t.req) {
  const res = await req(`/v1/workspaces/${t.ws}/uploads${mode ? `?mode=${mode}` : ""}`, { method: "POST", headers: { "content-type": "application/x-ndjson" }, body: typeof lines === "string" ? lines : ndjson(lines) });
  return { status: res.status, body: (await res.json()) as any };
}

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const get = async (t: Tenant, path: string) => {
  const res = await t.req(`/v1/workspaces/${t.ws}/files/${path.split("/").map(encodeURIComponent).join("/")}`);
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()), etag: res.headers.get("etag") };
};
/** The workspace's upper layer: one object per file written the per-file way. */
async function upperObjects(t: Tenant): Promise<string[]> {
  const r = await env.FILES.list({ prefix: filesPrefix(t.tenant, t.ws) });
  return r.objects.map((o) => o.key.slice(filesPrefix(t.tenant, t.ws).length));
}

describe("POST uploads", () => {
  it("writes text, unicode names, an empty file and binary bytes in one request; each reads back byte for byte, no per-file object written", async () => {
    const t = await newTenant(app);
    const binary = new Uint8Array(256).map((_, i) => i);
    const r = await batch(t, [
      { path: "src/a.ts", content: "export const a = 1;\n" },
      { path: "/docs//Cafe\u0301 ☕.md", content: "naïve — ünïcödé ☕\n" },
      { path: "empty.txt", content: "" },
      { path: "bin/all-bytes.bin", content_base64: b64(binary) },
    ]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ mode: "all", written: 4, failed: 0, bytes: 20 + new TextEncoder().encode("naïve — ünïcödé ☕\n").length + 256 });
    expect(r.body.files.map((f: any) => f.path)).toEqual(["src/a.ts", "docs/Café ☕.md", "empty.txt", "bin/all-bytes.bin"]);
    for (const f of r.body.files) expect(f).toMatchObject({ ok: true, created: true });
    expect(r.body.files[3].etag).toBe(md5Hex(binary));
    expect(new TextDecoder().decode((await get(t, "src/a.ts")).bytes)).toBe("export const a = 1;\n");
    expect(new TextDecoder().decode((await get(t, "docs/Café ☕.md")).bytes)).toBe("naïve — ünïcödé ☕\n");
    expect((await get(t, "empty.txt")).bytes.length).toBe(0);
    const got = await get(t, "bin/all-bytes.bin");
    expect(got.bytes).toEqual(binary);
    expect(got.etag).toBe(`"${md5Hex(binary)}"`);
    // Into packs and a manifest: nothing for a seal to fold later.
    expect(await upperObjects(t)).toEqual([]);
    // The tools see them (listing, search index).
    const ls = await t.call("ls", { path: "/" });
    expect(JSON.stringify(ls.body)).toContain("bin");
    const grep = await t.call("grep", { pattern: "ünïcödé", output_mode: "files_with_matches" });
    expect(JSON.stringify(grep.body.data)).toContain("Café ☕.md");
  });

  it("with after-the-answer work (Workers), the index upkeep runs after the answer; grep is exact before it (reads what no segment covers) and after", async () => {
    const t = await newTenant(app);
    const { ctx, later, settle } = executionContext();
    const res = await app.request(`/v1/workspaces/${t.ws}/uploads`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/x-ndjson" }, body: ndjson([{ path: "a.md", content: "needle-one\n" }, { path: "b.md", content: "hay\n" }]) }, {}, ctx);
    expect(res.status).toBe(200);
    expect(later.length).toBeGreaterThan(0);
    const before = await t.call("grep", { pattern: "needle-one", output_mode: "files_with_matches" });
    expect(JSON.stringify(before.body.data)).toContain("a.md");
    await settle();
    const after = await t.call("grep", { pattern: "needle-one", output_mode: "files_with_matches" });
    for (const r of [before, after]) {
      expect(r.body.output).toContain("a.md");
      expect(r.body.output).not.toContain("b.md");
    }
  });

  it("with after-the-answer work, the index hears of the batch only after the answer is out (its segment build is not a microtask ahead of the answer)", async () => {
    const heard: string[] = [];
    const listening = testApp({ listeners: [{ changed: async () => void heard.push("changed"), changedBatch: async (_ws, changes) => void heard.push(`batch of ${changes.length}`) }] });
    const t = await newTenant(listening);
    heard.length = 0;
    const { ctx, settle } = executionContext();
    const res = await listening.request(`/v1/workspaces/${t.ws}/uploads`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/x-ndjson" }, body: ndjson([{ path: "a.md", content: "one\n" }, { path: "b.md", content: "two\n" }]) }, {}, ctx);
    expect(res.status).toBe(200);
    expect(heard).toEqual([]);
    await settle();
    expect(heard).toEqual(["batch of 2"]);
  });

  it("per-file conditions: if_match over the version read, create only where nothing is; an unconditional line replaces", async () => {
    const t = await newTenant(app);
    const first = await batch(t, [{ path: "a.txt", content: "a1" }, { path: "b.txt", content: "b1" }, { path: "c.txt", content: "c1" }]);
    const [a, b] = first.body.files;
    const r = await batch(t, [{ path: "a.txt", content: "a2", if_match: `"${a.etag}"` }, { path: "b.txt", content: "b2" }, { path: "d.txt", content: "d1", create: true }]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.files.map((f: any) => [f.path, f.ok, f.created])).toEqual([["a.txt", true, false], ["b.txt", true, false], ["d.txt", true, true]]);
    expect(r.body.files[1].etag).not.toBe(b.etag);
    for (const [p, v] of [["a.txt", "a2"], ["b.txt", "b2"], ["c.txt", "c1"], ["d.txt", "d1"]]) expect(new TextDecoder().decode((await get(t, p!)).bytes)).toBe(v);
  });

  it("mode=each: each failing file answers its own code (FILE_MODIFIED, ALREADY_EXISTS, INVALID_PATH, IS_DIRECTORY, NOT_A_DIRECTORY, INVALID_ARGUMENT), the others are written", async () => {
    const t = await newTenant(app);
    const seed = await batch(t, [{ path: "x.txt", content: "x" }, { path: "dir/inside.txt", content: "i" }]);
    const r = await batch(t, [
      { path: "x.txt", content: "no", if_match: "0123456789abcdef0123456789abcdef" },
      { path: "x.txt", content: "no", create: true },
      { path: "../escape.txt", content: "no" },
      { path: "dir", content: "no" },
      { path: "x.txt/below.txt", content: "no" },
      { path: "y.txt", content: "no", content_base64: "bm8=" },
      "{not json",
      { path: "z.txt", content_base64: "!!!" },
      { path: "ok.txt", content: "yes" },
      { path: "ok.txt", content: "twice" },
      { path: "new-dir/deep/ok.txt", content: "yes", create: true },
    ], "each");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const codes = r.body.files.map((f: any) => (f.ok ? "ok" : f.error.code));
    // The second x.txt is twice in the batch (INVALID_ARGUMENT); the first fails its condition.
    expect(codes).toEqual(["FILE_MODIFIED", "INVALID_ARGUMENT", "INVALID_PATH", "IS_DIRECTORY", "NOT_A_DIRECTORY", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "ok", "INVALID_ARGUMENT", "ok"]);
    expect(r.body.files[0].error.details.current_etag).toBe(seed.body.files[0].etag);
    expect(r.body.files[6].path).toBe("line 7");
    expect(r.body).toMatchObject({ written: 2, failed: 9 });
    expect(new TextDecoder().decode((await get(t, "x.txt")).bytes)).toBe("x");
    expect(new TextDecoder().decode((await get(t, "ok.txt")).bytes)).toBe("yes");
    // create on an existing file, alone in a batch.
    const again = await batch(t, [{ path: "ok.txt", content: "no", create: true }], "each");
    expect(again.body.files[0].error.code).toBe("ALREADY_EXISTS");
  });

  it("a line with a misspelt field names it with the field it meant and the fields a line takes, once per line (no path said twice)", async () => {
    const t = await newTenant(app);
    const r = await batch(t, ['{"path":"a.txt","contents":"x"}', '{"path":"b.txt"}'], "each");
    expect(r.status).toBe(200);
    const [typo, bare] = r.body.files;
    expect(typo).toMatchObject({ path: "a.txt", ok: false, error: { code: "INVALID_ARGUMENT" } });
    expect(typo.error.message).toBe("Line 1: Unknown field 'contents' (did you mean 'content'? known: path, content, content_base64, if_match, create); give exactly one of content and content_base64.");
    expect(bare.error.message).toBe("Line 2: give exactly one of content and content_base64.");
    // mode=all: the summary names each failing path once, then its reason.
    const all = await batch(t, ['{"path":"a.txt","contents":"x"}']);
    expect(all.status).toBe(400);
    expect(all.body.error.message).toContain("(a.txt: Line 1: Unknown field 'contents' (did you mean 'content'?");
  });

  it("mode=all (the default): one failing file refuses the batch with its code and every failure listed; storage is byte-identical", async () => {
    const t = await newTenant(app);
    await batch(t, [{ path: "x.txt", content: "x" }, { path: "dir/inside.txt", content: "i" }]);
    await upload(t, "upper.txt", "u1"); // an upper object: the per-file path of the batch
    const before = await snapshot(t.tenant);
    const cases: [Line[], string, number][] = [
      [[{ path: "new.txt", content: "n" }, { path: "x.txt", content: "no", if_match: "0123456789abcdef0123456789abcdef" }], "FILE_MODIFIED", 409],
      [[{ path: "new.txt", content: "n" }, { path: "upper.txt", content: "no", create: true }], "ALREADY_EXISTS", 409],
      [[{ path: "new.txt", content: "n" }, { path: "../x", content: "no" }], "INVALID_PATH", 400],
      [[{ path: "new.txt", content: "n" }, { path: "dir", content: "no" }], "IS_DIRECTORY", 400],
      [[{ path: "upper.txt", content: "u2" }, { path: "x.txt/y", content: "no" }], "NOT_A_DIRECTORY", 400],
      [[{ path: "new.txt", content: "n" }, "[1,2]"], "INVALID_ARGUMENT", 400],
    ];
    for (const [lines, code, status] of cases) {
      const r = await batch(t, lines);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body.error.code).toBe(code);
      expect(r.body.error.message).toMatch(/^Nothing was written/);
      expect(r.body.error.details).toMatchObject({ written: 0, failed: [expect.objectContaining({ code })] });
      expect(await snapshot(t.tenant)).toEqual(before);
    }
    expect((await get(t, "new.txt")).status).toBe(404);
  });

  it("a path at or below a symlink is SYMLINK_REFUSED (no file is made over a link)", async () => {
    const t = await newTenant(app);
    await batch(t, [{ path: "real/x.txt", content: "x" }]);
    await updateModes(r2Driver(env.FILES), t.tenant, t.ws, { add: [], remove: [], links: { alias: "real" } }); // as bash's `ln -s real alias` leaves it
    const r = await batch(t, [{ path: "alias/y.txt", content: "y" }, { path: "alias", content: "z" }, { path: "ok.txt", content: "ok" }], "each");
    expect(r.body.files.map((f: any) => (f.ok ? "ok" : f.error.code))).toEqual(["SYMLINK_REFUSED", "SYMLINK_REFUSED", "ok"]);
  });

  it("a path with an upper object (a per-file PUT before) is written over it, conditionally; the upper object keeps being the unit", async () => {
    const t = await newTenant(app);
    const etag = await upload(t, "notes.md", "v1");
    const stale = await batch(t, [{ path: "notes.md", content: "v2", if_match: "ffffffffffffffffffffffffffffffff" }]);
    expect(stale.status).toBe(409);
    const r = await batch(t, [{ path: "notes.md", content: "v2", if_match: etag }, { path: "other.md", content: "o" }]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.files[0]).toMatchObject({ ok: true, created: false });
    expect(new TextDecoder().decode((await get(t, "notes.md")).bytes)).toBe("v2");
    expect((await get(t, "notes.md")).etag).toBe(`"${r.body.files[0].etag}"`);
  });

  it("bounds: a file over the per-file limit is PAYLOAD_TOO_LARGE (mode=each writes the rest); an empty body, a bad mode are 400", async () => {
    const t = await newTenant(app);
    const huge = "a".repeat(UPLOAD_MAX_FILE_BYTES + 1);
    const r = await batch(t, [{ path: "huge.txt", content: huge }, { path: "small.txt", content: "s" }], "each");
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(r.body.files[0].error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(r.body.files[1].ok).toBe(true);
    // A file of exactly the limit is taken.
    const edge = await batch(t, [{ path: "edge.bin", content: "b".repeat(UPLOAD_MAX_FILE_BYTES) }]);
    expect(edge.status).toBe(200);
    expect(edge.body.files[0].size).toBe(UPLOAD_MAX_FILE_BYTES);
    expect((await batch(t, "")).body.error.code).toBe("INVALID_ARGUMENT");
    expect((await batch(t, "\n\n")).status).toBe(400);
    const bad = await t.req(`/v1/workspaces/${t.ws}/uploads?mode=some`, { method: "POST", headers: { "content-type": "application/x-ndjson" }, body: ndjson([{ path: "a", content: "a" }]) });
    expect(bad.status).toBe(400);
    expect((await get(t, "a")).status).toBe(404);
  });

  it("files_per_workspace and storage_bytes (LIMITS Durable Object): a batch past either is QUOTA_EXCEEDED as a whole, storage unchanged; within them it counts every file", async () => {
    const lapp = testApp({ limits: durableLimits(env.LIMITS) });
    const t = await newTenant(lapp);
    expect((await admin(lapp, `/v1/admin/tenants/${t.tenant}/limits`, { files_per_workspace: 3, storage_bytes: 100 }, "PUT")).status).toBe(200);
    expect((await batch(t, [{ path: "a", content: "a" }, { path: "b", content: "b" }])).status).toBe(200);
    const before = await snapshot(t.tenant);
    const many = await batch(t, [{ path: "c", content: "c" }, { path: "d", content: "d" }], "each");
    expect(many.status).toBe(413);
    expect(many.body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "files_per_workspace", usage: 2, limit: 3 } });
    const big = await batch(t, [{ path: "c", content: "x".repeat(99) }]);
    expect(big.body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "storage_bytes" } });
    expect(await snapshot(t.tenant)).toEqual(before);
    // Replacing a file costs its size difference only; the third file fits.
    const ok = await batch(t, [{ path: "a", content: "aa" }, { path: "c", content: "c" }]);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const full = await batch(t, [{ path: "d", content: "d" }]);
    expect(full.body.error).toMatchObject({ code: "QUOTA_EXCEEDED", details: { quota: "files_per_workspace", usage: 3, limit: 3 } });
  }, 120_000); // the LIMITS object's first start in workerd takes most of it

  it("the scope boundary: a read-scope key and a readonly-preset key are refused (PERMISSION_DENIED), nothing written", async () => {
    const t = await newTenant(app);
    const before = await snapshot(t.tenant);
    const ro = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "ro", tools: "readonly" });
    const read = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "read", scopes: ["read"] });
    for (const key of [ro.body.key as string, read.body.key as string]) {
      const as = async (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } });
      const r = await batch(t, [{ path: "a.txt", content: "a" }], undefined, as);
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(r.body.error.code).toBe("PERMISSION_DENIED");
    }
    expect(await snapshot(t.tenant)).toEqual(before);
  });

  it("two tenants: each batch lands in its own workspace; another tenant's workspace is NOT_FOUND", async () => {
    const [one, two] = await Promise.all([newTenant(app), newTenant(app)]);
    await Promise.all([batch(one, [{ path: "same.txt", content: "one" }]), batch(two, [{ path: "same.txt", content: "two" }])]);
    expect(new TextDecoder().decode((await get(one, "same.txt")).bytes)).toBe("one");
    expect(new TextDecoder().decode((await get(two, "same.txt")).bytes)).toBe("two");
    expect((await two.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "only-two" }) })).status).toBe(201);
    const before = await snapshot(two.tenant);
    // one's key naming a workspace only two has.
    const res = await one.req(`/v1/workspaces/only-two/uploads`, { method: "POST", headers: { "content-type": "application/x-ndjson" }, body: ndjson([{ path: "x", content: "x" }]) });
    expect(res.status).toBe(404);
    expect(await snapshot(two.tenant)).toEqual(before);
  });
});
