/**
 * A listing of the merged view: the upper layer's objects (a flat storage listing) over the
 * manifest's entries, in storage order, with whiteouts hiding what they cover (themselves too).
 * With a delimiter, a directory is listed only if something visible lies below it (a directory
 * whose every file is whited out is gone, as in the plain layout).
 * Cursors are "m:" + the last key (or rolled-up prefix) handed out; `startAfter` works too.
 */
import type { KeyWalk, ListOptions, ListResult, ObjectInfo, StorageDriver } from "../storage/types.js";
import { AFTER_ALL, compareKeys } from "../layout/key-order.js";
import type { Manifest, ManifestEntry } from "./manifest.js";
import type { Whiteouts } from "./whiteout.js";

const CURSOR = "m:";

class UpperStream {
  private buf: ObjectInfo[] = [];
  private i = 0;
  private cursor: string | undefined;
  private done = false;
  private started = false;
  /** List requests made. */
  pages = 0;
  /** Nothing was consumed or skipped yet (version() names the whole stream only then). */
  untouched = true;
  /** `pageSize`: keys a listing asks for (a page runs out: the next is listed). */
  constructor(private readonly inner: StorageDriver, private readonly whiteouts: Whiteouts, private readonly prefix: string, private after: string | null, private readonly pageSize = 1000) {}

  async peek(): Promise<ObjectInfo | null> {
    while (this.i >= this.buf.length && !(this.started && this.done)) await this.fill();
    return this.buf[this.i] ?? null;
  }
  next(): void {
    this.i++;
    this.untouched = false;
  }
  /** Every object of the stream, when its first listing held them all (one page); null otherwise. */
  async whole(): Promise<readonly ObjectInfo[] | null> {
    await this.peek();
    return this.untouched && this.pages === 1 && this.done ? this.buf : null;
  }
  private async fill(): Promise<void> {
    this.started = true;
    this.pages++;
    const r = await this.whiteouts.list(this.inner, { prefix: this.prefix, limit: this.pageSize, ...(this.cursor ? { cursor: this.cursor } : this.after !== null ? { startAfter: this.after } : {}) });
    this.buf = r.objects;
    this.i = 0;
    this.cursor = r.cursor;
    this.done = !r.cursor;
  }
  /** Drops every key below `p`, re-listing after it when the page runs out. */
  async skipPrefix(p: string): Promise<void> {
    this.untouched = false;
    while (this.i < this.buf.length && this.buf[this.i]!.key.startsWith(p)) this.i++;
    if (this.i >= this.buf.length && !this.done) {
      this.cursor = undefined;
      this.after = p + AFTER_ALL;
      this.started = false;
      this.buf = [];
      this.i = 0;
    }
  }
}

export function lowerInfo(filesPrefix: string, e: ManifestEntry): ObjectInfo {
  return { key: filesPrefix + e.path, size: e.size, etag: e.etag, modified: new Date(e.modified) };
}

export async function mergedList(inner: StorageDriver, m: Manifest, filesPrefix: string, opts: ListOptions, whiteouts: Whiteouts): Promise<ListResult> {
  const limit = Math.min(opts.limit ?? 1000, 1000);
  const { prefix, delimiter } = opts;
  let after: string | null = opts.cursor?.startsWith(CURSOR) ? opts.cursor.slice(CURSOR.length) : (opts.startAfter ?? null);
  if (after !== null && compareKeys(after, prefix) < 0) after = null;
  const relPrefix = prefix.slice(filesPrefix.length);
  let li = after === null ? m.bound(relPrefix) : Math.max(m.bound(relPrefix), m.bound(after.slice(filesPrefix.length), true));
  const lower = (): ManifestEntry | null => {
    const e = m.entries[li];
    return e && e.path.startsWith(relPrefix) ? e : null;
  };
  // A flat listing asks the upper layer for one key more than it returns (the one that says whether a cursor follows;
  // a whiteout among them pages on): "is anything below this prefix?" (limit 1: isDirectory, the place check of every
  // write) lists 2 keys, not a page of 1,000. A delimited one keeps whole pages: a directory's keys are skipped inside
  // the page, not listed again after it.
  const up = new UpperStream(inner, whiteouts, prefix, after, delimiter ? 1000 : Math.min(1000, limit + 1));
  const objects: ObjectInfo[] = [];
  const prefixes: string[] = [];
  let last: string | null = null;

  /** The next key of the merged stream and whether it is visible; consumes it. */
  const take = async (): Promise<{ key: string; info: ObjectInfo | null } | null> => {
    const u = await up.peek();
    const l = lower();
    if (!u && !l) return null;
    const lk = l ? filesPrefix + l.path : null;
    if (u && (lk === null || compareKeys(u.key, lk) <= 0)) {
      up.next();
      if (lk === u.key) li++;
      return { key: u.key, info: whiteouts.is(u) ? null : u };
    }
    li++;
    return { key: lk!, info: lowerInfo(filesPrefix, l!) };
  };
  const peekKey = async (): Promise<string | null> => {
    const u = await up.peek();
    const l = lower();
    const lk = l ? filesPrefix + l.path : null;
    if (!u) return lk;
    if (lk === null) return u.key;
    return compareKeys(u.key, lk) <= 0 ? u.key : lk;
  };

  while (objects.length + prefixes.length < limit) {
    const k = await peekKey();
    if (k === null) return { objects, prefixes };
    const d = delimiter ? k.indexOf(delimiter, prefix.length) : -1;
    if (d >= 0) {
      const p = k.slice(0, d + delimiter!.length);
      let visible = false;
      for (let next = await peekKey(); next !== null && next.startsWith(p); next = await peekKey()) {
        if ((await take())!.info) {
          visible = true;
          break;
        }
      }
      await up.skipPrefix(p);
      li = Math.max(li, m.bound(p.slice(filesPrefix.length) + AFTER_ALL));
      last = p + AFTER_ALL;
      if (visible) prefixes.push(p);
      continue;
    }
    const t = (await take())!;
    last = t.key;
    if (t.info) objects.push(t.info);
  }
  return (await peekKey()) !== null && last !== null ? { objects, prefixes, cursor: CURSOR + last } : { objects, prefixes };
}

/**
 * The merged view below `prefix` as a walk (storage order, whiteouts hiding what they cover and
 * themselves): the manifest's entries from memory, the upper layer from its own listing (one
 * request while it is small, as after an import or a seal). Every file a search sees costs no
 * request of its own, whatever the lower layer holds; a jump past a skipped directory is a
 * binary search in the manifest (and a fresh listing only where the upper layer has that many keys).
 */
export function mergedWalk(inner: StorageDriver, m: Manifest, filesPrefix: string, prefix: string, whiteouts: Whiteouts): KeyWalk {
  const relPrefix = prefix.slice(filesPrefix.length);
  let li = m.bound(relPrefix);
  const up = new UpperStream(inner, whiteouts, prefix, null);
  return {
    get lists() {
      return up.pages;
    },
    async next() {
      for (;;) {
        const u = await up.peek();
        const l = m.entries[li];
        const lower = l && l.path.startsWith(relPrefix) ? l : null;
        if (!u && !lower) return null;
        const lk = lower ? filesPrefix + lower.path : null;
        if (u && (lk === null || compareKeys(u.key, lk) <= 0)) {
          up.next();
          if (lk === u.key) li++;
          if (whiteouts.is(u)) continue;
          return u;
        }
        li++;
        return lowerInfo(filesPrefix, lower!);
      }
    },
    async known() {
      // The manifest's entries before the upper layer's next key (that one, and a lower entry it hides, are next's).
      const u = await up.peek();
      const end = u ? m.bound(u.key.slice(filesPrefix.length)) : m.entries.length;
      let stop = li;
      while (stop < end && m.entries[stop]!.path.startsWith(relPrefix)) stop++;
      const run = m.entries.slice(li, stop);
      li = stop;
      return run;
    },
    async skipPast(p) {
      await up.skipPrefix(p);
      li = Math.max(li, m.bound(p.slice(filesPrefix.length) + AFTER_ALL));
    },
    async version() {
      // The manifest is immutable under its id; the upper layer is what its one listing page shows.
      if (li !== m.bound(relPrefix)) return null;
      const upper = await up.whole();
      if (upper === null) return null;
      let v = `${m.id}\n${prefix}`;
      for (const o of upper) v += `\n${o.key}\t${o.etag}\t${o.size}\t${o.modified.getTime()}\t${whiteouts.is(o) ? 1 : 0}`;
      return v;
    },
  };
}

/**
 * The whole merged view from one listing of the upper layer already in hand (storage order,
 * whiteouts included, resolved: Whiteouts.resolve): the rule of mergedList (upper over lower, whiteouts hide what they cover
 * and themselves), flat and without paging. Lower entries are returned as the manifest holds
 * them (no copy). The conditional manifest uses it to answer from the same upper listing it
 * names (lib/sync/manifest.ts).
 */
export function mergeAll(upper: readonly ObjectInfo[], m: Manifest, filesPrefix: string, whiteouts: Whiteouts): { path: string; etag: string; size: number }[] {
  const out: { path: string; etag: string; size: number }[] = [];
  const lower = m.entries;
  let li = 0;
  for (const u of upper) {
    const path = u.key.slice(filesPrefix.length);
    while (li < lower.length && compareKeys(lower[li]!.path, path) < 0) out.push(lower[li++]!);
    if (li < lower.length && lower[li]!.path === path) li++;
    if (!whiteouts.is(u)) out.push({ path, etag: u.etag, size: u.size });
  }
  while (li < lower.length) out.push(lower[li++]!);
  return out;
}
