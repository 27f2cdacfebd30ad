/**
 * Import into packs + a manifest (the default writer): all or nothing, merge/replace over a layered
 * workspace with upper files and whiteouts, hostile bodies leave storage as it was, search exact.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { gzipBomb } from "../archive/bombs.js";
import { importReq, snapshot } from "../archive/helpers.js";

const app = testApp();

const get = async (t: Tenant, p: string) => {
  const r = await t.req(`/v1/workspaces/${t.ws}/files/${p}`);
  return r.status === 200 ? await r.text() : null;
};
async function upperKeys(t: Tenant): Promise<string[]> {
  const prefix = `t/${t.tenant}/w/${t.ws}/f/`;
  return (await env.FILES.list({ prefix })).objects.filter((o) => !/\/audit\//.test(o.key)).map((o) => o.key.slice(prefix.length)).sort();
}
const md5 = async (s: string) => [...new Uint8Array(await crypto.subtle.digest("MD5", new TextEncoder().encode(s)))].map((b) => b.toString(16).padStart(2, "0")).join("");

describe("import into packs", () => {
  it("lands every file in packs (no per-file objects), with MD5 etags, readable and searchable", async () => {
    const t = await newTenant(app);
    const items = Array.from({ length: 300 }, (_, i) => ({ name: `src/m${i}.ts`, body: `export const v${i} = ${i};\n` }));
    const r = await importReq(t, tar([...items, { name: "big.bin", body: new Uint8Array(1_500_000).fill(7) }, { name: "empty.txt", body: "" }]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ files: 302, created: 302, updated: 0 });
    expect(await upperKeys(t)).toEqual([]);
    expect(await get(t, "src/m17.ts")).toBe("export const v17 = 17;\n");
    expect(await get(t, "empty.txt")).toBe("");
    const big = await t.req(`/v1/workspaces/${t.ws}/files/big.bin`, { headers: { range: "bytes=1499990-" } });
    expect(new Uint8Array(await big.arrayBuffer())).toEqual(new Uint8Array(10).fill(7));
    const head = await t.req(`/v1/workspaces/${t.ws}/files/src/m3.ts`, { method: "HEAD" });
    expect(head.headers.get("etag")).toBe(`"${await md5("export const v3 = 3;\n")}"`);
    const g = await t.call("grep", { pattern: "v299 = 299", output_mode: "files_with_matches" });
    expect(g.body.output).toContain("src/m299.ts");
    const c = await t.call("glob", { pattern: "src/*.ts" });
    expect(c.body.data.total_found).toBe(300);
  });

  it("merge over a layered workspace: the archive wins over upper files and whiteouts at its paths; other files stay", async () => {
    const t = await newTenant(app);
    expect((await importReq(t, tar([{ name: "a.txt", body: "a1" }, { name: "b.txt", body: "b1" }, { name: "c.txt", body: "c1" }]))).status).toBe(200);
    await upload(t, "a.txt", "a-upper");
    await upload(t, "u.txt", "only upper");
    expect((await t.call("delete", { path: "b.txt" })).status).toBe(200);
    const r = await importReq(t, tar([{ name: "a.txt", body: "a2" }, { name: "b.txt", body: "b2" }, { name: "d.txt", body: "d2" }]), "?mode=merge");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ files: 3, created: 2, updated: 1, kept_count: 0 });
    expect(await get(t, "a.txt")).toBe("a2");
    expect(await get(t, "b.txt")).toBe("b2");
    expect(await get(t, "c.txt")).toBe("c1");
    expect(await get(t, "d.txt")).toBe("d2");
    expect(await get(t, "u.txt")).toBe("only upper");
    expect(await upperKeys(t)).toEqual(["u.txt"]);
  });

  it("replace under a prefix removes lower and upper files the archive lacks there, only there", async () => {
    const t = await newTenant(app);
    expect((await importReq(t, tar([{ name: "old.txt", body: "o" }, { name: "x.txt", body: "x" }]), "?prefix=app")).status).toBe(200);
    await upload(t, "app/upper.txt", "u");
    await upload(t, "keep/out.txt", "k");
    const r = await importReq(t, tar([{ name: "x.txt", body: "x2" }]), "?prefix=app&mode=replace");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.deleted).toBe(2);
    const ls = await t.call("ls", { path: "", recursive: true });
    expect(ls.body.data.entries.filter((e: any) => e.type === "file").map((e: any) => e.path).sort()).toEqual(["app/x.txt", "keep/out.txt"]);
    expect(await get(t, "app/x.txt")).toBe("x2");
  });

  it("POST /v1/workspaces with an archive creates it loaded (packs); a failed one leaves no workspace", async () => {
    const t = await newTenant(app);
    const body = tar([{ name: "one.txt", body: "1" }, { name: "two/2.txt", body: "2" }]);
    const r = await t.req("/v1/workspaces?id=loaded", { method: "POST", headers: { "content-type": "application/x-tar", "content-length": String(body.length) }, body });
    const j = (await r.json()) as any;
    expect(r.status, JSON.stringify(j)).toBe(201);
    expect(j.import.files).toBe(2);
    expect(await (await t.req("/v1/workspaces/loaded/files/two/2.txt")).text()).toBe("2");
    const bad = tar([{ name: "x.txt", body: "x" }], false).slice(0, 700);
    const f = await t.req("/v1/workspaces?id=broken", { method: "POST", headers: { "content-type": "application/x-tar", "content-length": String(bad.length) }, body: bad });
    expect(f.status).toBe(400);
    expect((await t.req("/v1/workspaces/broken")).status).toBe(404);
  });

  it("a gzip bomb and a cut body leave the workspace exactly as it was (all or nothing)", async () => {
    const t = await newTenant(app);
    expect((await importReq(t, tar([{ name: "keep.txt", body: "kept" }]))).status).toBe(200);
    const before = await snapshot(t.tenant);
    const bomb = gzipBomb(2 * 1024 ** 3, 256 * 1024 * 1024);
    const r = await importReq(t, bomb.stream);
    expect(r.status, JSON.stringify(r.body)).toBe(413);
    expect(r.body.error.details.files_written).toBe(0);
    const items = Array.from({ length: 40 }, (_, i) => ({ name: `f${i}.txt`, body: `file ${i}\n`.repeat(200) }));
    const whole = tar(items, false);
    let sent = 0;
    const cut = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= whole.length / 2) return c.error(new Error("connection reset by peer"));
        c.enqueue(whole.slice(sent, sent + 4096));
        sent += 4096;
      },
    });
    const r2 = await importReq(t, cut, "?mode=replace");
    expect(r2.status).toBe(400);
    expect(await snapshot(t.tenant)).toEqual(before);
    expect(await get(t, "keep.txt")).toBe("kept");
    expect(await get(t, "f0.txt")).toBe(null);
  });
});
