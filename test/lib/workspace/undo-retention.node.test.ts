/** Undo retention (lib/workspace/undo-retention.ts) through UndoJournal.commit over real (memory) storage. */
import { describe, expect, it } from "vitest";
import { UndoJournal } from "../../../lib/workspace/undo-journal.js";
import { newStamp } from "../../../lib/workspace/undo-record.js";
import { sessionUndoPrefix } from "../../../lib/layout/paths.js";
import { RETAIN_CALLS } from "../../../lib/workspace/undo-retention.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { housekeepingTick } from "../../../lib/runtime/housekeeping.js";

const DAY = 24 * 3600_000;

type Storage = ReturnType<typeof memoryDriver>;

/** One committed call in `session` that created `path`, stamped at `at`; prunes when `prune`. */
async function commitCall(storage: Storage, session: string, path: string, at: number, prune = false): Promise<string> {
  const j = new UndoJournal(storage, "acme", "main", session, newStamp(at));
  j.pruneEvery = prune ? 1 : 0;
  await j.capture(storage, `files/${path}`, path, null);
  j.landed(path, `etag-${path}`);
  return (await j.commit())!;
}

async function stampsOf(storage: Storage, session: string): Promise<string[]> {
  const prefix = sessionUndoPrefix("acme", "main", session);
  const out = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await storage.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of page.objects) out.add(o.key.slice(prefix.length).split("/")[0]!);
    cursor = page.cursor;
  } while (cursor);
  return [...out].sort();
}

describe("undo retention", () => {
  it(`keeps a session's newest ${RETAIN_CALLS} calls (records, blobs and claims of older ones deleted); other sessions untouched`, async () => {
    const storage = memoryDriver();
    const now = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < RETAIN_CALLS + 4; i++) ids.push(await commitCall(storage, "s1", `f${i}.txt`, now - (RETAIN_CALLS + 10 - i) * 1000));
    // An old call's blob and claim go with it.
    const oldest = ids[0]!.split("~")[1]!;
    await storage.put(`${sessionUndoPrefix("acme", "main", "s1")}${oldest}/b-x`, "bytes");
    await storage.put(`${sessionUndoPrefix("acme", "main", "s1")}${oldest}/undone`, "{}");
    await commitCall(storage, "s2", "other.txt", now - 1000);
    expect((await stampsOf(storage, "s1")).length).toBe(RETAIN_CALLS + 4);
    const last = await commitCall(storage, "s1", "last.txt", now, true);
    const left = await stampsOf(storage, "s1");
    expect(left.length).toBe(RETAIN_CALLS);
    expect(left[0]).toBe(last.split("~")[1]);
    // The 5 oldest are gone (104 + 1 committed, 100 kept), every object under them.
    for (const id of ids.slice(0, 5)) expect(left).not.toContain(id.split("~")[1]);
    expect(left).toContain(ids[5]!.split("~")[1]);
    expect((await storage.list({ prefix: `${sessionUndoPrefix("acme", "main", "s1")}${oldest}/` })).objects).toEqual([]);
    expect((await stampsOf(storage, "s2")).length).toBe(1);
  });

  it("drops calls older than 24 h even when the session has fewer than the count", async () => {
    const storage = memoryDriver();
    const now = Date.now();
    const old = await commitCall(storage, "s1", "old.txt", now - 25 * 3600 * 1000);
    const recent = await commitCall(storage, "s1", "recent.txt", now - 23 * 3600 * 1000);
    const last = await commitCall(storage, "s1", "last.txt", now, true);
    const left = await stampsOf(storage, "s1");
    expect(left).toEqual([last, recent].map((id) => id.split("~")[1]).sort());
    expect(left).not.toContain(old.split("~")[1]);
  });

  it("the scheduled tick prunes every session of every workspace, a session that stopped making calls too; the rest stays", async () => {
    const storage = memoryDriver();
    const now = Date.now();
    // The workspaces the tick walks are those with a record.
    for (const ws of ["main", "other"]) await storage.put(`t/acme/w/${ws}/meta.json`, JSON.stringify({ created_at: now - 3 * DAY }));
    const stale = [];
    for (let i = 0; i < 30; i++) stale.push(await commitCall(storage, `gone${i}`, "big.bin", now - 2 * DAY));
    const kept = await commitCall(storage, "live", "a.txt", now - 3600_000);
    const otherWs = new UndoJournal(storage, "acme", "other", "s9", newStamp(now - 2 * DAY));
    otherWs.pruneEvery = 0;
    await otherWs.capture(storage, "files/x", "x", null);
    otherWs.landed("x", "etag-x");
    await otherWs.commit();
    const lines: string[] = [];
    await housekeepingTick({ storage, kv: storageKeyValue(memoryDriver(), "kv/") }, {}, { now: () => now, log: (l) => lines.push(l) });
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([{ gc: "acme", undo_calls_deleted: 31 }]);
    for (let i = 0; i < 30; i++) expect(await stampsOf(storage, `gone${i}`)).toEqual([]);
    expect(await stampsOf(storage, "live")).toEqual([kept.split("~")[1]]);
    expect((await storage.list({ prefix: "t/acme/w/other/x/undo/" })).objects).toEqual([]);
    // Nothing else of the workspace is touched.
    expect((await storage.list({ prefix: "t/acme/w/main/meta.json" })).objects).toHaveLength(1);
  });

  it("a prune the storage refuses is the tenant's housekeeping error, logged with its GC line; GC itself goes on", async () => {
    const base = memoryDriver();
    const now = Date.now();
    await base.put("t/acme/w/main/meta.json", JSON.stringify({ created_at: now - 3 * DAY }));
    await commitCall(base, "gone", "old.txt", now - 2 * DAY);
    const storage: Storage = Object.assign(Object.create(base) as Storage, { delete: async () => { throw new Error("delete refused"); } });
    const lines: string[] = [];
    const r = await housekeepingTick({ storage, kv: storageKeyValue(memoryDriver(), "kv/") }, {}, { now: () => now, log: (l) => lines.push(l) });
    expect(r.tenants).toMatchObject([{ tenant: "acme", report: { roots: { workspaces: 1 } } }]);
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([{ gc: "acme", housekeeping_error: "delete refused" }]);
    expect(await stampsOf(base, "gone")).toHaveLength(1);
  });
});
