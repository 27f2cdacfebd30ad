/**
 * The scheduled housekeeping tick (lib/runtime/housekeeping.ts) over run records (lib/sync/run-records.ts):
 * the records an isolate that died left behind (a foreground run's claim, with or without its result) and
 * a finished task's, a day past their run's end, go on the tick, whether or not a task ever starts in
 * their workspace again; a run still in progress (a task within its life, a foreground run whose claim is
 * fresh) and a recent result keep every object. Over the memory driver, whose object times follow the
 * clock: Date alone is faked, to write records two days apart (no timers are faked, nothing sleeps).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { internalPrefix } from "../../../lib/layout/paths.js";
import { startTask } from "../../../lib/exec/tasks.js";
import type { Executor, RunRequest, RunResult } from "../../../lib/exec/types.js";
import { housekeepingTick, runSweepKey } from "../../../lib/runtime/housekeeping.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { runIdFor, storageRunRecords } from "../../../lib/sync/run-records.js";
import { createWorkspace } from "../../../lib/workspace/registry.js";

const HOUR = 3600 * 1000;
const idle: Executor = { run: async () => ({}) as RunResult, start: async () => {} };
const request = (key: string, workspace = "main"): RunRequest => ({ version: 1, idempotency_key: key, tenant: "acme", workspace, command: "true", timeout_ms: 60_000, sync: { url: "https://api.example", token: "" } });
const answer = { ok: true as const, result: { run_id: "r0", stdout: "", stderr: "", output: "", exit_code: 0, duration_ms: 1, timed_out: false, killed: false, truncated: false, files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [] } as unknown as RunResult };
const runner = (storage: StorageDriver, key: string, workspace = "main") => storageRunRecords(storage, "acme", workspace, key, Date.now() + HOUR);

/** A foreground run's runner: its claim, and its result when it got that far (the API's delete never came). */
async function foreground(storage: StorageDriver, key: string, finished: boolean, workspace = "main") {
  const r = runner(storage, key, workspace);
  await r.claim({ task: false });
  if (finished) await r.finish(answer);
}

/** A background task: its marker, its runner's claim and an output chunk, and its result when it finished. */
async function task(storage: StorageDriver, key: string, finished: boolean) {
  await startTask(storage, idle, request(key));
  const r = runner(storage, key);
  await r.claim({ task: true });
  await r.output(1, "x\n");
  if (finished) await r.finish(answer);
}

const runKeys = async (storage: StorageDriver, workspace = "main") => (await storage.list({ prefix: `${internalPrefix("acme", workspace)}runs/` })).objects.map((o) => o.key);

afterEach(() => {
  vi.useRealTimers();
});

describe("housekeeping tick: run records", () => {
  it("deletes what a dead isolate and finished tasks left a day past their run, in every workspace, with one LIST of its records each; keeps every object of a run in progress and of a recent result", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const t0 = Date.parse("2026-11-01T08:00:00Z");
    vi.setSystemTime(t0);
    const inner = memoryDriver();
    const lists: string[] = [];
    const storage: StorageDriver = { ...inner, list: (o) => (lists.push(o.prefix), inner.list(o)) };
    await storage.put("t/acme/tenant.json", "{}");
    await createWorkspace(storage, "acme", { id: "main" });
    await createWorkspace(storage, "acme", { id: "quiet" });
    // Now: a task started 24 minutes ago (within the longest life of a run, 600 s + 15 min), a
    // foreground run claimed 20 minutes ago (its command still running), a task that finished an hour
    // ago. Written first: a task start's own housekeeping would otherwise collect the old records itself.
    vi.setSystemTime(t0 + 48 * HOUR - 24 * 60_000);
    await task(storage, "task-running", false);
    vi.setSystemTime(t0 + 48 * HOUR - 20 * 60_000);
    await foreground(storage, "fg-running", false);
    vi.setSystemTime(t0 + 47 * HOUR);
    await task(storage, "task-done-recently", true);
    const fresh = await runKeys(storage);
    expect(fresh).toHaveLength(3 + 1 + 4); // task + claim + chunk, claim, task + claim + chunk + result

    // Two days ago: orphans of foreground runs (claim + result; a claim alone; one in a workspace that
    // never starts a task) and a finished task's record.
    vi.setSystemTime(t0);
    await foreground(storage, "fg-answered", true);
    await foreground(storage, "fg-died", false);
    await foreground(storage, "fg-quiet", true, "quiet");
    await task(storage, "task-done-long-ago", true);
    const old = (await runKeys(storage)).filter((k) => !fresh.includes(k));
    expect(old).toHaveLength(2 + 1 + 4);
    expect(await runKeys(storage, "quiet")).toHaveLength(2);
    vi.setSystemTime(t0 + 48 * HOUR);

    lists.length = 0;
    const lines: string[] = [];
    await housekeepingTick({ storage, kv: storageKeyValue(memoryDriver(), "kv/") }, {}, { now: () => Date.now(), log: (l) => lines.push(l) });
    const tickLists = [...lists];
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.gc === "acme");
    expect(line).toMatchObject({ run_records_deleted: old.length + 2 });
    expect(line.housekeeping_error).toBeUndefined();
    expect(await runKeys(storage)).toEqual(fresh);
    expect(await runKeys(storage, "quiet")).toEqual([]);
    // Bounded: one page of each workspace's run records per tick.
    for (const ws of ["main", "quiet"]) expect(tickLists.filter((p) => p === `${internalPrefix("acme", ws)}runs/`)).toHaveLength(1);
  });

  it("a claim of a run whose isolate died is kept until a day past the longest life of a run, then goes on the next tick", async () => {
    const t0 = Date.now();
    const storage = memoryDriver();
    await storage.put("t/acme/tenant.json", "{}");
    await createWorkspace(storage, "acme", { id: "main" });
    await foreground(storage, "fg-died", false);
    const tick = async (at: number) => {
      const lines: string[] = [];
      await housekeepingTick({ storage, kv: storageKeyValue(memoryDriver(), "kv/") }, {}, { now: () => at, log: (l) => lines.push(l) });
      return lines.map((l) => JSON.parse(l)).find((l) => l.gc === "acme");
    };
    // 24 h + 24 min: the run could have reported until 25 min after its last object; kept a day past that.
    expect(await tick(t0 + 24 * HOUR + 24 * 60_000)).toMatchObject({ run_records_deleted: 0 });
    expect(await runKeys(storage)).toHaveLength(1);
    expect(await tick(t0 + 24 * HOUR + 26 * 60_000)).toMatchObject({ run_records_deleted: 1 });
    expect(await runKeys(storage)).toEqual([]);
  });

  it("a workspace whose run records cannot be listed is the tenant's housekeeping_error; the others are still swept", async () => {
    const t0 = Date.now();
    const inner = memoryDriver();
    const storage: StorageDriver = { ...inner, list: (o) => (o.prefix === `${internalPrefix("acme", "broken")}runs/` ? Promise.reject(new Error("list refused")) : inner.list(o)) };
    await storage.put("t/acme/tenant.json", "{}");
    for (const id of ["broken", "main"]) await createWorkspace(storage, "acme", { id });
    await foreground(storage, "fg-died", false);
    const lines: string[] = [];
    await housekeepingTick({ storage, kv: storageKeyValue(memoryDriver(), "kv/") }, {}, { now: () => t0 + 2 * 24 * HOUR, log: (l) => lines.push(l) });
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.gc === "acme");
    expect(line).toMatchObject({ run_records_deleted: 1, housekeeping_error: "run records of workspace broken: list refused" });
    expect(await runKeys(storage)).toEqual([]);
  });

  it("reads one page (1,000 keys) of a workspace's run records per tick: the rest go on the next (the page's last run, maybe cut, with them)", async () => {
    const t0 = Date.now();
    const storage = memoryDriver();
    await storage.put("t/acme/tenant.json", "{}");
    await createWorkspace(storage, "acme", { id: "main" });
    for (let i = 0; i < 1200; i++) await foreground(storage, `fg-${i}`, false);
    const tick = async () => {
      const lines: string[] = [];
      await housekeepingTick({ storage, kv: storageKeyValue(memoryDriver(), "kv/") }, {}, { now: () => t0 + 2 * 24 * HOUR, log: (l) => lines.push(l) });
      return lines.map((l) => JSON.parse(l)).find((l) => l.gc === "acme");
    };
    expect(await tick()).toMatchObject({ run_records_deleted: 999 });
    expect(await tick()).toMatchObject({ run_records_deleted: 201 });
    expect(await runKeys(storage)).toEqual([]);
  });

  it("goes on across ticks past a first page of young records: more than 1,000 records, the first 1,000 young, the old ones after them all go within a few ticks, one LIST a tick", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const t0 = Date.parse("2026-11-01T08:00:00Z");
    const inner = memoryDriver();
    const lists: { prefix: string; startAfter?: string | undefined }[] = [];
    const storage: StorageDriver = { ...inner, list: (o) => (lists.push({ prefix: o.prefix, startAfter: o.startAfter }), inner.list(o)) };
    vi.setSystemTime(t0);
    await storage.put("t/acme/tenant.json", "{}");
    await createWorkspace(storage, "acme", { id: "main" });
    // 1,300 foreground runs that died (a claim each); run ids are hashes, so the 1,000 that list first are picked by id.
    const keys = Array.from({ length: 1300 }, (_, i) => `fg-${i}`);
    const ids = new Map(await Promise.all(keys.map(async (k) => [k, await runIdFor("acme", "main", k)] as const)));
    const byId = [...keys].sort((a, b) => (ids.get(a)! < ids.get(b)! ? -1 : 1));
    const young = new Set(byId.slice(0, 1000));
    for (const k of byId) if (!young.has(k)) await foreground(storage, k, false); // two days before the ticks
    vi.setSystemTime(t0 + 47 * HOUR);
    for (const k of young) await foreground(storage, k, false); // an hour before: kept
    vi.setSystemTime(t0 + 48 * HOUR);
    const kv = storageKeyValue(memoryDriver(), "kv/");
    const tick = async () => {
      const lines: string[] = [];
      lists.length = 0;
      await housekeepingTick({ storage, kv }, {}, { now: () => Date.now(), log: (l) => lines.push(l) });
      expect(lists.filter((l) => l.prefix === `${internalPrefix("acme", "main")}runs/`)).toHaveLength(1); // still one page a tick
      return lines.map((l) => JSON.parse(l)).find((l) => l.gc === "acme").run_records_deleted as number;
    };
    // The first page is all young: nothing goes; before, every tick read that page again and the 300 stayed forever.
    expect(await tick()).toBe(0);
    expect(await kv.get(runSweepKey("acme"))).toMatch(/"main":"r[0-9a-f]{15}\/claim\.json"/);
    expect(await tick()).toBe(300);
    const left = await runKeys(storage);
    expect(left).toHaveLength(1000);
    expect(new Set(left.map((k) => k.split("/").at(-2)))).toEqual(new Set([...young].map((k) => ids.get(k))));
    // Past the end: the position is dropped, and the next tick starts at the first page again.
    expect(await tick()).toBe(0);
    expect(await kv.get(runSweepKey("acme"))).toBeNull();
    expect(lists.find((l) => l.prefix.endsWith("/runs/"))!.startAfter).toBeUndefined();
  });
});
