/**
 * A run's tree under a name that says nothing. The kernel shows, in /proc/self/mountinfo, the
 * path of a bind mount's source inside its file system (field 4), whatever path it was bound
 * through: binding `<root>/slots/<tenant>/<ws>/tree` at /workspace would show the runner's
 * cache and the ids to the command. So for the run the tree is renamed (same file system, one
 * system call) to `<stage dir>/<random>`, and renamed back after it; the command sees only
 * that path. Slots themselves carry no ids either (tree.ts names them at random).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, promises as fs, rmSync } from "node:fs";

/** Creates the staging directory empty (trees left by an earlier process are not trusted). */
export function prepareStageDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o711 }); // traversable by the sandbox user, not listable
}

export interface StagedTree {
  /** Where the tree is during the run: bind or link this, sample this. */
  path: string;
  /** Puts the tree back where it was (once; later calls do nothing). */
  restore(): Promise<void>;
}

export async function stageTree(tree: string, stageDir: string): Promise<StagedTree> {
  const path = `${stageDir}/${randomBytes(9).toString("base64url")}`;
  await fs.rename(tree, path);
  return staged(tree, path);
}

/**
 * A fresh slot's run in a spare sandbox's tree (sandbox-spare.ts): already in the staging directory
 * and bound, empty like the slot's own tree, which gives way to it (it was just made, empty); after
 * the run it goes where the slot's tree was.
 */
export async function adoptTree(tree: string, spareTree: string): Promise<StagedTree> {
  await fs.rmdir(tree);
  return staged(tree, spareTree);
}

function staged(tree: string, path: string): StagedTree {
  let done = false;
  return {
    path,
    async restore() {
      if (done) return;
      done = true;
      try {
        await fs.rename(path, tree);
      } catch (e) {
        await fs.rm(path, { recursive: true, force: true }); // never leave a tree behind under a name no slot knows
        throw e;
      }
    },
  };
}
