/**
 * What import and export keep of a tree besides bytes (docs/workspace-fidelity.md): execute bits,
 * empty directories, every directory as an export entry; what is not kept is named in the
 * report's message. Through the import (packs, all or nothing).
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { tar, zip, type TarItem } from "./archives.js";
import { exportReq, importReq, tarEntries } from "./helpers.js";

const WRITERS = [{ name: "pack import", app: testApp() }];

/** The export as "name kind mode" lines plus bytes per file, in archive order. */
async function exported(t: Tenant, query = "") {
  const res = await exportReq(t, query);
  expect(res.status).toBe(200);
  return tarEntries(res);
}
const shape = (entries: Awaited<ReturnType<typeof exported>>) => entries.map((e) => `${e.name} ${e.kind} ${(e.mode ?? 0).toString(8)}`);

const TREE: TarItem[] = [
  { name: "bin/", type: "5", mode: 0o755 },
  { name: "bin/run.sh", body: "#!/bin/sh\necho run\n", mode: 0o755 },
  { name: "bin/tool", body: "#!/bin/sh\n", mode: 0o700 },
  { name: "README.md", body: "# readme\n", mode: 0o644 },
  { name: "empty/", type: "5" },
  { name: "a/", type: "5" },
  { name: "a/b/", type: "5" },
  { name: "a/b/c/", type: "5" },
  { name: "src/", type: "5" },
  { name: "src/main.c", body: "int main(){}\n", mode: 0o664 },
  { name: "link", type: "2", linkname: "README.md" },
  { name: "hard", type: "1", linkname: "README.md" },
  { name: "pipe", type: "6" },
];

for (const { name, app } of WRITERS) {
  describe(`import and export keep modes and directories (${name})`, () => {
    it("keeps execute bits and empty directories; the export lists every directory and the 0755/0644 modes", async () => {
      const t = await newTenant(app);
      const r = await importReq(t, tar(TREE));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      // The hard link lands as a copy of README.md (test/lib/archive/collisions.test.ts).
      expect(r.body).toMatchObject({ files: 5, executable: 2, directories: 6, empty_directories: 2, symlinks: 1, skipped_count: 1 });
      // What was not kept is named in the text the caller reads, not only in `skipped`.
      expect(r.body.message).toContain('fifos are not imported: "pipe"');
      expect(r.body.message).toContain("Imported 5 files (2 executable), 1 symlink and 2 empty directories");

      // Empty directories are directories to the tools (ls), as mkdir leaves them.
      const ls = await t.call("ls", { path: "a/b" });
      expect(ls.status, JSON.stringify(ls.body)).toBe(200);
      expect(ls.body.output).toContain("c/");

      expect(shape(await exported(t))).toEqual([
        "README.md file 644",
        "a/ directory 755",
        "a/b/ directory 755",
        "a/b/c/ directory 755",
        "bin/ directory 755",
        "bin/run.sh file 755",
        "bin/tool file 755",
        "empty/ directory 755",
        "hard file 644",
        "src/ directory 755",
        "src/main.c file 644",
        "link symlink 777",
      ]);
      // A directory's export: names relative to it, its subdirectories included.
      expect(shape(await exported(t, "?path=a"))).toEqual(["b/ directory 755", "b/c/ directory 755"]);
      expect(shape(await exported(t, "?path=empty"))).toEqual([]);
    });

    it("an import over an executable file makes it what the archive says; the export's ETag follows the bit", async () => {
      const t = await newTenant(app);
      expect((await importReq(t, tar([{ name: "s.sh", body: "echo\n", mode: 0o755 }]))).status).toBe(200);
      const first = await exportReq(t);
      const etag = first.headers.get("etag")!;
      expect(shape(await tarEntries(first))).toEqual(["s.sh file 755"]);
      // Same bytes, no execute bit: the file's etag is the same, the archive is not.
      const r = await importReq(t, tar([{ name: "s.sh", body: "echo\n", mode: 0o644 }]));
      expect(r.body).toMatchObject({ executable: 0 });
      const second = await exportReq(t, "", { "if-none-match": etag });
      expect(second.status).toBe(200);
      expect(shape(await tarEntries(second))).toEqual(["s.sh file 644"]);
    });

    it("reads the execute bit of a zip made on Unix", async () => {
      const t = await newTenant(app);
      const z = await zip([{ name: "x.sh", body: "#!/bin/sh\n", mode: 0o100755 }, { name: "d.txt", body: "d", mode: 0o100644 }, { name: "dir/", mode: 0o040755 }]);
      const r = await importReq(t, z);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ format: "zip", files: 2, executable: 1, empty_directories: 1 });
      expect(shape(await exported(t))).toEqual(["d.txt file 644", "dir/ directory 755", "x.sh file 755"]);
    });

    it("replace drops the explicit directories the archive does not hold; merge keeps them", async () => {
      const t = await newTenant(app);
      expect((await importReq(t, tar([{ name: "app/old/", type: "5" }, { name: "app/f.txt", body: "f" }, { name: "keep/", type: "5" }]))).status).toBe(200);
      expect((await importReq(t, tar([{ name: "new/", type: "5" }]), "?prefix=app")).body).toMatchObject({ empty_directories: 1 });
      expect(shape(await exported(t))).toEqual(["app/ directory 755", "app/f.txt file 644", "app/new/ directory 755", "app/old/ directory 755", "keep/ directory 755"]);
      const r = await importReq(t, tar([{ name: "g.txt", body: "g", mode: 0o755 }]), "?prefix=app&mode=replace");
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(shape(await exported(t))).toEqual(["app/ directory 755", "app/g.txt file 755", "keep/ directory 755"]);
    });

    it("a directory entry where the workspace has a file is skipped and named; the file stays", async () => {
      const t = await newTenant(app);
      await upload(t, "taken", "a file");
      const r = await importReq(t, tar([{ name: "taken/", type: "5" }, { name: "taken/below/", type: "5" }, { name: "ok/", type: "5" }]));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ empty_directories: 1, skipped_count: 1 });
      expect(r.body.skipped).toEqual([{ name: "taken/below/", reason: "taken is a file, so taken/below cannot be made below it" }]);
      expect(r.body.message).toContain("taken/below/");
      expect(shape(await exported(t))).toEqual(["ok/ directory 755", "taken file 644"]);
    });
  });
}

describe("execute bits of concurrent imports", () => {
  it("four imports at once: each lands with its execute bit or is refused whole (CONFLICT at the layer switch); again, every bit is kept, merged into one list", async () => {
    const t = await newTenant(WRITERS[0]!.app);
    const one = (i: number) => importReq(t, tar([{ name: `run${i}.sh`, body: `echo ${i}\n`, mode: 0o755 }, { name: `data${i}.txt`, body: `${i}\n` }]), `?prefix=p${i}`);
    const results = await Promise.all([0, 1, 2, 3].map(one));
    for (const r of results) expect([200, 409], JSON.stringify(r.body)).toContain(r.status);
    const landed = results.flatMap((r, i) => (r.status === 200 ? [`p${i}/run${i}.sh file 755`] : []));
    expect(shape(await exported(t)).filter((l) => l.includes(".sh"))).toEqual(landed);
    for (const [i, r] of results.entries()) if (r.status !== 200) expect((await one(i)).status).toBe(200);
    expect(shape(await exported(t)).filter((l) => l.includes(".sh"))).toEqual(["p0/run0.sh file 755", "p1/run1.sh file 755", "p2/run2.sh file 755", "p3/run3.sh file 755"]);
  });
});
