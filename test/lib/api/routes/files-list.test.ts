/** The raw files route lists directories: GET .../files/, .../files/<dir>/, and GET of a directory's path. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { updateModes } from "../../../../lib/layout/modes.js";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import { newTenant, testApp, upload, type Tenant } from "../../../helpers.js";

const app = testApp();

async function list(t: Tenant, rest: string) {
  const res = await t.req(`/v1/workspaces/${t.ws}/files/${rest}`);
  return { status: res.status, type: res.headers.get("content-type"), body: (await res.json()) as any };
}

async function tree(): Promise<Tenant> {
  const t = await newTenant(app);
  for (const p of ["a.txt", "src/index.ts", "src/lib/util.ts", "src/lib/deep/x.ts", "docs/readme.md", ".hidden"]) await upload(t, p, `content of ${p}`);
  return t;
}

describe("directory listings", () => {
  it("the root: files and directories of the first level, with size, etag and modified for files", async () => {
    const t = await tree();
    const r = await list(t, "");
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/application\/json/);
    expect(r.body.path).toBe("/");
    expect(r.body.cursor).toBeUndefined();
    const byPath = Object.fromEntries(r.body.entries.map((e: any) => [e.path, e]));
    expect(Object.keys(byPath).sort()).toEqual([".hidden", "a.txt", "docs", "src"]);
    expect(byPath.src).toEqual({ name: "src", path: "src", type: "directory" });
    expect(byPath["a.txt"]).toMatchObject({ name: "a.txt", path: "a.txt", type: "file", size: "content of a.txt".length, etag: expect.any(String) });
    expect(Number.isNaN(Date.parse(byPath["a.txt"].modified))).toBe(false);
  });

  it("a directory with a trailing slash, and the same directory named without one", async () => {
    const t = await tree();
    for (const rest of ["src/", "src", "/src//", "src/lib/.."]) {
      const r = await list(t, rest);
      expect(r.status, rest).toBe(200);
      expect(r.body.path, rest).toBe("src");
      expect(r.body.entries.map((e: any) => `${e.type}:${e.path}`).sort(), rest).toEqual(["directory:src/lib", "file:src/index.ts"]);
    }
    // A file is still a download.
    const f = await t.req(`/v1/workspaces/${t.ws}/files/src/index.ts`);
    expect(await f.text()).toBe("content of src/index.ts");
  });

  it("recursive=true lists every file below, with the directories they imply", async () => {
    const t = await tree();
    const r = await list(t, "src/?recursive=true");
    expect(r.status).toBe(200);
    const got = r.body.entries.map((e: any) => `${e.type}:${e.path}:${e.name}`).sort();
    expect(got).toEqual(["directory:src/lib/deep:lib/deep", "directory:src/lib:lib", "file:src/index.ts:index.ts", "file:src/lib/deep/x.ts:lib/deep/x.ts", "file:src/lib/util.ts:lib/util.ts"]);
  });

  it("pages with limit and cursor, every entry once", async () => {
    const t = await newTenant(app);
    const names = Array.from({ length: 7 }, (_, i) => `f${i}.txt`);
    for (const n of names) await upload(t, `many/${n}`, n);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await list(t, `many/?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.entries.length).toBeLessThanOrEqual(3);
      seen.push(...r.body.entries.map((e: any) => e.name));
      cursor = r.body.cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(seen.sort()).toEqual(names);
  });

  it("an empty workspace's root is an empty list; a missing directory is 404; a file with a slash is NOT_A_DIRECTORY", async () => {
    const t = await newTenant(app);
    expect((await list(t, "")).body).toEqual({ path: "/", entries: [] });
    await upload(t, "src/index.ts", "x");
    const missing = await list(t, "srv/");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("NOT_FOUND");
    expect(missing.body.error.details.similar).toContain("src/");
    expect((await list(t, "nope")).status).toBe(404);
    const file = await list(t, "src/index.ts/");
    expect(file.status).toBe(400);
    expect(file.body.error.code).toBe("NOT_A_DIRECTORY");
    expect(file.body.error.message).toMatch(/without the trailing slash/);
  });

  // (A cursor storage did not make: local R2 ignores it; a store that refuses it gets INVALID_ARGUMENT, not INTERNAL.)
  it("bad query values → 400 INVALID_ARGUMENT", async () => {
    const t = await tree();
    for (const q of ["limit=0", "limit=1001", "limit=abc", "limit=1.5", "recursive=yes"]) {
      const r = await list(t, `?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code, q).toBe("INVALID_ARGUMENT");
    }
  });

  it("HEAD of a directory answers 200 without a body", async () => {
    const t = await tree();
    const r = await t.req(`/v1/workspaces/${t.ws}/files/src/`, { method: "HEAD" });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe("");
  });

  it("needs the read scope, and the workspace must be the tenant's", async () => {
    const t = await tree();
    const other = await newTenant(app);
    expect((await other.req(`/v1/workspaces/${t.ws}/files/`)).status).toBe(200); // its own "main"
    expect(((await (await other.req(`/v1/workspaces/${t.ws}/files/`)).json()) as any).entries).toEqual([]);
    expect((await other.req(`/v1/workspaces/nope/files/`)).status).toBe(404);
    const writeOnly = await newTenant(app, { scopes: ["write"] });
    const r = await writeOnly.req(`/v1/workspaces/${writeOnly.ws}/files/`);
    expect(r.status).toBe(403);
  });

  it("symlinks are listed as the ls tool lists them, never followed: type symlink with its target, and the directories only links make (were left out: a mirror of the listing lost them)", async () => {
    const t = await tree();
    // As bash's `ln -s src alias; ln -s /etc/passwd pw; mkdir bin; ln -s ../src/index.ts bin/run` leaves them.
    await updateModes(r2Driver(env.FILES), t.tenant, t.ws, { add: [], remove: [], links: { alias: "src", pw: "/etc/passwd", "bin/run": "../src/index.ts", "src/lib/up": ".." } });
    const root = await list(t, "");
    const byPath = Object.fromEntries(root.body.entries.map((e: any) => [e.path, e]));
    expect(Object.keys(byPath).sort()).toEqual([".hidden", "a.txt", "alias", "bin", "docs", "pw", "src"]);
    expect(byPath.alias).toEqual({ name: "alias", path: "alias", type: "symlink", target: "src" });
    expect(byPath.pw).toEqual({ name: "pw", path: "pw", type: "symlink", target: "/etc/passwd" });
    expect(byPath.bin).toEqual({ name: "bin", path: "bin", type: "directory" });
    // A directory only links make lists them (was NOT_FOUND); a link's own directory too.
    const bin = await list(t, "bin/");
    expect(bin.status, JSON.stringify(bin.body)).toBe(200);
    expect(bin.body.entries).toEqual([{ name: "run", path: "bin/run", type: "symlink", target: "../src/index.ts" }]);
    const lib = await list(t, "src/lib/");
    expect(lib.body.entries.map((e: any) => `${e.type}:${e.path}`).sort()).toEqual(["directory:src/lib/deep", "file:src/lib/util.ts", "symlink:src/lib/up"]);
    // Recursive: every link below, once, and the files as before.
    const all = await list(t, "?recursive=true");
    const links = all.body.entries.filter((e: any) => e.type === "symlink").map((e: any) => e.path).sort();
    expect(links).toEqual(["alias", "bin/run", "pw", "src/lib/up"]);
    expect(all.body.entries.filter((e: any) => e.type === "file").map((e: any) => e.path).sort()).toEqual([".hidden", "a.txt", "docs/readme.md", "src/index.ts", "src/lib/deep/x.ts", "src/lib/util.ts"]);
    // A link's own path is still never followed by the raw routes.
    expect((await t.req(`/v1/workspaces/${t.ws}/files/alias/`)).status).toBe(404);
  });

  it("recursive: a link's name, and that of a directory only links make, is its path below the listed directory, as a file's is (was its base name)", async () => {
    const t = await tree();
    await updateModes(r2Driver(env.FILES), t.tenant, t.ws, { add: [], remove: [], links: { "bin/run": "../src/index.ts", "src/lib/up": "..", "src/tools/deep/l": "../../index.ts" } });
    for (const dir of ["", "src/"]) {
      const r = await list(t, `${dir}?recursive=true`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.entries.filter((e: any) => e.name !== e.path.slice(dir.length))).toEqual([]);
    }
    const src = await list(t, "src/?recursive=true");
    expect(src.body.entries.filter((e: any) => e.path.startsWith("src/tools") || e.type === "symlink")).toEqual([
      { name: "tools", path: "src/tools", type: "directory" },
      { name: "tools/deep", path: "src/tools/deep", type: "directory" },
      { name: "lib/up", path: "src/lib/up", type: "symlink", target: ".." },
      { name: "tools/deep/l", path: "src/tools/deep/l", type: "symlink", target: "../../index.ts" },
    ]);
  });
});
