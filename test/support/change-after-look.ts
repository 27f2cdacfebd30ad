/**
 * Storage that lets another writer change a file right after a call has looked at it: once
 * `arm(path, on)` is called, the next GET (or HEAD, or listing that holds it) of that workspace path
 * answers the version it found, then the intruder's bytes land, before the call goes on. Whatever the call checks after
 * that look (a HEAD of its own, its undo journal's before-image), only a write conditional on the
 * version it looked at can refuse: the deterministic form of "a concurrent writer landed between
 * the check and the write" (DESIGN invariants 2 and 9).
 */
import type { StorageDriver } from "../../lib/storage/types.js";

/** The workspace path of a file key (t/<tenant>/w/<ws>/f/<path>), or null for any other key. */
type Look = "get" | "head" | "list";

const pathOfFileKey = (key: string): string | null => /^t\/[^/]+\/w\/[^/]+\/f\/(.+)$/.exec(key)?.[1] ?? null;

export function changeAfterLook(base: StorageDriver, intruder: string): { storage: StorageDriver; arm: (path: string, on?: Look) => void } {
  const armed = new Map<string, Look>();
  const fires = (key: string, on: Look): boolean => {
    const path = pathOfFileKey(key);
    if (path === null || armed.get(path) !== on) return false;
    armed.delete(path);
    return true;
  };
  const storage: StorageDriver = {
    ...base,
    head: async (key) => {
      const found = await base.head(key);
      if (found && fires(key, "head")) await base.put(key, intruder);
      return found;
    },
    list: async (opts) => {
      const found = await base.list(opts);
      for (const o of found.objects) if (fires(o.key, "list")) await base.put(o.key, intruder);
      return found;
    },
    get: async (key, opts) => {
      const found = await base.get(key, opts);
      if (!found || !fires(key, "get")) return found;
      const bytes = new Uint8Array(await new Response(found.body).arrayBuffer());
      await base.put(key, intruder);
      return { ...found, body: new Response(bytes).body! };
    },
  };
  return { storage, arm: (path, on = "get") => void armed.set(path, on) };
}
