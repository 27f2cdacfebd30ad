/**
 * Hostile archives: every one is refused or its bad entries skipped, nothing is written outside
 * the rules, and memory and time stay bounded (bodies are generated as they are pulled).
 */
import { describe, expect, it } from "vitest";
import { gzipStream } from "../../../lib/archive/flate.js";
import { END_OF_ARCHIVE, headerBlock, padding } from "../../../lib/archive/tar-writer.js";
import { newTenant, testApp, upload } from "../../helpers.js";
import { gzipBomb } from "./bombs.js";
import { generated, gzip, tar, zip } from "./archives.js";
import { countObjects, expectRefusedUnchanged, exportReq, importReq, snapshot, tarEntries, text, workspaceFiles } from "./helpers.js";
import { gzipSync } from "node:zlib";
import { concatBytes } from "../../../lib/shared/text.js";

const app = testApp();

describe("hostile entries are skipped and reported, never written", () => {
  it("tar: traversal, absolute names, hard links, devices, fifos, bad names (a symlink is kept as a link, never followed)", async () => {
    const t = await newTenant(app);
    const other = await newTenant(app);
    const otherBefore = await snapshot(other.tenant);
    const r = await importReq(t, tar([
      { name: "ok.txt", body: "fine" },
      { name: "../escape.txt", body: "x" },
      { name: "a/../../escape2.txt", body: "x" },
      { name: "safe/../inside.txt", body: "x" },
      { name: `../../${other.tenant}/w/main/f/pwned.txt`, body: "x" },
      { name: "/etc/passwd", body: "x" },
      { name: "link", type: "2", linkname: "/etc/passwd" },
      { name: "hard", type: "1", linkname: "ok.txt" },
      { name: "hard-out", type: "1", linkname: "/etc/shadow" },
      { name: "dev/tty", type: "3" },
      { name: "dev/sda", type: "4" },
      { name: "pipe", type: "6" },
      { name: "back\\slash.txt", body: "x" },
      { name: "ctrl\u0001.txt", body: "x" },
      { name: "...", body: "x" },
      { name: "./", body: "x" },
      { name: "dir/", type: "5" },
      { name: "dir/kept.txt", body: "kept" },
    ]), "?prefix=in");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.files).toBe(3); // the hard link to ok.txt is a copy of it
    expect(r.body.directories).toBe(2); // "dir/" and "./" (a file entry with a trailing slash is a directory, as in old tars)
    expect(r.body.skipped_count).toBe(12);
    const reasons = Object.fromEntries(r.body.skipped.map((s: any) => [s.name, s.reason]));
    expect(reasons["../escape.txt"]).toMatch(/'\.\.'/);
    expect(reasons["/etc/passwd"]).toMatch(/absolute/);
    expect(reasons["link"]).toBeUndefined(); // kept as a link to /etc/passwd: data, never followed (test/lib/archive/symlinks.test.ts)
    expect(reasons["hard"]).toBeUndefined();
    expect(reasons["hard-out"]).toMatch(/hard link whose target is no file earlier in the archive/);
    expect(reasons["dev/tty"]).toMatch(/device/);
    expect(reasons["pipe"]).toMatch(/fifo/);
    expect(reasons["back\\slash.txt"]).toMatch(/Invalid path/);
    const f = await workspaceFiles(t);
    expect([...f.keys()].sort()).toEqual(["in/dir/kept.txt", "in/hard", "in/ok.txt"]);
    expect(text(f.get("in/hard"))).toBe("fine");
    // Nothing anywhere else in the tenant but its workspace records, the packs, the manifest and the index; nothing in the other tenant.
    expect((await snapshot(t.tenant)).every((k) => /^t\/[^/]+\/(tenant\.json|packs\/|manifests\/|w\/main\/(meta\.json|x\/search\/|x\/modes\.json))/.test(k))).toBe(true);
    expect(await snapshot(other.tenant)).toEqual(otherBefore);
  });

  it("a name that is not UTF-8 (ustar, GNU long name, pax path, zip) is skipped and named as far as it reads, not as an empty name", async () => {
    const t = await newTenant(app);
    const latin1 = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
    const entry = (head: Uint8Array) => concatBytes([head, new TextEncoder().encode("x"), padding(1)]);
    const longName = latin1(`long/${"d".repeat(120)}/caf\xe9.txt\0`);
    const paxBody = concatBytes([new TextEncoder().encode("21 path=pax/caf"), latin1("\xe9.txt\n")]);
    const r = await importReq(t, concatBytes([
      entry(headerBlock({ name: "", size: 1, nameBytes: latin1("ustar/caf\xe9.txt") })),
      headerBlock({ name: "././@LongLink", size: longName.length, type: "L" }), longName, padding(longName.length),
      entry(headerBlock({ name: "cut", size: 1 })),
      headerBlock({ name: "PaxHeaders/x", size: paxBody.length, type: "x" }), paxBody, padding(paxBody.length),
      entry(headerBlock({ name: "cut-too", size: 1 })),
      END_OF_ARCHIVE(),
    ]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.skipped).toEqual([
      { name: "ustar/caf\ufffd.txt", reason: "its name is not UTF-8" },
      { name: `long/${"d".repeat(120)}/caf\ufffd.txt`, reason: "its name is not UTF-8" },
      { name: "pax/caf\ufffd.txt", reason: "its name is not UTF-8" },
    ]);
    expect(r.body.message).toContain('"ustar/caf\ufffd.txt"');
    const z = await zip([{ name: "ok.txt", body: "ok" }]);
    const at = new TextDecoder("latin1").decode(z).lastIndexOf("ok.txt"); // the central directory's copy of the name
    const bad = z.slice();
    bad[at] = 0xe9;
    const rz = await importReq(t, bad, "?prefix=z");
    expect(rz.status, JSON.stringify(rz.body)).toBe(200);
    expect(rz.body.skipped).toEqual([{ name: "\ufffdk.txt", reason: "its name is not UTF-8" }]);
  });

  it("zip: symlinks (by Unix mode), devices, traversal, absolute names; overlapping entries and lying sizes are refused", async () => {
    const t = await newTenant(app);
    const z = await zip([
      { name: "ok.txt", body: "fine", deflate: true },
      { name: "link", body: "../../etc/passwd", mode: 0o120777 },
      { name: "fifo", mode: 0o010644 },
      { name: "chr", mode: 0o020644 },
      { name: "../up.txt", body: "x" },
      { name: "/abs.txt", body: "x" },
      { name: "sub/", mode: 0o040755 },
    ]);
    const r = await importReq(t, z);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ format: "zip", files: 1, skipped_count: 4, directories: 1, empty_directories: 1 }); // the link is kept as a link
    // The empty directory is kept as an explicit directory (its marker, "sub/").
    expect((await tarEntries(await exportReq(t))).map((e) => `${e.name} ${e.kind}`).sort()).toEqual(["link symlink", "ok.txt file", "sub/ directory"]);

    const before = await snapshot(t.tenant);
    const overlap = await zip([{ name: "a.txt", body: "a".repeat(1000), deflate: true }, { name: "b.txt", body: "b", offsetOf: 0 }]);
    const o = await importReq(t, overlap, "?prefix=o");
    expect(o.status).toBe(400);
    expect(o.body.error.message).toMatch(/overlap/);
    const lie = await zip([{ name: "small.txt", body: "z".repeat(100_000), deflate: true, declaredSize: 10 }]);
    const l = await importReq(t, lie, "?prefix=l");
    expect(l.status).toBe(400);
    expect(l.body.error.message).toMatch(/more than its declared/);
    // All or nothing: neither left anything (no file, pack or spool).
    expect(await snapshot(t.tenant)).toEqual(before);
    expect(await countObjects(`t/${t.tenant}/w/${t.ws}/x/import/`)).toBe(0);
  });
});

describe("bounds", () => {
  it("a 10 GiB gzip bomb (10 entries of 1 GiB of zeros) is refused by the ratio guard; nothing is written", async () => {
    const t = await newTenant(app, {});
    const before = await snapshot(t.tenant);
    const bomb = gzipBomb(10 * 1024 ** 3, 1024 ** 3 - 1024 * 1024);
    const started = Date.now();
    const r = await importReq(t, bomb.stream);
    expect(r.status, JSON.stringify(r.body)).toBe(413);
    expect(r.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(r.body.error.message).toMatch(/decompression bomb/);
    console.log(`the gzip bomb refused after ${Date.now() - started} ms`);
    expect(bomb.pulled()).toBeLessThan(2 * 1024 ** 2); // stopped after ~64 MiB inflated
    expect(await snapshot(t.tenant)).toEqual(before);
  });

  it("one entry declaring 10 GiB is refused at its header, before its body is read", async () => {
    const t = await newTenant(app);
    const before = await snapshot(t.tenant);
    let sent = 0;
    const body = generated(() => (sent++ === 0 ? headerBlock({ name: "huge.bin", size: 10 * 1024 ** 3 }) : sent < 100_000 ? new Uint8Array(1 << 20) : null));
    const r = await importReq(t, body.stream);
    expect(r.status).toBe(413);
    expect(r.body.error.details).toMatchObject({ reason: "file_size" });
    expect(body.pulled()).toBeLessThan(16 * 1024 ** 2);
    expect(await snapshot(t.tenant)).toEqual(before);
  });

  it("1,000,000 entries: the count bound stops the import early, having pulled little past it and written nothing beyond it", async () => {
    // Entries that are never written (hard links): the default bound (200,000) is reached by parsing alone.
    const t = await newTenant(app);
    const before = await snapshot(t.tenant);
    let i = 0;
    const links = generated(() => {
      if (i >= 1_000_000) return null;
      const chunk = new Uint8Array(512 * 1000);
      for (let k = 0; k < 1000; k++, i++) chunk.set(headerBlock({ name: `l/${i}`, size: 0, type: "1", linkname: "x" }), k * 512);
      return chunk;
    });
    const started = Date.now();
    const r = await importReq(t, links.stream);
    expect(r.status).toBe(413);
    expect(r.body.error.details).toMatchObject({ reason: "entries", max: 200_000 });
    expect(links.pulled()).toBeLessThan(512 * 202_000);
    expect(await snapshot(t.tenant)).toEqual(before);
    console.log(`200,000 link entries refused after ${Date.now() - started} ms`);

    // Empty files, which would be written: a deployment's lower bound stops at it (500 here).
    const small = testApp({ archiveLimits: { maxEntries: 500 } });
    const u = await newTenant(small);
    const uBefore = await snapshot(u.tenant);
    let j = 0;
    const empties = generated(() => {
      if (j >= 1_000_000) return null;
      const chunk = new Uint8Array(512 * 500);
      for (let k = 0; k < 500; k++, j++) chunk.set(headerBlock({ name: `e/${j}`, size: 0 }), k * 512);
      return chunk;
    });
    const e = await u.req(`/v1/workspaces/${u.ws}/import`, { method: "POST", body: gzipStream(empties.stream) });
    const eb = (await e.json()) as any;
    console.log(`500 empty files then refused after ${Date.now() - started} ms`);
    expect(e.status).toBe(413);
    expect(eb.error.details).toMatchObject({ reason: "entries", files_written: 0 });
    expect(await snapshot(u.tenant)).toEqual(uBefore);
    expect(empties.pulled()).toBeLessThan(512 * 20_000); // the generator was pulled only a little past the bound
  }, 120_000);
});

describe("a cut upload", () => {
  it("stops, and leaves the workspace and its storage as they were (all or nothing): replace deleted nothing", async () => {
    const t = await newTenant(app);
    await upload(t, "old.txt", "must survive a failed replace");
    const before = await snapshot(t.tenant);
    const items = Array.from({ length: 40 }, (_, i) => ({ name: `f${String(i).padStart(2, "0")}.txt`, body: `file ${i}\n`.repeat(200) }));
    const whole = tar(items, false);
    const cutAt = Math.floor(whole.length / 2) + 100; // inside an entry's body
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= cutAt) return c.error(new Error("connection reset by peer"));
        const n = Math.min(4096, cutAt - sent);
        c.enqueue(whole.slice(sent, sent + n));
        sent += n;
      },
    });
    const r = await importReq(t, stream, "?mode=replace");
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/cut/);
    expect(r.body.error.details.files_written).toBe(0);
    expect(await snapshot(t.tenant)).toEqual(before);
    // A truncated body (no error, just short) is refused the same way.
    const short = await importReq(t, whole.subarray(0, cutAt), "?prefix=short");
    expect(short.status).toBe(400);
    expect(short.body.error.details.reason).toBe("truncated");
  });
});

describe("a damaged tar.gz: gzip's trailers are checked, as gzip -t does (deflate carries no checksum of its own)", () => {
  // Stored blocks (level 0): a damaged byte there inflates, as a damaged byte of the file it holds.
  const payload = new TextEncoder().encode("the original bytes of a file\n".repeat(2000));
  const items = [{ name: "keep/a.txt", body: "a\n" }, { name: "keep/data.txt", body: payload }, { name: "keep/z.txt", body: "z\n" }];
  const stored = () => new Uint8Array(gzipSync(tar(items), { level: 0 }));

  it("a byte damaged inside a file's bytes, a damaged trailer, a gzip cut just before its trailer: refused with what to do, storage as it was", async () => {
    const t = await newTenant(app);
    await upload(t, "old.txt", "must survive");
    const inBody = stored();
    const at = inBody.length >> 1; // inside data.txt's stored bytes
    inBody[at] = inBody[at]! ^ 0x20;
    const inTrailer = stored();
    inTrailer[inTrailer.length - 6] = inTrailer[inTrailer.length - 6]! ^ 0x01; // the CRC-32
    const cut = stored().subarray(0, stored().length - 8);
    for (const [what, body] of [["damaged byte", inBody], ["damaged trailer", inTrailer], ["no trailer", cut]] as const) {
      const error = await expectRefusedUnchanged(t, body, 400);
      expect(error.code, what).toBe("INVALID_ARGUMENT");
      expect(error.details, what).toMatchObject({ reason: "gzip_check", files_written: 0 });
      expect(error.message, what).toMatch(/^The gzip data fails its check \(.*CRC-32.*\): the upload was cut or the archive is damaged\. Send the whole archive again/);
    }
    expect([...(await workspaceFiles(t)).keys()]).toEqual(["old.txt"]);
  });

  it("a sound one imports, multi-member included (each member's trailer checked), and a later member's damage is found", async () => {
    const t = await newTenant(app);
    const whole = tar(items);
    const members = [whole.subarray(0, 20_000), whole.subarray(20_000, 40_000), whole.subarray(40_000)].map((p) => new Uint8Array(gzipSync(p, { level: 0 })));
    const r = await importReq(t, concatBytes(members), "?prefix=multi");
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    expect(r.body.files).toBe(3);
    expect((await workspaceFiles(t)).get("multi/keep/data.txt")).toEqual(payload);
    const second = members[1]!;
    second[second.length - 6] = second[second.length - 6]! ^ 0x01; // the second member's CRC-32
    const error = await expectRefusedUnchanged(t, concatBytes(members), 400);
    expect(error.details).toMatchObject({ reason: "gzip_check" });
    expect(error.message).toMatch(/member 2: its trailer declares CRC-32/);
  });
});

describe("a body that is no archive", () => {
  const enc = new TextEncoder();
  it("text shorter than a tar header, a longer non-tar and a gzip of text: not a tar, tar.gz or zip, with what is accepted; nothing written", async () => {
    const t = await newTenant(app);
    const before = await snapshot(t.tenant);
    const bodies: [string, Uint8Array, RegExp][] = [
      ["echo 'not an archive'", enc.encode("not an archive\n"), /\(15 bytes, shorter than one tar header\)/],
      ["a README", enc.encode("# Project\n\n" + "Some text that is no archive at all.\n".repeat(40)), /\(its first 512 bytes are not a tar header\)/],
      ["gzip of text", await gzip(enc.encode("not an archive\n")), /\(it is gzip, but what it holds is not a tar: 15 bytes, shorter than one tar header\)/],
    ];
    for (const [what, body, why] of bodies) {
      const r = await importReq(t, body);
      expect(r.status, what).toBe(400);
      expect(r.body.error.code, what).toBe("INVALID_ARGUMENT");
      expect(r.body.error.message, what).toMatch(/^The body is not a tar, tar\.gz or zip archive /);
      expect(r.body.error.message, what).toMatch(why);
      expect(r.body.error.message, what).toContain("Content-Type application/x-tar, application/gzip, application/zip or application/octet-stream");
      expect(r.body.error.message, what).not.toMatch(/cut|middle of/);
      expect(r.body.error.details, what).toMatchObject({ reason: "not_an_archive", accepted: ["tar", "tar.gz", "zip"] });
    }
    expect(await snapshot(t.tenant)).toEqual(before);
  });

  it("a real tar cut inside its first header is still a cut upload", async () => {
    const t = await newTenant(app);
    const whole = tar([{ name: "a.txt", body: "a\n" }]);
    const r = await importReq(t, whole.subarray(0, 300));
    expect(r.status).toBe(400);
    expect(r.body.error.details.reason).toBe("truncated");
    expect(r.body.error.message).toMatch(/ends in the middle of a tar header: the upload was cut/);
  });
});
