/**
 * Call-task records (lib/run/tasks/store.ts): bound to their key, workspace and tenant; NOT_FOUND past
 * their ttl; concurrent changes all land (conditional writes, read again after a lost race); the
 * housekeeping tick deletes the ones past their ttl and keeps the rest.
 */
import { describe, expect, it } from "vitest";
import { changeCallTask, createCallTask, loadCallTask, MAX_CALL_TASK_TTL_MS, MIN_CALL_TASK_TTL_MS, ttlOf, type CallTaskScope } from "../../../../lib/run/tasks/store.js";
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
    const left = (await storage.list({ prefix: "t/acme/w/main/x/call-tasks/" })).objects.map((o) => o.key);
    expect(left).toEqual([`t/acme/w/main/x/call-tasks/${long.id}.json`]);
    expect(left.join()).not.toContain(short.id);
  });
});
