/**
 * The workspace's bound on undo (lib/workspace/undo-retention.ts): across all its sessions a workspace
 * keeps its newest WORKSPACE_RETAIN_CALLS calls within WORKSPACE_RETAIN_BYTES, pruned by the commits
 * (the workspace's 1st, then every PRUNE_EVERY-th in an isolate) and by the scheduled tick. Over real
 * (memory) storage; the same through HTTP on local R2: test/lib/run/undo/workspace-bound.test.ts.
 */
import { describe, expect, it } from "vitest";
import { UndoJournal } from "../../../lib/workspace/undo-journal.js";
import { newStamp } from "../../../lib/workspace/undo-record.js";
import { undoPrefix } from "../../../lib/layout/paths.js";
import { PRUNE_EVERY, UNDO_RETENTION, WORKSPACE_RETAIN_CALLS, type UndoRetention } from "../../../lib/workspace/undo-retention.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { housekeepingTick } from "../../../lib/runtime/housekeeping.js";

type Storage = ReturnType<typeof memoryDriver>;

/** The calls kept under a workspace's undo prefix (`<session>/<stamp>`, newest first) and their objects' bytes. */
async function keptOf(storage: Storage, ws: string): Promise<{ calls: string[]; bytes: number; objects: number }> {
  const prefix = undoPrefix("acme", ws);
  const calls = new Set<string>();
  let bytes = 0;
  let objects = 0;
  let cursor: string | undefined;
  do {
    const page = await storage.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) {
      const [session, stamp] = o.key.slice(prefix.length).split("/");
      calls.add(`${stamp}/${session}`);
      bytes += o.size;
      objects++;
    }
    cursor = page.cursor;
  } while (cursor);
  return { calls: [...calls].sort().map((c) => c.split("/").reverse().join("/")), bytes, objects };
}

/**
 * One call from a session of its own (as a client that sends a new X-Session-Id each time) that
 * overwrote `path`, an upper file of `size` bytes: a blob of its before-image when over 64 KB.
 */
async function overwrite(storage: Storage, ws: string, session: string, path: string, size: number, at: number, opts: { pruneEvery?: number; retention?: UndoRetention } = {}): Promise<string> {
  const key = `files/${ws}/${path}`;
  const put = await storage.put(key, new Uint8Array(size).fill(session.length % 251));
  const j = new UndoJournal(storage, "acme", ws, session, newStamp(at));
  if (opts.pruneEvery !== undefined) j.pruneEvery = opts.pruneEvery;
  if (opts.retention) j.retention = opts.retention;
  expect(await j.capture(storage, key, path, put.etag)).toBe(true);
  j.landed(path, `after-${session}`);
  return (await j.commit())!;
}

describe("a workspace's undo across its sessions", () => {
  it(`a new session for every call: at most ${WORKSPACE_RETAIN_CALLS} calls + ${PRUNE_EVERY - 1} between two prunes; the newest kept whole`, async () => {
    const storage = memoryDriver();
    const now = Date.now();
    const n = WORKSPACE_RETAIN_CALLS + 100;
    const ids: string[] = [];
    let most = 0;
    for (let i = 0; i < n; i++) {
      ids.push(await overwrite(storage, "calls", `s${i}`, "a.txt", 10, now - (n - i) * 10));
      if (i >= WORKSPACE_RETAIN_CALLS - 1) most = Math.max(most, (await keptOf(storage, "calls")).calls.length); // fewer before
    }
    const kept = await keptOf(storage, "calls");
    expect(most).toBeLessThanOrEqual(WORKSPACE_RETAIN_CALLS + PRUNE_EVERY - 1);
    expect(kept.calls.length).toBeLessThanOrEqual(WORKSPACE_RETAIN_CALLS + PRUNE_EVERY - 1);
    // The newest WORKSPACE_RETAIN_CALLS are all there, newest first; what is gone is the oldest.
    const newest = ids.slice(-WORKSPACE_RETAIN_CALLS).reverse().map((id) => id.replace("~", "/"));
    expect(kept.calls.slice(0, WORKSPACE_RETAIN_CALLS)).toEqual(newest);
    expect(kept.calls).not.toContain(ids[0]!.replace("~", "/"));
  });

  it("bytes: at most the cap + the calls of one cadence between two prunes; the newest within the cap kept", async () => {
    const storage = memoryDriver();
    const now = Date.now();
    const size = 100 * 1024;
    const retention = { ...UNDO_RETENTION, workspaceBytes: 1024 * 1024 };
    const every = 4;
    const ids: string[] = [];
    let most = 0;
    let perCall = 0;
    for (let i = 0; i < 40; i++) {
      ids.push(await overwrite(storage, "bytes", `s${i}`, "big.bin", size, now - (40 - i) * 10, { pruneEvery: every, retention }));
      const k = await keptOf(storage, "bytes");
      if (i === 0) perCall = k.bytes; // one call: its blob and its record
      most = Math.max(most, k.bytes);
    }
    expect(perCall).toBeGreaterThan(size);
    expect(most).toBeLessThanOrEqual(retention.workspaceBytes + (every - 1) * (perCall + 64)); // + 64: a longer session name
    // The 1st, 5th, … 37th commits pruned; the 38th to 40th landed after the last prune.
    const kept = await keptOf(storage, "bytes");
    expect(kept.bytes).toBeGreaterThan(retention.workspaceBytes - perCall);
    const fit = Math.floor(retention.workspaceBytes / perCall);
    expect(kept.calls.slice(0, fit)).toEqual(ids.slice(-fit).reverse().map((id) => id.replace("~", "/")));
    expect(kept.calls).not.toContain(ids[0]!.replace("~", "/"));
  });

  it("the scheduled tick brings a workspace over the cap under it (calls no commit pruned), the newest kept", async () => {
    const storage = memoryDriver();
    const now = Date.now();
    await storage.put("t/acme/w/tick/meta.json", JSON.stringify({ created_at: now - 3600_000 }));
    const n = WORKSPACE_RETAIN_CALLS + 50;
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(await overwrite(storage, "tick", `s${i}`, "a.txt", 10, now - (n - i) * 10, { pruneEvery: 0 }));
    expect((await keptOf(storage, "tick")).calls.length).toBe(n);
    const lines: string[] = [];
    await housekeepingTick({ storage, kv: storageKeyValue(memoryDriver(), "kv/") }, {}, { now: () => now, log: (l) => lines.push(l) });
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([{ gc: "acme", undo_calls_deleted: 50 }]);
    const kept = await keptOf(storage, "tick");
    expect(kept.calls).toEqual(ids.slice(-WORKSPACE_RETAIN_CALLS).reverse().map((id) => id.replace("~", "/")));
  });

  it("the pruning commit's own cost: ⌈objects/1000⌉ LISTs of the workspace's undo prefix + 1 DELETE per 1,000 objects dropped; other commits none", async () => {
    const base = memoryDriver();
    const now = Date.now();
    const n = WORKSPACE_RETAIN_CALLS + PRUNE_EVERY - 1;
    for (let i = 0; i < n; i++) await overwrite(base, "cost", `s${i}`, "a.txt", 10, now - (n - i) * 10, { pruneEvery: 0 });
    const ops: string[] = [];
    const storage: Storage = Object.assign(Object.create(base) as Storage, {
      list: (o: Parameters<Storage["list"]>[0]) => (ops.push(`list ${o.prefix}`), base.list(o)),
      delete: (k: Parameters<Storage["delete"]>[0]) => (ops.push(`delete ${Array.isArray(k) ? k.length : 1}`), base.delete(k)),
    });
    await overwrite(storage, "cost", "plain", "a.txt", 10, now, { pruneEvery: 0 });
    expect(ops).toEqual([]);
    await overwrite(storage, "cost", "last", "a.txt", 10, now, { pruneEvery: 1 });
    // 1,017 calls of one record each: 2 pages; the 17 oldest dropped in one bulk DELETE.
    expect(ops).toEqual([`list ${undoPrefix("acme", "cost")}`, `list ${undoPrefix("acme", "cost")}`, "delete 17"]);
  });

  it("no session id shares the session 'default': its own 100 calls bound it (no new session per call)", async () => {
    // The doors take `x-session-id ?? "default"` (lib/api/routes/tools.ts): a client that sends none writes one session.
    const storage = memoryDriver();
    const now = Date.now();
    for (let i = 0; i < 130; i++) await overwrite(storage, "nosession", "default", "a.txt", 10, now - (130 - i) * 10, { pruneEvery: i === 129 ? 1 : 0 });
    expect((await keptOf(storage, "nosession")).calls.length).toBe(UNDO_RETENTION.calls);
  });
});
