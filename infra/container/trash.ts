/**
 * Trees the runner no longer wants (an evicted or wiped slot, an earlier process's cache), off
 * the call's path: each is renamed into the trash directory (one system call, same file system)
 * and deleted in the background. Deleting 10,000 files takes seconds, and on ext4 it slows the
 * creates that follow (the allocator skips recently freed inodes one by one), so it must not sit
 * between a command and its answer. Where a command could read any tree on disk (TreeCache's
 * exclusive mode), the runner waits for `clear()` before the command starts.
 */
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { join } from "node:path";

export class Trash {
  private pending = new Set<Promise<void>>();

  /** `dir`: on the same file system as what is discarded; private to the runner. */
  constructor(readonly dir: string) {}

  /** Makes the directory, and deletes (in the background) what an earlier process left in it. */
  async open(): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await fs.chmod(this.dir, 0o700);
    for (const name of await fs.readdir(this.dir)) this.remove(join(this.dir, name));
  }

  /** Takes `path` out of use at once and deletes it in the background. */
  async discard(path: string): Promise<void> {
    const aside = join(this.dir, randomBytes(8).toString("hex"));
    try {
      await fs.rename(path, aside);
    } catch {
      // Nothing there, or the trash is gone (something wiped it): delete in place, now. Never leave it.
      await fs.rm(path, { recursive: true, force: true });
      return;
    }
    this.remove(aside);
  }

  /** Resolves once every background delete started so far has ended (a failed one leaves its tree in the trash). */
  async emptied(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  /** Waits for the background deletes, then deletes what they left, now; throws if that fails. */
  async clear(): Promise<void> {
    await this.emptied();
    for (const name of await fs.readdir(this.dir)) await fs.rm(join(this.dir, name), { recursive: true, force: true });
  }

  private remove(path: string): void {
    const p: Promise<void> = fs
      .rm(path, { recursive: true, force: true })
      .catch(() => {}) // what is left stays in the trash, out of use; the next process's open() deletes it
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }
}
