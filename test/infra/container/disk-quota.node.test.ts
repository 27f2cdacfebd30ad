/**
 * The disk sampler walks a tree while the command's processes run (disk-quota.ts treeUsage). A
 * process that swaps a directory for a symlink to a host directory must not steer the walk there:
 * it would read the sizes of files the sandbox cannot see (another slot's tree) and answer them
 * through the quota's kill.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { treeUsage } from "../../../infra/container/disk-quota.js";

const root = mkdtempSync(join(tmpdir(), "disk-quota-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("treeUsage", () => {
  it("counts regular files only, through nested directories; links and a missing tree count 0", async () => {
    const t = join(root, "plain");
    mkdirSync(join(t, "a/b/c"), { recursive: true });
    writeFileSync(join(t, "top.txt"), "12345");
    writeFileSync(join(t, "a/b/c/deep.bin"), Buffer.alloc(70_000));
    symlinkSync("/etc", join(t, "etc-link"));
    symlinkSync("top.txt", join(t, "a/file-link"));
    expect((await treeUsage(t)).bytes).toBe(70_005);
    expect((await treeUsage(join(root, "nothing-here"))).bytes).toBe(0);
  });

  it("a directory swapped for a symlink to a host directory while the walk runs is never walked into", async () => {
    const t = join(root, "swapped");
    const host = join(root, "host");
    mkdirSync(join(t, "a"), { recursive: true });
    mkdirSync(host);
    // The host directory holds a 1 TiB (sparse) file: one sample that counts it is plain to see.
    writeFileSync(join(host, "big"), "");
    truncateSync(join(host, "big"), 2 ** 40);
    writeFileSync(join(t, "a/own.txt"), "own");
    // Many siblings: the walk lists `a` and lstats these before it goes into `a`, a window the swapper hits.
    for (let i = 0; i < 2000; i++) writeFileSync(join(t, `f${i}`), "x");
    const swapper = spawn(process.execPath, [
      "-e",
      `const fs = require("fs"); const t = ${JSON.stringify(t)}, host = ${JSON.stringify(host)};
       const hold = (ms) => { const end = Date.now() + ms; while (Date.now() < end); };
       for (;;) { try { fs.renameSync(t + "/a", t + "/a.real"); fs.symlinkSync(host, t + "/a"); hold(2); fs.unlinkSync(t + "/a"); fs.renameSync(t + "/a.real", t + "/a"); hold(2); } catch {} }`,
    ], { stdio: "ignore" });
    try {
      const samples: number[] = [];
      for (let i = 0; i < 60; i++) samples.push((await treeUsage(t)).bytes);
      // Own bytes: 2,000 one-byte files and `own.txt` (3) when the walk met `a` in place (or 0 for it, swapped).
      for (const s of samples) expect(s).toBeLessThanOrEqual(2003);
      expect(samples.some((s) => s >= 2000)).toBe(true);
    } finally {
      swapper.kill("SIGKILL");
    }
  });
});
