/**
 * Import keeps symlinks as links (their targets as data, never followed) and export writes them
 * as tar symlink entries (docs/symlinks.md); a round trip keeps them.
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp } from "../../helpers.js";
import { concatBytes } from "../../../lib/shared/text.js";
import { headerBlock, padding } from "../../../lib/archive/tar-writer.js";
import { gnuLongLink, gnuLongName, tar, zip } from "./archives.js";
import { exportReq, files, importReq, tarEntries } from "./helpers.js";

const LONG_TARGET = `../${"t".repeat(150)}/target`;

/** An export's entries: name → "file", "directory" (every directory is an entry, before what it holds) or "-> target". */
async function exported(res: Response): Promise<Record<string, string>> {
  return Object.fromEntries((await tarEntries(res)).map((e) => [e.name, e.kind === "symlink" ? `-> ${e.linkTarget}` : e.kind]));
}

/** The mtime (seconds) of each entry's header in an export, by the name its ustar header holds (a long link's last header: its name is short). */
async function headerTimes(res: Response): Promise<Map<string, number>> {
  const tar = new Uint8Array(await new Response(res.body!.pipeThrough(new DecompressionStream("gzip") as unknown as TransformStream<Uint8Array, Uint8Array>)).arrayBuffer());
  const out = new Map<string, number>();
  const field = (h: Uint8Array, at: number, len: number) => new TextDecoder().decode(h.subarray(at, at + len)).replace(/\0.*$/s, "").trim();
  for (let at = 0; at + 512 <= tar.length; ) {
    const h = tar.subarray(at, at + 512);
    const name = field(h, 0, 100);
    if (!name) break;
    const size = parseInt(field(h, 124, 12) || "0", 8);
    if (field(h, 156, 1) !== "x") out.set(name, parseInt(field(h, 136, 12), 8));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

describe.each([
  ["pack import", testApp()],
])("symlinks through import and export: %s", (_, app) => {
  it("tar: relative, absolute, dangling, nested and long targets are kept as links, never as files; export writes them back", async () => {
    const t = await newTenant(app);
    const r = await importReq(t, tar([
      { name: "real.txt", body: "real\n" },
      { name: "rel", type: "2", linkname: "real.txt" },
      { name: "abs", type: "2", linkname: "/etc/passwd" },
      { name: "dangling", type: "2", linkname: "no/such/file" },
      { name: "node_modules/.bin/tool", type: "2", linkname: "../tool/cli.js" },
      { name: "long", type: "2", linkname: LONG_TARGET },
    ]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ files: 1, skipped_count: 0 });
    expect([...(await files(t.tenant, t.ws)).keys()]).not.toContain("rel"); // no link is a file object
    const exp = await exportReq(t);
    expect(exp.status).toBe(200);
    expect(await exported(exp)).toEqual({ "real.txt": "file", rel: "-> real.txt", abs: "-> /etc/passwd", dangling: "-> no/such/file", "node_modules/": "directory", "node_modules/.bin/": "directory", "node_modules/.bin/tool": "-> ../tool/cli.js", long: `-> ${LONG_TARGET}` });
    // A link carries the export's time, as its directories do (the links table keeps none): never 0, 1970-01-01.
    const times = await headerTimes(await exportReq(t));
    expect(times.get("rel")).toBeGreaterThan(0);
    expect(new Set([times.get("rel"), times.get("long"), times.get("node_modules/")])).toEqual(new Set([times.get("node_modules/.bin/")]));
    // A directory's export holds its links, named relative to it.
    expect(await exported(await exportReq(t, "?path=node_modules"))).toEqual({ ".bin/": "directory", ".bin/tool": "-> ../tool/cli.js" });
  });

  it("links past the workspace's 8 MiB of link paths and targets: the import is refused whole (413 saying what to do), nothing of it lands", async () => {
    const t = await newTenant(app);
    const links = Array.from({ length: 2300 }, (_, i) => ({ name: `s${i}`, type: "2" as const, linkname: `${"a/".repeat(1900)}${i}` }));
    const r = await importReq(t, tar([{ name: "keep.txt", body: "hi\n" }, ...links]));
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(413);
    expect(r.body.error).toMatchObject({ code: "PAYLOAD_TOO_LARGE", details: { reason: "links_bytes", files_written: 0 } });
    expect(r.body.error.message).toContain("remove unneeded links");
    expect([...(await files(t.tenant, t.ws)).keys()]).toEqual([]);
    expect(await exported(await exportReq(t))).toEqual({});
  });

  it("a GNU long link name (\"K\", GNU tar's default for a target over 100 bytes) is the link's whole target, not its first 100 bytes", async () => {
    const t = await newTenant(app);
    const r = await importReq(t, concatBytes([gnuLongLink("long", LONG_TARGET), gnuLongName(`${"n".repeat(120)}/name.txt`, "x"), tar([{ name: "short", type: "2", linkname: "real.txt" }])]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ files: 1, symlinks: 2, skipped_count: 0 });
    expect(await exported(await exportReq(t))).toEqual({ long: `-> ${LONG_TARGET}`, [`${"n".repeat(120)}/`]: "directory", [`${"n".repeat(120)}/name.txt`]: "file", short: "-> real.txt" });
  });

  it("a link target that is not UTF-8 (pax linkpath, GNU long link) is skipped and named, never replaced by the header's cut name", async () => {
    const t = await newTenant(app);
    const bad = new Uint8Array([0x2e, 0x2e, 0x2f, 0xff, 0xfe]);
    const paxBody = concatBytes([new TextEncoder().encode(`${13 + bad.length} linkpath=`), bad, new TextEncoder().encode("\n")]);
    const pax = concatBytes([headerBlock({ name: "././@PaxHeader", size: paxBody.length, type: "x" }), paxBody, padding(paxBody.length)]);
    const long = concatBytes([headerBlock({ name: "././@LongLink", size: bad.length + 1, type: "K" }), bad, new Uint8Array(1), padding(bad.length + 1)]);
    const r = await importReq(t, concatBytes([pax, tar([{ name: "p", type: "2", linkname: "decoy", raw: true }], false), long, tar([{ name: "k", type: "2", linkname: "decoy", raw: true }])]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ symlinks: 0, skipped_count: 2 });
    expect(r.body.message).toMatch(/2 × the link's target is not 1-4095 bytes of UTF-8 without NUL: "p", "k"/);
  });

  it("the raw file routes never follow a link, and their 404 at a link's path says it is one and what to use", async () => {
    const t = await newTenant(app);
    expect((await importReq(t, tar([{ name: "d/real.txt", body: "real\n" }, { name: "rel", type: "2", linkname: "d/real.txt" }]))).status).toBe(200);
    for (const method of ["GET", "DELETE"]) {
      const res = await t.req(`/v1/workspaces/${t.ws}/files/rel`, { method });
      const body = (await res.json()) as any;
      expect(res.status, method).toBe(404);
      expect(body.error.code).toBe("NOT_FOUND");
      expect(body.error.message, method).toBe("rel is a symlink (-> d/real.txt), not a file: the file routes never follow links. Use the path of its target, or the read tool, which follows links inside the workspace.");
      expect(body.error.details).toMatchObject({ path: "rel", target: "d/real.txt", reason: "is_link" });
    }
    // A path that is no link keeps the plain answer.
    const miss = (await (await t.req(`/v1/workspaces/${t.ws}/files/nope.txt`)).json()) as any;
    expect(miss.error.message).not.toContain("symlink");
  });

  it("an export of a link's path says it is a link, never follows it (inside, outside or above the workspace) and says what to export", async () => {
    const t = await newTenant(app);
    expect((await importReq(t, tar([{ name: "real/a.txt", body: "a" }, { name: "dirlink", type: "2", linkname: "real" }, { name: "abs", type: "2", linkname: "/etc" }, { name: "up", type: "2", linkname: ".." }]))).status).toBe(200);
    for (const [link, target] of [["dirlink", "real"], ["abs", "/etc"], ["up", ".."]]) {
      const res = await exportReq(t, `?path=${link}`);
      const body = (await res.json()) as any;
      expect(res.status, link).toBe(404);
      expect(body.error.message).toBe(`${link} is a symlink (-> ${target}), not a directory: an export never follows links. Export the path of its target inside the workspace instead, or the directory that holds the link (the link is then in the archive).`);
      expect(body.error.details).toMatchObject({ path: link, target, reason: "is_link" });
    }
    const below = (await (await exportReq(t, "?path=dirlink/sub")).json()) as any;
    expect(below.error.message).toBe("dirlink/sub lies below the symlink dirlink (-> real): an export never follows links. Export the path of its target inside the workspace instead.");
  });

  it("zip: a link (by Unix mode) is kept with its body as the target", async () => {
    const t = await newTenant(app);
    const z = await zip([
      { name: "ok.txt", body: "fine" },
      { name: "venv/bin/python", body: "python3", mode: 0o120777 },
    ]);
    const r = await importReq(t, z);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ files: 1, skipped_count: 0 });
    expect(await exported(await exportReq(t))).toEqual({ "ok.txt": "file", "venv/": "directory", "venv/bin/": "directory", "venv/bin/python": "-> python3" });
  });

  it("zip: a link whose body (its target) declares more than a target's size is skipped unread, saying its size", async () => {
    const t = await newTenant(app);
    const z = await zip([
      { name: "ok.txt", body: "fine" },
      { name: "huge", body: "a".repeat(8 << 20), mode: 0o120777, deflate: true },
    ]);
    const r = await importReq(t, z);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ files: 1, skipped_count: 1 });
    expect(JSON.stringify(r.body.skipped)).toContain(`the link's target is ${8 << 20} bytes; at most 4095`);
    expect(await exported(await exportReq(t))).toEqual({ "ok.txt": "file" });
  });

  it("replace mode drops the links below the prefix the archive lacks; a file imported at a link's path replaces it", async () => {
    const t = await newTenant(app);
    expect((await importReq(t, tar([{ name: "a/old", type: "2", linkname: "x" }, { name: "a/keep", type: "2", linkname: "y" }, { name: "b/other", type: "2", linkname: "z" }]))).status).toBe(200);
    const r = await importReq(t, tar([{ name: "keep", type: "2", linkname: "y2" }, { name: "new.txt", body: "n" }]), "?prefix=a&mode=replace");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // The removed link and the replaced one are counted and said, not "0 files deleted".
    expect(r.body).toMatchObject({ deleted: 0, links_deleted: 1, links_replaced: 1 });
    expect(r.body.message).toContain("(mode replace: 0 files and 1 symlink (a/old) deleted; 1 symlink of the workspace replaced by the archive's)");
    expect(await exported(await exportReq(t))).toEqual({ "a/": "directory", "a/new.txt": "file", "a/keep": "-> y2", "b/": "directory", "b/other": "-> z" });
    const m = await importReq(t, tar([{ name: "b/other", body: "now a file" }]));
    expect(m.status).toBe(200);
    expect(m.body).toMatchObject({ deleted: 0, links_deleted: 1, links_replaced: 0 });
    expect(m.body.message).toContain("(mode merge: 1 symlink (b/other) of the workspace replaced by files or directories)");
    expect(await exported(await exportReq(t))).toEqual({ "a/": "directory", "a/new.txt": "file", "a/keep": "-> y2", "b/": "directory", "b/other": "file" });
  });

  it("an archive whose only file a later link of the same path displaced reports no files and no bytes", async () => {
    const t = await newTenant(app);
    const r = await importReq(t, tar([{ name: "dup", body: "12345" }, { name: "dup", type: "2", linkname: "x" }]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ files: 0, bytes: 0, symlinks: 1, skipped_count: 1 });
    const twice = await importReq(t, tar([{ name: "two", body: "12345" }, { name: "two", body: "123" }]));
    expect(twice.body).toMatchObject({ files: 1, bytes: 3, skipped_count: 1 });
  });
});
