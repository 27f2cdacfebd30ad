/**
 * The stat workers (infra/container/stat-pool.ts): side by side they answer exactly what one
 * lstat per path in this thread answers, in order, errors included; a pool whose workers are
 * gone still answers; and an idle pool never keeps the process alive.
 */
import { execFileSync } from "node:child_process";
import { lstatSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { MIN_PARALLEL, statPool, type Stats } from "../../../infra/container/stat-pool.js";
import { fingerprint } from "../../../infra/container/file-marks.js";
import { tempDirs } from "../../support/temp-dirs.js";

const tmp = tempDirs("stat-pool");

/** What one lstat per path says, in the pool's terms. */
function expected(paths: string[]) {
  return paths.map((p) => {
    try {
      const st = lstatSync(p, { bigint: true });
      return { mode: Number(st.mode), size: Number(st.size), fp: fingerprint(st) };
    } catch (e) {
      return (e as NodeJS.ErrnoException).code;
    }
  });
}
const flat = (parts: Stats[]) => parts.flatMap((b) => b.fp.map((fp, i) => b.err[i] ?? { mode: b.mode[i], size: b.size[i], fp }));

/** A tree of every kind, and paths to it that fail: gone, and through a file. */
function fixture(): string[] {
  const t = tmp();
  mkdirSync(join(t, "d"));
  const paths = [t, join(t, "d"), join(t, "missing"), join(t, "f0/under")];
  for (let i = 0; i < 3 * MIN_PARALLEL; i++) {
    writeFileSync(join(t, `f${i}`), "x".repeat(i % 7));
    paths.push(join(t, `f${i}`));
  }
  symlinkSync("/etc/passwd", join(t, "link"));
  execFileSync("mkfifo", [join(t, "fifo")]);
  paths.push(join(t, "link"), join(t, "fifo"), join(t, "d"));
  return paths;
}

describe("stat workers", () => {
  it("answer what lstat in this thread answers, in order, errors and every kind included", async () => {
    const paths = fixture();
    const pool = statPool(2);
    try {
      const got = flat([await pool.stat(paths)]);
      expect(got).toEqual(expected(paths));
      expect(got[2]).toBe("ENOENT");
      expect(got[3]).toBe("ENOTDIR");
      expect(flat(await pool.spread(paths))).toEqual(expected(paths)); // parts on both workers and this thread, in order
      expect(flat(await statPool(0).spread(paths))).toEqual(expected(paths)); // no workers: all in this thread
    } finally {
      await pool.close();
    }
  });

  it("a pool whose workers stopped, even with a batch under way, answers in this thread", async () => {
    const paths = fixture();
    const pool = statPool(1);
    const underWay = pool.stat(paths);
    await pool.close();
    expect(flat([await underWay])).toEqual(expected(paths));
    expect(flat([await pool.stat(paths)])).toEqual(expected(paths));
  });

  it("an idle pool never keeps the process alive; a batch under way does until it is answered", async () => {
    const dir = tmp();
    const script = join(dir, "use-pool.ts");
    writeFileSync(
      script,
      `import { statPaths } from ${JSON.stringify(join(process.cwd(), "infra/container/stat-pool.ts"))};
       const paths = Array.from({ length: 2000 }, () => ${JSON.stringify(dir)});
       const s = await statPaths(paths);
       console.log(s.fp.length, Object.keys(s.err).length);`,
    );
    const out = join(dir, "use-pool.mjs");
    await build({ entryPoints: [script], bundle: true, platform: "node", format: "esm", outfile: out, logLevel: "silent" });
    // Ends on its own (no timeout kill) with the whole answer: the batch kept it alive, the idle worker did not.
    expect(execFileSync(process.execPath, [out], { timeout: 20_000, encoding: "utf8" }).trim()).toBe("2000 0");
  });
});
