/**
 * Undo of one call (POST /v1/workspaces/{ws}/undo): its record(s) merged per path, a create-only
 * claim (`undone`: a second undo is CONFLICT), a check that every file is still at the version the
 * call left (else FILE_MODIFIED naming them, claim released, nothing written), then each file put
 * back conditionally: old bytes If-Match the etag after, a created file deleted If-Match, a deleted
 * file re-created create-only. Writes go through a Workspace, so the search index follows.
 * The call's link changes (docs/symlinks.md) are checked with the files (each link still the
 * target the call left, else it is named beside the files) and put back first, in one delta applied
 * only while every one of them is still what the call left (lib/layout/modes.ts expectLinks); its
 * execute-bit changes likewise (each bit still what the call left, else named; put back in that same
 * delta, expectExec); its explicit directories too (each marker still the version the call left,
 * else named; a marker it made removed If-Match, one it removed made again create-only, after the files).
 * The storage quotas are checked for the whole undo before its first write (undo-room.ts: QUOTA_EXCEEDED, nothing written).
 * Window: a writer landing on a file between the check and its restore (milliseconds) makes that
 * restore refuse; files restored before stay restored, the rest are not touched, and the answer
 * (CONFLICT) lists both; the claim is kept (the call counts as undone in part).
 */
import { isToolError, ToolError } from "../../shared/errors.js";
import { readModes, updateModes } from "../../layout/modes.js";
import { dirMarkerKey, packKey, sessionUndoPrefix } from "../../layout/paths.js";
import { isConditionFailed, type StorageDriver } from "../../storage/types.js";
import { counted, decodeBase64 } from "../../shared/text.js";
import type { Workspace } from "../../workspace/workspace.js";
import { callIdOf, parseCallId, recordedDirs, recordedLinks, recordedModes, stampTime, type UndoChange, type UndoDirChange, type UndoLinkChange, type UndoModeChange, type UndoRecord } from "../../workspace/undo-record.js";
import { RETENTION_TEXT } from "../../workspace/undo-retention.js";
import { checkUndoRoom, undoPeak } from "./undo-room.js";

export interface UndoCall {
  call_id: string;
  tool: string;
  session: string;
  at: string;
  paths: string[];
  undone: boolean;
}

interface Loaded {
  call: UndoCall;
  changes: UndoChange[];
  links: UndoLinkChange[];
  modes: UndoModeChange[];
  dirs: UndoDirChange[];
  prefix: string;
}

/** Every object under a session's undo prefix, grouped by call (newest first). */
async function listSession(storage: StorageDriver, tenant: string, ws: string, session: string, stamp?: string): Promise<Map<string, string[]>> {
  const base = sessionUndoPrefix(tenant, ws, session);
  const prefix = stamp ? `${base}${stamp}/` : base;
  const calls = new Map<string, string[]>();
  let cursor: string | undefined;
  do {
    const page = await storage.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) {
      const rest = o.key.slice(base.length);
      const s = rest.slice(0, rest.indexOf("/"));
      const list = calls.get(s) ?? [];
      list.push(o.key);
      calls.set(s, list);
    }
    cursor = page.cursor;
  } while (cursor);
  return calls;
}

async function loadCall(storage: StorageDriver, session: string, stamp: string, keys: string[]): Promise<Loaded | null> {
  const recs = keys.filter((k) => /\/r-[^/]+\.json$/.test(k)).sort();
  if (recs.length === 0) return null;
  const records: UndoRecord[] = [];
  for (const k of recs) {
    const r = await storage.get(k);
    if (r) records.push(JSON.parse(await new Response(r.body).text()) as UndoRecord);
  }
  // Several parts (a bash write-back's requests), in order: the first before, the last after.
  const merged = new Map<string, UndoChange>();
  for (const rec of records) for (const c of rec.changes) {
    const had = merged.get(c.path);
    merged.set(c.path, had ? { path: c.path, before: had.before, after: c.after } : c);
  }
  const changes = [...merged.values()].filter((c) => !(c.before === null && c.after === null) && c.before?.etag !== c.after);
  const mergedLinks = new Map<string, UndoLinkChange>();
  for (const rec of records) for (const l of rec.links ?? []) mergedLinks.set(l.path, { path: l.path, before: mergedLinks.get(l.path)?.before ?? l.before, after: l.after });
  const links = recordedLinks(mergedLinks.values());
  const mergedModes = new Map<string, UndoModeChange>();
  for (const rec of records) for (const m of rec.modes ?? []) mergedModes.set(m.path, { path: m.path, before: mergedModes.get(m.path)?.before ?? m.before, after: m.after });
  const modes = recordedModes(mergedModes.values());
  const mergedDirs = new Map<string, UndoDirChange>();
  for (const rec of records) for (const d of rec.dirs ?? []) mergedDirs.set(d.path, { path: d.path, before: mergedDirs.has(d.path) ? mergedDirs.get(d.path)!.before : d.before, after: d.after });
  const dirs = recordedDirs(mergedDirs.values());
  const prefix = keys[0]!.slice(0, keys[0]!.lastIndexOf("/") + 1);
  const call: UndoCall = {
    call_id: callIdOf(session, stamp),
    tool: records[0]?.tool ?? "call",
    session,
    at: new Date(stampTime(stamp)).toISOString(),
    paths: [...new Set([...changes.map((c) => c.path), ...links.map((l) => l.path), ...modes.map((m) => m.path), ...dirs.map((d) => `${d.path}/`)])].sort(),
    undone: keys.some((k) => k.endsWith("/undone")),
  };
  return { call, changes, links, modes, dirs, prefix };
}

/** The session's recent undoable calls, newest first. */
export async function listUndoable(storage: StorageDriver, tenant: string, ws: string, session: string, limit: number): Promise<UndoCall[]> {
  const out: UndoCall[] = [];
  for (const [stamp, keys] of await listSession(storage, tenant, ws, session)) {
    if (out.length >= limit) break;
    const l = await loadCall(storage, session, stamp, keys);
    if (l) out.push(l.call);
  }
  return out;
}

async function findCall(storage: StorageDriver, tenant: string, ws: string, target: { callId?: string; session: string }): Promise<Loaded> {
  if (target.callId !== undefined) {
    const id = parseCallId(target.callId);
    if (!id) throw new ToolError("INVALID_ARGUMENT", `call_id ${JSON.stringify(target.callId.slice(0, 200))} is not a call id; take one from a tool result's call_id or from GET /v1/workspaces/{ws}/undo.`);
    const keys = (await listSession(storage, tenant, ws, id.session, id.stamp)).get(id.stamp) ?? [];
    const l = await loadCall(storage, id.session, id.stamp, keys);
    if (!l) throw new ToolError("NOT_FOUND", `No undoable call ${target.callId} (it changed nothing, or its undo data expired: ${RETENTION_TEXT}). GET /v1/workspaces/{ws}/undo?session=${id.session} lists the undoable calls.`, { call_id: target.callId });
    if (l.call.undone) throw new ToolError("CONFLICT", `Call ${target.callId} was already undone; nothing was written.`, { call_id: target.callId });
    return l;
  }
  for (const [stamp, keys] of await listSession(storage, tenant, ws, target.session)) {
    const l = await loadCall(storage, target.session, stamp, keys);
    if (l && !l.call.undone) return l;
  }
  throw new ToolError("NOT_FOUND", `Session ${target.session} has no call left to undo. GET /v1/workspaces/{ws}/undo?session=… lists undoable calls; pass call_id to pick one.`, { session: target.session });
}

async function beforeBytes(storage: StorageDriver, tenant: string, c: UndoChange): Promise<Uint8Array> {
  const b = c.before!;
  if ("inline" in b) {
    const bytes = decodeBase64(b.inline);
    if (!bytes || bytes.length !== b.size) throw new ToolError("INTERNAL", `The saved version of ${c.path} in the undo record is damaged; this call can no longer be undone.`, { path: c.path });
    return bytes;
  }
  if ("blob" in b) {
    const r = await storage.get(b.blob);
    if (!r) throw new ToolError("NOT_FOUND", `The saved version of ${c.path} is gone (expired); this call can no longer be undone.`, { path: c.path });
    return new Uint8Array(await new Response(r.body).arrayBuffer());
  }
  if (b.lower.pack === null) return new Uint8Array(0);
  const r = await storage.get(packKey(tenant, b.lower.pack), { range: { offset: b.lower.offset, length: b.lower.size } });
  if (!r) throw new ToolError("NOT_FOUND", `The pack holding the old version of ${c.path} is gone; this call can no longer be undone.`, { path: c.path });
  return new Uint8Array(await new Response(r.body).arrayBuffer());
}

/** What undo did at a path: a file or link put back, deleted or made again; an execute bit set or cleared. */
export type UndoAction = "restored" | "deleted" | "recreated" | "exec_bit_set" | "exec_bit_cleared";

/** Undoes one call (by id, or the session's newest not yet undone). `ws` is a Workspace without an undo journal. */
export async function undoCall(storage: StorageDriver, ws: Workspace, target: { callId?: string; session: string }): Promise<{ call_id: string; tool: string; restored: { path: string; action: UndoAction }[] }> {
  const { call, changes, links, modes, dirs, prefix } = await findCall(storage, ws.tenant, ws.id, target);
  const claimKey = `${prefix}undone`;
  try {
    await storage.put(claimKey, JSON.stringify({ at: new Date().toISOString() }), { ifNoneMatch: "*", contentType: "application/json" });
  } catch (e) {
    if (isConditionFailed(e)) throw new ToolError("CONFLICT", `Call ${call.call_id} was already undone (or is being undone); nothing was written.`, { call_id: call.call_id });
    throw e;
  }
  const release = () => storage.delete(claimKey).catch(() => {});
  // Check all first: every file must still be the version the call left, every link the target it left.
  const changed: string[] = [];
  if (links.length || modes.length) {
    const table = await readModes(storage, ws.tenant, ws.id);
    const now = table.links ?? {};
    for (const l of links) if ((now[l.path] ?? null) !== l.after) changed.push(l.path);
    const exec = new Set(table.exec);
    for (const m of modes) if (exec.has(m.path) !== m.after && !changed.includes(m.path)) changed.push(m.path);
  }
  const sizes = new Map<string, number>();
  for (let i = 0; i < changes.length; i += 6) {
    await Promise.all(changes.slice(i, i + 6).map(async (c) => {
      const now = await ws.head(c.path);
      if ((now?.etag ?? null) !== c.after) changed.push(c.path);
      if (now) sizes.set(c.path, now.size);
    }));
  }
  await Promise.all(dirs.map(async (d) => {
    const now = await ws.driver.head(dirMarkerKey(ws.tenant, ws.id, d.path));
    if ((now?.etag ?? null) !== d.after) changed.push(`${d.path}/`);
  }));
  if (changed.length) {
    await release();
    changed.sort();
    throw new ToolError("FILE_MODIFIED", `Cannot undo call ${call.call_id}: ${changed.length} file${changed.length === 1 ? ", symlink or execute bit was" : "s, symlinks or execute bits were"} changed since (${changed.slice(0, 10).join(", ")}${changed.length > 10 ? ", ..." : ""}); nothing was written. Undo the later calls first, or fix the files by hand.`, { call_id: call.call_id, files: changed });
  }
  // The storage quotas, for the whole undo: refused → nothing written, the claim released (undo-room.ts).
  await checkUndoRoom(ws, call.call_id, undoPeak(changes, sizes, dirs)).catch(async (e: unknown) => {
    await release();
    throw e;
  });
  const restored: { path: string; action: UndoAction }[] = [];
  if (links.length || modes.length) {
    // One delta, written only while each link and execute bit is still what the call left (else nothing is written).
    const delta = { add: modes.filter((m) => m.before).map((m) => m.path), remove: modes.filter((m) => !m.before).map((m) => m.path), ...(links.length ? { links: Object.fromEntries(links.map((l) => [l.path, l.before])) } : {}) };
    try {
      await updateModes(storage, ws.tenant, ws.id, delta, { expectLinks: Object.fromEntries(links.map((l) => [l.path, l.after])), expectExec: Object.fromEntries(modes.map((m) => [m.path, m.after])) });
    } catch (e) {
      await release();
      throw new ToolError("CONFLICT", `Undo of call ${call.call_id} stopped at its symlinks and execute bits: ${e instanceof Error ? e.message : String(e)} No file, link or execute bit was restored. Check them, then undo again or fix by hand.`, { call_id: call.call_id, restored: [], left: [...new Set([...links.map((l) => l.path), ...modes.map((m) => m.path), ...changes.map((c) => c.path)])] });
    }
    for (const l of links) restored.push({ path: l.path, action: l.before === null ? "deleted" : l.after === null ? "recreated" : "restored" });
    for (const m of modes) restored.push({ path: m.path, action: m.before ? "exec_bit_set" : "exec_bit_cleared" });
  }
  for (const c of changes) {
    try {
      if (c.before === null) {
        await ws.delete(c.path, c.after!);
        restored.push({ path: c.path, action: "deleted" });
      } else {
        const bytes = await beforeBytes(storage, ws.tenant, c);
        await ws.put(c.path, bytes, c.after === null ? { create: true, placeChecked: true } : { ifMatch: c.after, placeChecked: true });
        restored.push({ path: c.path, action: c.after === null ? "recreated" : "restored" });
      }
    } catch (e) {
      if (restored.length === 0) await release();
      const left = changes.slice(changes.indexOf(c)).map((x) => x.path);
      throw new ToolError("CONFLICT", `Undo of call ${call.call_id} stopped at ${c.path}: ${e instanceof Error ? e.message : String(e)} ${counted(restored.length, "file was", "files were")} restored; ${left.length} ${left.length === 1 ? "was left as it is" : "were left as they are"} (${left.slice(0, 10).join(", ")}). Check them, then fix by hand.`, { call_id: call.call_id, path: c.path, restored: restored.map((r) => r.path), left });
    }
  }
  // Markers last (a directory made again may need its files gone first to be empty, and the other way round).
  const dirFailed: string[] = [];
  const made = dirs.filter((d) => d.before === null);
  let overQuota = null as ToolError | null;
  // Through the Workspace, as every marker is made and removed: its storage quotas charge each one made (QUOTA_EXCEEDED stops here) and free each one removed.
  for (const dir of (await ws.deleteMarkers(made.map((d) => ({ path: d.path, etag: d.after })))).refused) dirFailed.push(dir);
  for (const d of made) if (!dirFailed.includes(d.path)) restored.push({ path: `${d.path}/`, action: "deleted" });
  for (const d of dirs.filter((x) => x.before !== null)) {
    const r = await ws.makeDirectory(d.path).catch((e: unknown) => {
      if (isToolError(e) && e.code === "QUOTA_EXCEEDED") overQuota = e;
      return null;
    });
    if (r?.created) restored.push({ path: `${d.path}/`, action: "recreated" });
    else dirFailed.push(d.path);
  }
  if (dirFailed.length) {
    const left = dirFailed.map((d) => `${d}/`);
    throw new ToolError("CONFLICT", `Undo of call ${call.call_id} stopped at its directories: ${left.join(", ")} changed meanwhile (or a file now stands there)${overQuota ? `, or did not fit the storage quotas (${overQuota.message})` : ""}. ${counted(restored.length, "change was", "changes were")} undone; the directories named were left as they are. Check them, then fix by hand (mkdir or rmdir).`, { call_id: call.call_id, restored: restored.map((r) => r.path), left });
  }
  return { call_id: call.call_id, tool: call.tool, restored };
}
