/**
 * Zip entries are checked against what the archive declares (lib/archive/zip-reader.ts): CRC-32
 * and sizes of the central directory, and the local header's. A mismatch refuses the import,
 * naming the entry, and leaves storage as it was. Through the import route, in workerd with local R2.
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp } from "../../helpers.js";
import { tar, zip, type ZipItem } from "./archives.js";
import { bigText, expectRefusedUnchanged, importReq } from "./helpers.js";

const app = testApp();
const grepFiles = async (t: Awaited<ReturnType<typeof newTenant>>, pattern: string) => (await t.call("grep", { pattern, output_mode: "files_with_matches" })).body;

describe("a zip entry whose CRC-32 does not match is refused, naming it; storage unchanged", () => {
  const cases: [string, ZipItem][] = [
    ["a stored entry with a damaged byte", { name: "late/bad.txt", body: "the original text\n".repeat(50), flipByte: 100 }],
    ["a deflated entry declaring another CRC-32", { name: "late/bad.txt", body: "deflated text\n".repeat(500), deflate: true, crc: 0x12345678 }],
    ["an entry whose local header declares another CRC-32 than the central directory", { name: "late/bad.txt", body: "local\n", localCrc: 0xdeadbeef }],
  ];
  for (const [what, bad] of cases) {
    it(what, async () => {
      const t = await newTenant(app);
      expect((await importReq(t, tar([{ name: "keep.txt", body: "kept needle\n" }]))).status).toBe(200);
      const z = await zip([{ name: "first.txt", body: "fine\n" }, ...bigText(6).map((f, i) => ({ ...f, deflate: i % 2 === 0 })), bad, { name: "after.txt", body: "after\n" }]);
      const error = await expectRefusedUnchanged(t, z, 400);
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.details).toMatchObject({ reason: "crc_mismatch", entry: "late/bad.txt", files_written: 0 });
      expect(error.message).toContain('"late/bad.txt"');
      expect(error.message).toMatch(/CRC-32/);
      expect(error.message).toMatch(/import again/);
      expect(JSON.stringify(await grepFiles(t, "needle"))).not.toContain("big/");
    });
  }

  it("a deflated entry whose data does not inflate is refused as damaged, naming it (not a storage error); storage unchanged", async () => {
    const t = await newTenant(app);
    expect((await importReq(t, tar([{ name: "keep.txt", body: "kept needle\n" }]))).status).toBe(200);
    const z = await zip([{ name: "first.txt", body: "fine\n" }, ...bigText(6).map((f, i) => ({ ...f, deflate: i % 2 === 0 })), { name: "late/bad.txt", body: "deflated text\n".repeat(500), deflate: true, flipByte: 2 }, { name: "after.txt", body: "after\n" }]);
    const error = await expectRefusedUnchanged(t, z, 400);
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.details).toMatchObject({ reason: "inflate_failed", entry: "late/bad.txt", files_written: 0 });
    expect(error.message).toContain('"late/bad.txt" is not valid deflate data');
    expect(error.message).toMatch(/import again/);
  });

  it("a zip whose entries are all sound imports (stored and deflated, empty included)", async () => {
    const t = await newTenant(app);
    const r = await importReq(t, await zip([{ name: "a.txt", body: "a\n" }, { name: "b.txt", body: "b\n".repeat(1000), deflate: true }, { name: "e.txt", body: "" }]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.files).toBe(3);
  });
});

