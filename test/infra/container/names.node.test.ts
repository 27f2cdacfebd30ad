/**
 * Names that are not valid UTF-8, through the real bubblewrap sandbox: they can never reach a
 * string path (the walk reads names as bytes), they are skipped as invalid_name, and every
 * other change of the run is written back.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { treeUsage } from "../../../infra/container/disk-quota.js";
import { setup } from "./helpers.js";

const t = setup({}, "t-names", "w-names");
afterAll(() => t.cleanup());

describe("names that are not UTF-8", () => {
  it("a file, a directory and a symlink with such names are skipped; the rest of the run is written back", async () => {
    await t.write("keep.txt", "v0\n");
    const r = await t.run(
      "touch $'bad\\xff.txt' good.txt; mkdir $'dir\\xfe' && echo inside > $'dir\\xfe/inner.txt'; mkdir ok && echo x > $'ok/\\xc3\\x28' && echo fine > ok/fine.txt; ln -s good.txt $'ln\\xff'; echo v1 > keep.txt; echo done",
    );
    expect(r.stdout).toBe("done\n");
    expect(r.files_changed).toEqual(["good.txt", "keep.txt", "ok/fine.txt"]);
    const bad = r.skipped.filter((s) => s.reason === "invalid_name").map((s) => s.path).sort();
    expect(bad).toEqual(["bad\\xff.txt", "dir\\xfe", "ln\\xff", "ok/\\xc3("]);
    for (const s of r.skipped.filter((s) => s.reason === "invalid_name")) expect(s.detail).toContain("not valid UTF-8");
    expect(await t.read("keep.txt")).toBe("v1\n");
    expect(await t.paths()).toEqual(["good.txt", "keep.txt", "ok/fine.txt"]);
    // The slot was settled: the next run sees storage only, not the skipped entries.
    const next = await t.run("ls -A | od -c | head -5; ls -A ok");
    expect(next.stdout).not.toContain("377");
    expect(next.stdout).not.toContain("dir");
    expect(next.stdout).toContain("fine.txt");
    expect(next.skipped).toEqual([]);
  });

  it("a name holding U+FFFD itself (valid UTF-8) is an ordinary file, beside a name that is not UTF-8 or not", async () => {
    const r = await t.run("mkdir -p u v && echo a > $'u/\\xef\\xbf\\xbd.txt' && echo b > $'u/\\xff' && echo c > $'v/x\\xef\\xbf\\xbd' && echo d > v/plain; echo done");
    expect(r.stdout).toBe("done\n");
    expect(r.files_created).toEqual(["u/\uFFFD.txt", "v/plain", "v/x\uFFFD"]);
    expect(r.skipped.filter((s) => s.reason === "invalid_name").map((s) => s.path)).toEqual(["u/\\xff"]);
    expect(await t.read("u/\uFFFD.txt")).toBe("a\n");
    expect(await t.read("v/x\uFFFD")).toBe("c\n");
  });

  it("each name the workspace cannot hold says why (NFD beside its NFC twin, a backslash, a newline, a path over 768 bytes), in the entry's detail", async () => {
    const deep = Array.from({ length: 8 }, () => "d".repeat(100)).join("/");
    const r = await t.run(`printf nfc > $'caf\\xc3\\xa9'; printf nfd > $'cafe\\xcc\\x81'; printf b > 'back\\slash'; printf n > $'new\\nline'; mkdir -p ${deep} && echo deep > ${deep}/f.txt; echo done`);
    expect(r.stdout).toBe("done\n");
    expect(r.files_created).toEqual(["caf\u00e9"]);
    const why = Object.fromEntries(r.skipped.filter((s) => s.reason === "invalid_name").map((s) => [s.path, s.detail]));
    expect(why).toEqual({
      "cafe\u0301": "not in Unicode NFC (the workspace holds names composed, as caf\u00e9): rename it to that spelling",
      "back\\slash": "use '/' to separate directories, not '\\'",
      "new\nline": "it contains a control character (NUL, newline, ...)",
      [deep.split("/").slice(0, 7).join("/") + "/" + "d".repeat(100)]: "longer than 768 bytes",
    });
  });

  it("the disk sampler counts bytes below a directory whose name is not UTF-8", async () => {
    const dir = mkdtempSync(join(tmpdir(), "toolshed-names-"));
    try {
      const bad = Buffer.concat([Buffer.from(dir + "/"), Buffer.from([0x64, 0xff])]);
      mkdirSync(bad);
      writeFileSync(Buffer.concat([bad, Buffer.from("/big.bin")]), Buffer.alloc(100_000));
      writeFileSync(Buffer.concat([Buffer.from(dir + "/"), Buffer.from([0x66, 0xfe])]), Buffer.alloc(50_000));
      writeFileSync(join(dir, "plain.txt"), Buffer.alloc(1_000));
      expect(readdirSync(dir).length).toBe(3);
      expect((await treeUsage(dir)).bytes).toBe(151_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
