/**
 * Sealing: the upper layer (the per-file objects, whiteouts included) packed into a new manifest
 * = base ⊕ upper. Only upper objects are read (O(changed files)); unchanged content stays in the
 * packs it is in. The sealed objects are returned with the version sealed, so the caller deletes
 * each only in that version once the workspace points at the new manifest (a newer write stays).
 */
import { filesPrefix, manifestKey, packKey } from "../layout/paths.js";
import { isConditionFailed, type ObjectInfo, type StorageDriver } from "../storage/types.js";
import { listAll } from "../storage/list-all.js";
import { compareKeys } from "../layout/key-order.js";
import { Manifest, writeManifest, type ManifestEntry } from "./manifest.js";
import type { LayerDeps } from "./open.js";
import { newLayerId, PackWriter } from "./pack-writer.js";
import { Whiteouts } from "./whiteout.js";

/** Upper objects read at once while sealing, and the listed bytes they may hold; files up to WHOLE are read whole. */
const READS = 32;
const READ_BYTES = 16 * 1024 * 1024;
const WHOLE = 4 * 1024 * 1024;

/** Every raw object of the upper layer (one flat listing per 1,000). */
export async function listUpper(storage: StorageDriver, tenant: string, ws: string, under = ""): Promise<ObjectInfo[]> {
  return (await listAll(storage, filesPrefix(tenant, ws) + under)).objects;
}

/**
 * base ⊕ changes (sorted by path; null removes the path), keeping only the packs still used.
 * `extraPacks` are the packs the changes' entries index (after base.packs).
 */
export function mergeManifest(base: Manifest, extraPacks: readonly string[], changes: { path: string; entry: ManifestEntry | null }[], dropUnder?: string): Manifest {
  const packs = [...base.packs, ...extraPacks];
  const out: ManifestEntry[] = [];
  let i = 0;
  const keepBase = (e: ManifestEntry) => dropUnder === undefined || !(dropUnder === "" || e.path.startsWith(`${dropUnder}/`) || e.path === dropUnder);
  for (const c of changes) {
    while (i < base.entries.length && compareKeys(base.entries[i]!.path, c.path) < 0) {
      if (keepBase(base.entries[i]!)) out.push(base.entries[i]!);
      i++;
    }
    if (i < base.entries.length && base.entries[i]!.path === c.path) i++;
    if (c.entry) out.push({ ...c.entry, pack: c.entry.pack < 0 ? -1 : c.entry.pack + base.packs.length });
  }
  for (; i < base.entries.length; i++) if (keepBase(base.entries[i]!)) out.push(base.entries[i]!);
  // Only the packs some entry still uses, renumbered.
  const used = new Map<number, number>();
  const kept: string[] = [];
  const entries = out.map((e) => {
    if (e.pack < 0) return e;
    let n = used.get(e.pack);
    if (n === undefined) {
      n = kept.push(packs[e.pack]!) - 1;
      used.set(e.pack, n);
    }
    return n === e.pack ? e : { ...e, pack: n };
  });
  return new Manifest(newLayerId(), kept, entries);
}

export interface Sealed {
  manifest: Manifest;
  /** The upper objects folded into it, each with the version folded (delete only that). */
  sealed: { key: string; etag: string }[];
  /** The base it was built on (its entries tell a sealed object deleted by a writer from one another sealer removed: settleSealed). */
  base: Manifest;
  /** The packs this seal wrote (fresh ids: nothing else references them until the pointer is switched). */
  packs: string[];
}

/** Windows of the upper listing read at once: at most READS objects, READ_BYTES listed bytes (at least one object). */
function windows(upper: readonly ObjectInfo[]): ObjectInfo[][] {
  const out: ObjectInfo[][] = [];
  let cur: ObjectInfo[] = [];
  let bytes = 0;
  for (const o of upper) {
    const b = o.size > WHOLE ? 0 : o.size;
    if (cur.length && (cur.length >= READS || bytes + b > READ_BYTES)) (out.push(cur), (cur = []), (bytes = 0));
    cur.push(o);
    bytes += b;
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * Packs the upper layer over the lower layer `meta` points at into a new manifest (written); the
 * same manifest when nothing is upper. `listed`: the upper layer as the caller just listed it,
 * resolved (Whiteouts.resolve; else listed here).
 */
export async function seal(deps: LayerDeps, tenant: string, ws: string, meta: { base?: string | null; whiteout?: string }, listed?: readonly ObjectInfo[]): Promise<Sealed> {
  const baseId = meta.base;
  const whiteouts = Whiteouts.of(deps.storage, meta);
  const isWhiteout = (o: ObjectInfo) => whiteouts.is(o);
  const base = baseId ? await deps.manifests.load(deps.storage, tenant, baseId) : Manifest.empty();
  const upper = [...(listed ?? (await whiteouts.resolve(deps.storage, await listUpper(deps.storage, tenant, ws))))].sort((a, b) => compareKeys(a.key, b.key));
  if (upper.length === 0 && baseId) return { manifest: base, sealed: [], base, packs: [] };
  const fp = filesPrefix(tenant, ws);
  const writer = new PackWriter(deps.storage, tenant);
  const changes: { path: string; entry: ManifestEntry | null }[] = [];
  const sealed: { key: string; etag: string }[] = [];
  for (const win of windows(upper)) {
    const got = await Promise.all(win.map(async (o) => {
      if (isWhiteout(o) || o.key.endsWith("/")) return { o, bytes: new Uint8Array(0) };
      // The isolate wrote or read this very version (same etag: the same bytes): no GET.
      const held = deps.versions?.peek(o.key);
      if (held && held.info.etag === o.etag && held.bytes.length === o.size) return { o, bytes: held.bytes };
      if (o.size > WHOLE) return { o, stream: true as const };
      const r = await deps.storage.get(o.key);
      if (!r) return null; // deleted meanwhile (an upper-only file): nothing to seal
      return { o: { ...o, etag: r.etag, size: r.size, modified: r.modified }, bytes: new Uint8Array(await new Response(r.body).arrayBuffer()) };
    }));
    for (const g of got) {
      if (!g) continue;
      const path = g.o.key.slice(fp.length);
      if (isWhiteout(g.o)) {
        changes.push({ path, entry: null });
      } else if ("stream" in g) {
        const r = await deps.storage.get(g.o.key);
        if (!r) continue;
        changes.push({ path, entry: await writer.addStream(path, r.body, r.size, { etag: r.etag, modified: r.modified.getTime() }) });
        g.o = { ...g.o, etag: r.etag };
      } else {
        changes.push({ path, entry: await writer.add(path, g.bytes!, { etag: g.o.etag, modified: g.o.modified.getTime() }) });
      }
      sealed.push({ key: g.o.key, etag: g.o.etag });
    }
  }
  try {
    await writer.finish();
  } catch (e) {
    await writer.settle();
    await dropPacks(deps.storage, tenant, writer.packs);
    throw e;
  }
  const manifest = mergeManifest(base, writer.packs, changes);
  try {
    await writeManifest(deps.storage, deps.manifests, tenant, manifest);
  } catch (e) {
    await dropPacks(deps.storage, tenant, writer.packs);
    throw e;
  }
  return { manifest, sealed, base, packs: [...writer.packs] };
}

const dropPacks = (storage: StorageDriver, tenant: string, packs: readonly string[]) =>
  packs.length ? storage.delete(packs.map((id) => packKey(tenant, id))).catch(() => {}) : Promise.resolve();

/**
 * Deletes what a seal wrote whose pointer switch was refused (a concurrent seal, checkpoint,
 * import, restore or packed write-back won): its manifest and its packs, fresh ids nothing else
 * references, so storage is as it was (best effort: what stays is GC's, as after a failed import).
 */
export async function dropSeal(storage: StorageDriver, tenant: string, s: Sealed): Promise<void> {
  if (s.manifest.id === s.base.id) return;
  await storage.delete([manifestKey(tenant, s.manifest.id)]).catch(() => {});
  await dropPacks(storage, tenant, s.packs);
}

/**
 * After the pointer points at the sealed manifest: each sealed upper object deleted only in the
 * version sealed (a newer write stays, over the new base). One that is gone already was deleted by
 * a writer after the seal read it: when the old base lacked its path, that delete removed the file
 * (no whiteout was needed then), and the new base would show it again, so a whiteout is put there
 * (create-only: a writer that re-created the file meanwhile wins), with the mark of `whiteouts`
 * (the record as switched: switchBase gives it one). Returns the keys kept.
 */
export async function settleSealed(storage: StorageDriver, tenant: string, ws: string, s: Sealed, whiteouts: Whiteouts): Promise<string[]> {
  const refused = await removeUpper(storage, s.sealed);
  const fp = filesPrefix(tenant, ws);
  const gone = refused.filter((k) => !k.endsWith("/") && !s.base.find(k.slice(fp.length)) && s.manifest.find(k.slice(fp.length)));
  await Promise.all(gone.map(async (key) => {
    if (await storage.head(key)) return;
    await whiteouts.put(storage, key, { ifNoneMatch: "*" }).catch((e: unknown) => {
      if (!isConditionFailed(e)) throw e;
    });
  }));
  return refused;
}

/** Deletes sealed (or restored-over) upper objects, each only in the version given; returns the keys refused (changed since). */
export async function removeUpper(storage: StorageDriver, items: readonly { key: string; etag: string }[]): Promise<string[]> {
  const refused: string[] = [];
  for (let i = 0; i < items.length; i += 1000) {
    try {
      await storage.delete(items.slice(i, i + 1000).map((x) => ({ key: x.key, ifMatch: x.etag })));
    } catch (e) {
      if (!(e instanceof Error && "keys" in e)) throw e;
      refused.push(...(e as Error & { keys: string[] }).keys);
    }
  }
  return refused;
}
