/**
 * The runner's directory maker (infra/container/tree.ts mkdirs: explicit directories, the parents of
 * links and of downloaded files, the top-level ones of a download placed through its staging
 * directory, download.ts) never follows a symlink
 * found on the way: a link where a directory is needed, even one to a real directory outside the
 * tree, is ENOTDIR and nothing is made through it. Reconcile skips files below a link it knows
 * (reconcile.ts); this is the check under it, for a link it does not know (a command's, a race).
 */
import { existsSync, mkdirSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { mkdirs } from "../../../infra/container/tree.js";
import { tempDirs } from "../../support/temp-dirs.js";

const temp = tempDirs("mkdirs-links");

/** A tree whose `link` (and `a/link`) point at a directory outside it. */
function treeWithLinks(): { tree: string; outside: string } {
  const tree = temp("tree");
  const outside = temp("outside");
  symlinkSync(outside, join(tree, "link"));
  mkdirSync(join(tree, "a"));
  symlinkSync(outside, join(tree, "a", "link"));
  return { tree, outside };
}

const makers: [string, (tree: string, rel: string) => Promise<void>][] = [
  ["mkdirs", async (tree, rel) => mkdirs(tree, rel, null, new Set())],
  ["mkdirs through a staging directory", async (tree, rel) => mkdirs(tree, rel, null, new Set(), temp("staging"))],
];

describe("directory makers and symlinks", () => {
  for (const [name, make] of makers) {
    it(`${name}: a link on the path (top level or deeper) is ENOTDIR; nothing is made outside the tree`, async () => {
      const { tree, outside } = treeWithLinks();
      for (const rel of ["link/sub", "link", "a/link/sub/deeper"]) {
        await expect(make(tree, rel), rel).rejects.toMatchObject({ code: "ENOTDIR" });
      }
      expect(readdirSync(outside)).toEqual([]);
    });

    it(`${name}: control: real directories are made, and ones already there are fine`, async () => {
      const { tree } = treeWithLinks();
      await make(tree, "a/b/c");
      await make(tree, "a/b");
      expect(existsSync(join(tree, "a/b/c"))).toBe(true);
    });
  }
});
