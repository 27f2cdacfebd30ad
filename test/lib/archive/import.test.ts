/** Import and export through the HTTP API, in workerd with local R2: round trips, modes, prefix, create-with-archive, scopes, ETag, search. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload } from "../../helpers.js";
import { gnuLongName, gzip, tar, zip } from "./archives.js";
import { countObjects, exportReq, importReq, snapshot, text, untarGz, workspaceFiles } from "./helpers.js";

// More of the pack writer's own rules (layers, upper objects, GC) in test/lib/layers/import-packs.test.ts.
const app = testApp();

const binary = new Uint8Array(3000).map((_, i) => (i * 7919) % 256);
const LONG = `deep/${"d".repeat(120)}/${"n".repeat(150)}.txt`;
const SAMPLE = [
  { name: "README.md", body: "# hello\n" },
  { name: "src/index.ts", body: "export const answer = 42;\r\nexport function importedMarker() {}\r\n" },
  { name: "src/empty.txt", body: "" },
  { name: "bin/blob.dat", body: binary },
  { name: "unicode/café – ü.txt", body: "unicode name\n" },
  { name: LONG, body: "long name via pax\n" },
];

const same = (a: Map<string, Uint8Array>, b: Map<string, Uint8Array>) => {
  expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
  for (const [k, v] of a) expect(Buffer.from(b.get(k)!).equals(Buffer.from(v)), k).toBe(true);
};

describe("import → export → import", () => {
  it("keeps every byte and name: binary, unicode, empty files, CRLF, long names (tar, tar.gz and zip)", async () => {
    const t = await newTenant(app);
    const r = await importReq(t, tar(SAMPLE));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ format: "tar", mode: "merge", files: 6, created: 6, updated: 0, skipped_count: 0 });
    const first = await workspaceFiles(t);
    expect(first.size).toBe(6);
    expect(text(first.get("src/index.ts"))).toBe("export const answer = 42;\r\nexport function importedMarker() {}\r\n");
    expect(first.get("src/empty.txt")!.length).toBe(0);
    expect(first.get(LONG)).toBeDefined();
    expect(first.get("unicode/café – ü.txt")).toBeDefined();

    const exp = await exportReq(t);
    expect(exp.status).toBe(200);
    expect(exp.headers.get("content-type")).toBe("application/gzip");
    expect(exp.headers.get("etag")).toMatch(/^"[0-9a-f]{32}"$/);
    const archive = new Uint8Array(await exp.arrayBuffer());
    // The exported tar.gz read back by the reader holds the same names and bytes.
    same(first, await untarGz(new Response(archive)));

    // And imported into a fresh workspace (tar.gz), then again from a zip of the same files.
    const copy = await t.req("/v1/workspaces?id=copy", { method: "POST", headers: { "content-type": "application/gzip" }, body: archive });
    expect(copy.status, await copy.clone().text()).toBe(201);
    expect(((await copy.json()) as any).import).toMatchObject({ format: "tar.gz", files: 6 });
    same(first, await workspaceFiles(t, "copy"));

    const z = await zip(SAMPLE.map((s, i) => ({ ...s, deflate: i % 2 === 0 })));
    const zr = await t.req("/v1/workspaces?id=fromzip", { method: "POST", headers: { "content-type": "application/zip", "content-length": String(z.length) }, body: z });
    expect(zr.status, await zr.clone().text()).toBe(201);
    same(first, await workspaceFiles(t, "fromzip"));
    // The zip was spooled to the workspace's internal area and is gone again.
    expect(await countObjects(`t/${t.tenant}/w/fromzip/x/import/`)).toBe(0);
  });

  it("reads GNU long names and ustar prefix/name splits", async () => {
    const t = await newTenant(app);
    const name = `gnu/${"x".repeat(200)}.txt`;
    const split = `${"p".repeat(120)}/short.txt`;
    const body = new Uint8Array([...gnuLongName(name, "gnu long\n"), ...tar([{ name: split, body: "split\n" }])]);
    const r = await importReq(t, body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const f = await workspaceFiles(t);
    expect(text(f.get(name))).toBe("gnu long\n");
    expect(text(f.get(split))).toBe("split\n");
  });
});

describe("modes and prefix", () => {
  it("merge adds and overwrites; replace also deletes what the archive lacks, only under the prefix", async () => {
    const t = await newTenant(app);
    await upload(t, "keep/outside.txt", "outside the prefix");
    await upload(t, "app/old.txt", "old");
    await upload(t, "app/a.txt", "a v1");
    const m = await importReq(t, tar([{ name: "a.txt", body: "a v2" }, { name: "b.txt", body: "b" }]), "?prefix=app");
    expect(m.status, JSON.stringify(m.body)).toBe(200);
    expect(m.body).toMatchObject({ prefix: "app", created: 1, updated: 1, deleted: 0 });
    let f = await workspaceFiles(t);
    expect([...f.keys()].sort()).toEqual(["app/a.txt", "app/b.txt", "app/old.txt", "keep/outside.txt"]);
    expect(text(f.get("app/a.txt"))).toBe("a v2");

    const r = await importReq(t, tar([{ name: "a.txt", body: "a v3" }]), "?prefix=/app/&mode=replace");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ mode: "replace", updated: 1, deleted: 2, kept_count: 0 });
    f = await workspaceFiles(t);
    expect([...f.keys()].sort()).toEqual(["app/a.txt", "keep/outside.txt"]);
    expect(text(f.get("app/a.txt"))).toBe("a v3");
  });

  it("a prefix that is a file, or a bad mode, is refused before anything is read", async () => {
    const t = await newTenant(app);
    await upload(t, "file.txt", "x");
    const before = await snapshot(t.tenant);
    const r = await importReq(t, tar([{ name: "a.txt", body: "a" }]), "?prefix=file.txt/sub");
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("NOT_A_DIRECTORY");
    expect((await importReq(t, tar([{ name: "a.txt", body: "a" }]), "?mode=overwrite")).status).toBe(400);
    expect((await importReq(t, tar([{ name: "a.txt", body: "a" }]), "?prefix=../up")).body.error.code).toBe("INVALID_PATH");
    expect(await snapshot(t.tenant)).toEqual(before);
  });

  it("archive files that would sit below a file, or on a directory, are skipped and reported", async () => {
    const t = await newTenant(app);
    await upload(t, "dir/inner.txt", "inner");
    const r = await importReq(t, tar([{ name: "dir", body: "a file over a directory" }, { name: "f", body: "file" }, { name: "f/below", body: "below a file" }, { name: "dup.txt", body: "first" }, { name: "dup.txt", body: "second" }]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // The earlier dup.txt is named too: it is not kept (test/lib/archive/collisions.test.ts).
    expect(r.body.skipped.map((s: any) => s.name).sort()).toEqual(["dir", "dup.txt", "f/below"]);
    const f = await workspaceFiles(t);
    expect([...f.keys()].sort()).toEqual(["dir/inner.txt", "dup.txt", "f"]);
    expect(text(f.get("dup.txt"))).toBe("second"); // the later entry wins, as tar does
  });
});

describe("create with an archive", () => {
  it("creates a loaded workspace in one call; a failed import deletes it again", async () => {
    const t = await newTenant(app);
    const ok = await t.req("/v1/workspaces?id=loaded&name=Loaded&prefix=pkg", { method: "POST", headers: { "content-type": "application/x-tar" }, body: tar(SAMPLE) });
    expect(ok.status).toBe(201);
    const body = (await ok.json()) as any;
    expect(body).toMatchObject({ id: "loaded", name: "Loaded", import: { workspace: "loaded", prefix: "pkg", files: 6 } });
    expect((await workspaceFiles(t, "loaded")).has("pkg/README.md")).toBe(true);

    const before = await snapshot(t.tenant);
    const broken = tar(SAMPLE).subarray(0, 1500); // cut inside the second entry
    const bad = await t.req("/v1/workspaces?id=broken", { method: "POST", headers: { "content-type": "application/x-tar" }, body: broken });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.code).toBe("INVALID_ARGUMENT");
    expect((await t.req("/v1/workspaces/broken")).status).toBe(404);
    expect(await snapshot(t.tenant)).toEqual(before);
    // A JSON body still creates an empty workspace.
    expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "plain" }) })).status).toBe(201);
  });
});

describe("scopes", () => {
  it("a read-only key cannot import or create with an archive; it can export. A write-only key cannot export", async () => {
    const owner = await newTenant(app);
    await upload(owner, "a.txt", "a");
    const keyFor = async (scopes: string[]) => {
      const k = await app.request(`/v1/admin/tenants/${owner.tenant}/keys`, { method: "POST", headers: { authorization: "Bearer test-admin-token", "content-type": "application/json" }, body: JSON.stringify({ scopes }) });
      return ((await k.json()) as any).key as string;
    };
    const ro = await keyFor(["read"]);
    const wo = await keyFor(["write"]);
    const before = await snapshot(owner.tenant);
    const as = (key: string, path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as any) } });
    const imp = await as(ro, `/v1/workspaces/${owner.ws}/import`, { method: "POST", body: tar([{ name: "x.txt", body: "x" }]) });
    expect(imp.status).toBe(403);
    expect(((await imp.json()) as any).error.code).toBe("PERMISSION_DENIED");
    const create = await as(ro, "/v1/workspaces?id=nope", { method: "POST", headers: { "content-type": "application/x-tar" }, body: tar([{ name: "x.txt", body: "x" }]) });
    expect(create.status).toBe(403);
    expect(await snapshot(owner.tenant)).toEqual(before);
    expect((await as(ro, `/v1/workspaces/${owner.ws}/export`)).status).toBe(200);
    expect((await as(wo, `/v1/workspaces/${owner.ws}/export`)).status).toBe(403);
  });
});

describe("export", () => {
  it("answers If-None-Match with 304 until a file changes; ?path= exports one directory with relative names", async () => {
    const t = await newTenant(app);
    await importReq(t, tar(SAMPLE));
    const first = await exportReq(t);
    const etag = first.headers.get("etag")!;
    await first.body!.cancel();
    const again = await exportReq(t, "", { "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(etag);
    await upload(t, "README.md", "# changed\n");
    const changed = await exportReq(t, "", { "if-none-match": etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
    await changed.body!.cancel();

    const sub = await untarGz(await exportReq(t, "?path=src"));
    expect([...sub.keys()].sort()).toEqual(["empty.txt", "index.ts"]);
    expect((await exportReq(t, "?path=missing")).status).toBe(404);
    const empty = await newTenant(app);
    expect((await untarGz(await exportReq(empty))).size).toBe(0);
  });
});

describe("search after import", () => {
  it("grep finds exactly what was imported, and the index gets one segment per batch, not one per file", async () => {
    const t = await newTenant(app);
    const items = Array.from({ length: 300 }, (_, i) => ({ name: `pkg/m${i}.ts`, body: `export const value${i} = ${i};\n${i % 50 === 0 ? "// needle_marker\n" : ""}` }));
    const r = await importReq(t, await gzip(tar(items)));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    console.log(`import of 300 files: ${r.body.ms} ms`);
    const segments = await countObjects(`t/${t.tenant}/w/${t.ws}/x/search/`);
    expect(segments).toBeGreaterThanOrEqual(1);
    expect(segments).toBeLessThanOrEqual(2);
    const g = await t.call("grep", { pattern: "needle_marker", output_mode: "files_with_matches" });
    expect(g.status).toBe(200);
    const found = (g.body.output as string).split("\n").filter((l) => l.startsWith("pkg/")).sort();
    expect(found).toEqual(["pkg/m0.ts", "pkg/m100.ts", "pkg/m150.ts", "pkg/m200.ts", "pkg/m250.ts", "pkg/m50.ts"]);
    const c = await t.call("grep", { pattern: "value29[0-9] =", output_mode: "count" });
    expect(c.status).toBe(200);
    expect(JSON.stringify(c.body)).toContain("10");
    void env;
  });
});
