/**
 * Call-task records (lib/run/tasks/store.ts): bound to their key, workspace and tenant; NOT_FOUND past
 * their ttl; concurrent changes all land (conditional writes, read again after a lost race); a key's
 * list pages newest first, each task once; a record of the first layout (x/call-tasks/<id>.json) is
 * still read, changed and swept by its id; the housekeeping tick deletes the ones past their ttl, of
 * both layouts, and keeps the rest.
 */
import { describe, expect, it } from "vitest";
import { callTaskKey, callTasksPrefix } from "../../../../lib/layout/paths.js";
import { changeCallTask, createCallTask, listCallTasks, loadCallTask, MAX_CALL_TASK_TTL_MS, MIN_CALL_TASK_TTL_MS, ttlOf, type CallTaskRecord, type CallTaskScope } from "../../../../lib/run/tasks/store.js";
import { housekeepingTick } from "../../../../lib/runtime/housekeeping.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { createWorkspace } from "../../../../lib/workspace/registry.js";

const DAY = 24 * 60 * 60 * 1000;
const scopeOf = (storage: ReturnType<typeof memoryDriver>, over: Partial<CallTaskScope> = {}): CallTaskScope => ({ storage, tenant: "acme", workspace: "main", key_id: "k1", ...over });

describe("call-task records", () => {
  it("another key, workspace or tenant, a made-up id, and a record past its ttl: NOT_FOUND", async () => {
    const storage = memoryDriver();
    const s = scopeOf(storage);
    const { rec } = await createCallTask(s, { tool: "bash", session: "s1", ttl_ms: ttlOf(60_000) });
    expect((await loadCallTask(s, rec.id)).rec).toMatchObject({ id: rec.id, status: "working", key_id: "k1" });
    for (const other of [{ key_id: "k2" }, { workspace: "other" }, { tenant: "beta" }, { now: () => Date.now() + 61_000 }]) {
      await expect(loadCallTask(scopeOf(storage, other), rec.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
    }
    await expect(loadCallTask(s, "c../../../x")).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect([ttlOf(undefined), ttlOf(1), ttlOf(10 * DAY)]).toEqual([DAY, MIN_CALL_TASK_TTL_MS, MAX_CALL_TASK_TTL_MS]);
  });

  it("concurrent changes of one task all land: each reads again after losing the race", async () => {
    const s = scopeOf(memoryDriver());
    const { rec } = await createCallTask(s, { tool: "bash", session: "s1", ttl_ms: DAY });
    await Promise.all(Array.from({ length: 5 }, (_, i) => changeCallTask(s, rec.id, (cur) => ({ ...cur, output: `${cur.output ?? ""}${i}` }))));
    const out = (await loadCallTask(s, rec.id)).rec.output!;
    expect([...out].sort().join("")).toBe("01234");
  });

  it("the housekeeping tick deletes the records past their ttl, and only those", async () => {
    const storage = memoryDriver();
    await storage.put("t/acme/tenant.json", "{}");
    // The workspace's record: the tick's GC takes a workspace prefix without one for a deleted workspace's leftovers.
    await createWorkspace(storage, "acme", { id: "main" });
    const s = scopeOf(storage);
    const short = (await createCallTask(s, { tool: "read", session: "s1", ttl_ms: MIN_CALL_TASK_TTL_MS })).rec;
    const long = (await createCallTask(s, { tool: "read", session: "s1", ttl_ms: MAX_CALL_TASK_TTL_MS })).rec;
    const now = Date.now() + 2 * DAY;
    const r = await housekeepingTick({ storage, kv: storageKeyValue(memoryDriver(), "kv/") }, {}, { now: () => now, log: () => {} });
    expect(r.tenants.map((t) => t.tenant)).toEqual(["acme"]);
    const later = scopeOf(storage, { now: () => now });
    await expect(loadCallTask(later, long.id)).resolves.toBeDefined();
    const left = (await storage.list({ prefix: callTasksPrefix("acme", "main") })).objects.map((o) => o.key);
    expect(left).toEqual([callTaskKey("acme", "main", "k1", long.id)]);
    expect(left.join()).not.toContain(short.id);
  });

  it("a key's tasks are in its own folder, listed newest first a page at a time, each once; a cursor not given by the list is INVALID_ARGUMENT", async () => {
    const storage = memoryDriver();
    let clock = Date.parse("2026-11-30T08:00:00Z");
    const s = scopeOf(storage, { now: () => clock });
    const made: string[] = [];
    for (let i = 0; i < 7; i++, clock += 1000) made.push((await createCallTask(s, { tool: "read", session: "s1", ttl_ms: DAY })).rec.id);
    await createCallTask(scopeOf(storage, { key_id: "k2", now: () => clock }), { tool: "read", session: "s1", ttl_ms: DAY });
    expect(callTaskKey("acme", "main", "k1", made[0]!)).toBe(`t/acme/w/main/x/call-tasks/k1/${made[0]}.json`);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listCallTasks(s, { limit: 3, ...(cursor ? { cursor } : {}) });
      expect(page.tasks.length).toBeLessThanOrEqual(3);
      seen.push(...page.tasks.map((t) => t.id));
      cursor = page.next;
    } while (cursor);
    expect(seen).toEqual([...made].reverse());
    await expect(listCallTasks(s, { cursor: "../k2/x" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("a task's creation sweeps its key's own folder: a record past its ttl and 24 h past its last write goes, another key's stays", async () => {
    const storage = memoryDriver();
    const stale = (await createCallTask(scopeOf(storage), { tool: "read", session: "s1", ttl_ms: MIN_CALL_TASK_TTL_MS })).rec;
    const theirs = (await createCallTask(scopeOf(storage, { key_id: "k2" }), { tool: "read", session: "s1", ttl_ms: MIN_CALL_TASK_TTL_MS })).rec;
    const later = Date.now() + 2 * DAY;
    const fresh = (await createCallTask(scopeOf(storage, { now: () => later }), { tool: "read", session: "s1", ttl_ms: DAY })).rec;
    await expect.poll(async () => (await storage.list({ prefix: callTasksPrefix("acme", "main") })).objects.map((o) => o.key).sort()).toEqual([callTaskKey("acme", "main", "k1", fresh.id), callTaskKey("acme", "main", "k2", theirs.id)].sort());
    expect(stale.id).not.toBe(fresh.id);
  });

  it("a record of the first layout (x/call-tasks/<id>.json) is read and changed by its key until its ttl, not by another; the tick sweeps it past its ttl", async () => {
    const storage = memoryDriver();
    await storage.put("t/acme/tenant.json", "{}");
    await createWorkspace(storage, "acme", { id: "main" });
    const at = new Date().toISOString();
    const old: CallTaskRecord = { id: "cabcdefghijklmnopqrstuvwx", tool: "bash", key_id: "k1", session: "s1", status: "working", created_at: at, updated_at: at, ttl_ms: DAY };
    const key = `${callTasksPrefix("acme", "main")}${old.id}.json`;
    expect(callTaskKey("acme", "main", "k1", old.id)).toBe(key);
    await storage.put(key, JSON.stringify(old));
    const s = scopeOf(storage);
    expect((await loadCallTask(s, old.id)).rec).toMatchObject({ id: old.id, status: "working" });
    await expect(loadCallTask(scopeOf(storage, { key_id: "k2" }), old.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
    await changeCallTask(s, old.id, (cur) => ({ ...cur, status: "completed" }));
    expect((await loadCallTask(s, old.id)).rec.status).toBe("completed");
    const now = Date.now() + 3 * DAY;
    await housekeepingTick({ storage, kv: storageKeyValue(memoryDriver(), "kv/") }, {}, { now: () => now, log: () => {} });
    expect((await storage.list({ prefix: callTasksPrefix("acme", "main") })).objects).toEqual([]);
  });
});
