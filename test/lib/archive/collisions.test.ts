/**
 * Entries that meet at one workspace path: within an archive (a link and a file of one name, the
 * same name twice, NFC and NFD spellings that normalize to one path) and against the workspace
 * (a link imported over a file, a file imported below a link or at an empty directory). One path
 * holds one thing after an import, as a POSIX tree does, and what was not kept is named in the
 * report's message (the text the caller reads), never dropped silently.
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { tar, zip } from "./archives.js";
import { exportReq, importReq, snapshot, tarEntries } from "./helpers.js";

const app = testApp();
const dec = new TextDecoder();

/** The export as "name kind" lines: a file with its bytes, a link with its target. */
async function exported(t: Tenant, query = ""): Promise<string[]> {
  return (await tarEntries(await exportReq(t, query))).map((e) => `${e.name} ${e.kind === "symlink" ? `-> ${e.linkTarget}` : e.kind === "file" ? `= ${dec.decode(e.bytes)}` : e.kind}`);
}

const grep = async (t: Tenant, pattern: string) => (await (await t.req(`/v1/workspaces/${t.ws}/tools/grep`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ pattern, output_mode: "content" }) })).json()) as any;

async function imported(t: Tenant, body: Uint8Array, query = "") {
  const r = await importReq(t, body, query);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { message: string; files: number; symlinks: number; deleted: number; empty_directories: number; skipped: { name: string; reason: string }[]; skipped_count: number };
}

describe("one path, one thing: entries of an archive that meet at one path", () => {
  it("a link then a file of the same name: the later entry (the file) is kept, the link is named as not kept", async () => {
    const t = await newTenant(app);
    const r = await imported(t, tar([{ name: "x", type: "2", linkname: "y" }, { name: "x", body: "file" }]));
    expect(await exported(t)).toEqual(["x = file"]);
    expect(r).toMatchObject({ files: 1, symlinks: 0, skipped_count: 1 });
    expect(r.message).toMatch(/1 × a later entry of the archive has the same path \(x\); the later one is kept: "x"/);
  });

  it("a file then a link of the same name: the link is kept and no file stays under it", async () => {
    const t = await newTenant(app);
    const r = await imported(t, tar([{ name: "x", body: "file" }, { name: "x", type: "2", linkname: "y" }]));
    expect(await exported(t)).toEqual(["x -> y"]);
    expect(r).toMatchObject({ files: 0, symlinks: 1, skipped_count: 1 });
    expect(r.message).toMatch(/same path \(x\)/);
    const get = await t.req(`/v1/workspaces/${t.ws}/files/x`);
    expect(get.status).toBe(404); // the link, which the file routes never follow
    expect((await grep(t, "file")).output).toMatch(/^No matches/); // the search index holds no file x either
  });

  it("NFC and NFD spellings of one name both in the archive: one file is kept, the other is named (names are NFC-normalized)", async () => {
    const t = await newTenant(app);
    const r = await imported(t, tar([{ name: "caf\u00e9.txt", body: "nfc" }, { name: "cafe\u0301.txt", body: "nfd" }]));
    expect(await exported(t)).toEqual(["caf\u00e9.txt = nfd"]);
    expect(r).toMatchObject({ files: 1, skipped_count: 1, skipped: [{ name: "caf\u00e9.txt" }] });
    expect(r.message).toContain(`same path (caf\u00e9.txt) as "cafe\u0301.txt"`);
    expect(r.message).toMatch(/NFC/);
  });

  it("the same member twice (tar's append): the later is kept, the earlier named; the counts hold each path once", async () => {
    const t = await newTenant(app);
    const r = await imported(t, tar([{ name: "a.txt", body: "one" }, { name: "./a.txt", body: "two" }, { name: "b.txt", body: "b" }]));
    expect(await exported(t)).toEqual(["a.txt = two", "b.txt = b"]);
    expect(r).toMatchObject({ files: 2, skipped_count: 1 });
  });

  it("a link or a file where an earlier entry made a directory is named as the archive's directory, not the workspace's", async () => {
    const t = await newTenant(app);
    const r = await imported(t, tar([{ name: "d/f", body: "f" }, { name: "d", type: "2", linkname: "y" }, { name: "d", body: "file" }]));
    expect(await exported(t)).toEqual(["d/ directory", "d/f = f"]);
    expect(r.message).toContain('2 × d is a directory of the archive (an earlier entry lies below it): "d", "d"');
  });

  it("an empty directory entry and a link of the same name: the link is kept, the directory named", async () => {
    for (const order of [0, 1]) {
      const t = await newTenant(app);
      const entries = [{ name: "d/", type: "5" as const }, { name: "d", type: "2" as const, linkname: "y" }];
      const r = await imported(t, tar(order ? entries.reverse() : entries));
      expect(await exported(t), `order ${order}`).toEqual(["d -> y"]);
      expect(r.skipped, `order ${order}`).toEqual([{ name: "d/", reason: "d is a symlink, so the directory cannot be made" }]);
    }
  });
});

describe("one path, one thing: the archive against the workspace", () => {
  it("a link imported over a file of the workspace (lower or upper layer) replaces it, as tar x does", async () => {
    const t = await newTenant(app);
    await imported(t, tar([{ name: "low", body: "lower layer" }, { name: "keep.txt", body: "k" }]));
    await upload(t, "up", "upper layer");
    const r = await imported(t, tar([{ name: "low", type: "2", linkname: "keep.txt" }, { name: "up", type: "2", linkname: "keep.txt" }]));
    expect(r).toMatchObject({ files: 0, symlinks: 2, skipped_count: 0, deleted: 2 });
    expect(r.message).toMatch(/^Imported 0 files \(0 executable\), 2 symlinks and 0 empty directories from a tar into the workspace root \(mode merge: 2 files of the workspace replaced by links\)\./);
    expect(await exported(t)).toEqual(["keep.txt = k", "low -> keep.txt", "up -> keep.txt"]);
    for (const p of ["low", "up"]) expect((await t.req(`/v1/workspaces/${t.ws}/files/${p}`)).status, p).toBe(404);
    const read = (await (await t.req(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ file_path: "up" }) })).json()) as any;
    expect(read.output).toContain("k"); // read follows the link to keep.txt
    expect(read.output).not.toContain("upper layer");
    for (const gone of ["upper layer", "lower layer"]) expect((await grep(t, gone)).output, gone).toMatch(/^No matches/);
  });

  it("a file imported below a link of the workspace is not written through it (link -> /etc, then link/passwd); the message names it", async () => {
    const t = await newTenant(app);
    await imported(t, tar([{ name: "link", type: "2", linkname: "/etc" }, { name: "dirlink", type: "2", linkname: "real" }, { name: "real/", type: "5" }]));
    const before = await snapshot(t.tenant);
    const r = await imported(t, tar([{ name: "link/passwd", body: "root::0:0::/:/bin/sh\n" }, { name: "dirlink/x", type: "2", linkname: "/" }, { name: "ok.txt", body: "ok" }, { name: "link/sub/", type: "5" }]));
    expect(r).toMatchObject({ files: 1, symlinks: 0, skipped_count: 3, empty_directories: 0 });
    expect(r.skipped[2]).toEqual({ name: "link/sub/", reason: "link is a symlink, so link/sub cannot be made below it" });
    expect(r.message).toContain("1 × link is a symlink in the workspace, so link/passwd cannot be created below it: nothing is written through a link: \"link/passwd\"");
    expect(r.skipped.map((s) => s.name)).toEqual(["link/passwd", "dirlink/x", "link/sub/"]);
    expect(await exported(t)).toEqual(["ok.txt = ok", "real/ directory", "dirlink -> real", "link -> /etc"]);
    expect(before.length).toBeGreaterThan(0);
  });

  it("the archive's own link is not written through either; its message says the path is a link, not a file", async () => {
    const t = await newTenant(app);
    const r = await imported(t, tar([{ name: "link", type: "2", linkname: "/etc" }, { name: "link/passwd", body: "x" }]));
    expect(await exported(t)).toEqual(["link -> /etc"]);
    expect(r.skipped).toEqual([{ name: "link/passwd", reason: "link is a symlink in the archive, so link/passwd cannot be created below it: nothing is written through a link" }]);
  });

  it("zip follows the same rule: nothing below its own link, NFC/NFD spellings named", async () => {
    const t = await newTenant(app);
    const r = await imported(t, await zip([{ name: "link", body: "/etc", mode: 0o120777 }, { name: "link/passwd", body: "x" }, { name: "caf\u00e9", body: "1" }, { name: "cafe\u0301", body: "2" }]));
    expect(await exported(t)).toEqual(["caf\u00e9 = 2", "link -> /etc"]);
    expect(r.skipped.map((s) => s.name)).toEqual(["link/passwd", "caf\u00e9"]);
  });

  it("a prefix that is (or lies below) a link of the workspace is refused before the archive is read, in either mode", async () => {
    const t = await newTenant(app);
    await imported(t, tar([{ name: "lnk", type: "2", linkname: "/etc" }, { name: "real/", type: "5" }]));
    const before = await snapshot(t.tenant);
    for (const query of ["?prefix=lnk", "?prefix=lnk/sub&mode=replace"]) {
      const r = await importReq(t, tar([{ name: "passwd", body: "x" }]), query);
      expect(r.status, query).toBe(400);
      expect(r.body.error).toMatchObject({ code: "SYMLINK_REFUSED", details: { link: "lnk", target: "/etc", reason: "is_link" } });
      expect(r.body.error.message).toMatch(/^Cannot import into lnk(\/sub)?: lnk is a symlink \(-> \/etc\); an import never writes through a link\. Import into the path of its target instead\./);
    }
    expect(await snapshot(t.tenant)).toEqual(before);
  });

  it("replace mode: a link of the workspace the archive does not hold is dropped, so a file may land below its path", async () => {
    const t = await newTenant(app);
    await imported(t, tar([{ name: "p/link", type: "2", linkname: "/etc" }]));
    const r = await imported(t, tar([{ name: "link/passwd", body: "mine" }]), "?prefix=p&mode=replace");
    expect(r).toMatchObject({ files: 1, skipped_count: 0 });
    expect(await exported(t)).toEqual(["p/ directory", "p/link/ directory", "p/link/passwd = mine"]);
  });

  it("a file or a link imported at an empty directory of the workspace is refused and named", async () => {
    const t = await newTenant(app);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/e/`, { method: "PUT", headers: { "content-length": "0" }, body: "" })).status).toBe(201);
    const r = await imported(t, tar([{ name: "e", body: "file" }, { name: "e", type: "2", linkname: "y" }]));
    expect(r).toMatchObject({ files: 0, symlinks: 0, skipped_count: 2 });
    expect(r.message).toMatch(/e is a directory in the workspace/);
    expect(await exported(t)).toEqual(["e/ directory"]);
  });
});

describe("hard links: a copy of the file they name, as each name of a hard-linked file is one file in the workspace", () => {
  it("a hard link to a file earlier in the archive lands as a copy (its bytes, its own execute bit); the search finds it", async () => {
    const t = await newTenant(app);
    const r = await imported(t, tar([
      { name: "target/debug/app", body: "ELF binary", mode: 0o755 },
      { name: "target/debug/deps/app-1234", type: "1", linkname: "target/debug/app", mode: 0o755 },
      { name: "empty", body: "" },
      { name: "./empty-twin", type: "1", linkname: "./empty" },
      { name: "docs/a.txt", body: "needle in a\n" },
      { name: "docs/b.txt", type: "1", linkname: "docs/a.txt" },
    ]));
    expect(r).toMatchObject({ files: 6, skipped_count: 0 });
    expect(await exported(t)).toEqual(["docs/ directory", "docs/a.txt = needle in a\n", "docs/b.txt = needle in a\n", "empty = ", "empty-twin = ", "target/ directory", "target/debug/ directory", "target/debug/app = ELF binary", "target/debug/deps/ directory", "target/debug/deps/app-1234 = ELF binary"]);
    const modes = Object.fromEntries((await tarEntries(await exportReq(t))).map((e) => [e.name, e.mode]));
    expect(modes["target/debug/deps/app-1234"]).toBe(0o755);
    expect((await grep(t, "needle")).output).toContain("docs/b.txt");
  });

  it("a hard link to no file of the archive (outside it, a link, a directory, a name the import skipped, a later entry) is skipped and named; a copy keeps the bytes its target had when it was linked", async () => {
    const t = await newTenant(app);
    const r = await imported(t, tar([
      { name: "outside", type: "1", linkname: "/etc/passwd" },
      { name: "up", type: "1", linkname: "../x" },
      { name: "sym", type: "2", linkname: "real" },
      { name: "to-sym", type: "1", linkname: "sym" },
      { name: "dir/", type: "5" },
      { name: "to-dir", type: "1", linkname: "dir" },
      { name: "early", type: "1", linkname: "later.txt" },
      { name: "later.txt", body: "v1" },
      { name: "snap", type: "1", linkname: "later.txt" },
      { name: "later.txt", body: "v2" },
    ]));
    expect(await exported(t)).toEqual(["dir/ directory", "later.txt = v2", "snap = v1", "sym -> real"]);
    expect(r.message).toContain('5 × a hard link whose target is no file earlier in the archive (hard links land as copies of the file they name): "outside", "up", "to-sym", "to-dir", "early"');
  });
});

