/**
 * The slots of one runner process (tree.ts): one idle slot per workspace reused by the next
 * call, concurrent calls on one workspace in slots of their own, at most `maxIdleSlots` idle
 * ones kept. Slots dropped (evicted, wiped after an error, another workspace's in exclusive
 * mode, an earlier process's) go to the trash (trash.ts), deleted off the call's path.
 */
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { ManifestView } from "../../lib/sync/view.js";
import { Trash } from "./trash.js";
import type { Owner, Slot } from "./tree.js";

const TRASH = ".trash";

export class TreeCache {
  private slots = new Map<string, Slot[]>();
  private init: Promise<void> | null = null;
  private seq = 0;
  /** Dropped slots are deleted off the call's path (trash.ts), in `<root>/.trash` (no slot has that name). */
  private trash: Trash;

  /**
   * exclusive: keep one workspace's trees at a time (a host-isolated sandbox, where a
   * command could read any tree on disk: acquiring another workspace's slot drops the rest).
   */
  constructor(readonly root: string, private readonly owner: Owner, private readonly maxIdleSlots = 8, private readonly exclusive = false) {
    this.trash = new Trash(join(root, TRASH));
  }

  /** Trees left by an earlier process are not trusted: start empty (their deletion runs in the background). */
  private ready(): Promise<void> {
    this.init ??= (async () => {
      await fs.mkdir(this.root, { recursive: true, mode: 0o711 });
      await fs.chmod(this.root, 0o711);
      await this.trash.open();
      for (const name of await fs.readdir(this.root)) if (name !== TRASH) await this.trash.discard(join(this.root, name));
    })();
    return this.init;
  }

  /**
   * A slot of this workspace, idle and warm if there is one. tenant and workspace come from the
   * verified invocation (handler.ts); `source` is the origin of the sync endpoint that fills the
   * slot: a slot is only ever reused with the endpoint that filled it, so no other server can
   * vouch ("unchanged") for a tree it never served.
   */
  async acquire(tenant: string, workspace: string, source: string): Promise<Slot> {
    await this.ready();
    const key = `${tenant}/${workspace}/${source}`;
    if (this.exclusive) for (const s of [...this.slots.values()].flat()) if (s.key !== key && !s.busy) await this.drop(s);
    const list = this.slots.get(key) ?? [];
    this.slots.set(key, list);
    const idle = list.filter((s) => !s.busy).sort((a, b) => b.lastUsed - a.lastUsed)[0];
    if (idle) {
      idle.busy = true;
      idle.cold = false;
      return idle;
    }
    // A random name: no tenant or workspace id on disk (the key lives in memory only).
    const dir = join(this.root, `${(++this.seq).toString(36)}-${randomBytes(6).toString("hex")}`);
    await fs.mkdir(dir, { mode: 0o711 });
    await fs.chmod(dir, 0o711);
    const tree = join(dir, "tree");
    await fs.mkdir(tree, { mode: 0o755 });
    await fs.mkdir(join(dir, "incoming"), { mode: 0o700 }); // download.ts makes top-level directories here, then moves them
    if (this.owner) await fs.chown(tree, this.owner.uid, this.owner.gid);
    // Not spread yet (spread-dirs.ts): the first download that makes a directory flags both, off an empty workspace's path.
    const slot: Slot = { key, dir, tree, files: new Map(), dirs: new Map(), listings: new Map(), links: new Map(), view: new ManifestView(), synced: null, modes: null, spread: false, cold: true, busy: true, lastUsed: Date.now() };
    list.push(slot);
    return slot;
  }

  /** clean=false (an error left the tree in an unknown state): the slot is wiped. */
  async release(slot: Slot, clean: boolean): Promise<void> {
    slot.busy = false;
    slot.lastUsed = Date.now();
    if (!clean) await this.drop(slot);
    const idle = [...this.slots.values()].flat().filter((s) => !s.busy).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const s of idle.slice(0, Math.max(0, idle.length - this.maxIdleSlots))) await this.drop(s);
  }

  private async drop(slot: Slot): Promise<void> {
    const list = this.slots.get(slot.key) ?? [];
    list.splice(list.indexOf(slot), 1);
    if (list.length === 0) this.slots.delete(slot.key);
    await this.trash.discard(slot.dir);
  }

  /**
   * Resolves when the command of a run may start: in exclusive mode once every dropped tree is
   * deleted (the command could read it), otherwise at once (the sandbox shows the command its
   * own tree only; the trash empties in the background).
   */
  async beforeCommand(): Promise<void> {
    if (this.exclusive) await this.trash.clear(); // a tree it cannot delete stops the run
  }

  /** Resolves once every dropped tree is deleted (shutdown, tests). */
  emptied(): Promise<void> {
    return this.trash.emptied();
  }

  /** Wipes every slot of a tenant (tests, and an admin "forget this tenant"). */
  async forgetTenant(tenant: string): Promise<void> {
    for (const s of [...this.slots.values()].flat()) if (s.key.startsWith(`${tenant}/`) && !s.busy) await this.drop(s);
  }
}
