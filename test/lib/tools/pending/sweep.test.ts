/**
 * The lazy sweep of pending calls and task records (lib/storage/sweep.ts), with real (local) R2:
 * records that ended more than 24 h ago go when calls are held or listed (task records when a task
 * starts); fresh ones, recently answered ones, one written between the sweep's read and its delete,
 * and another tenant's stay.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { pendingKey, taskKey } from "../../../../lib/layout/paths.js";
import { createPending, isSweepable, type PendingRecord } from "../../../../lib/tools/pending/store.js";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import { sweepRecords } from "../../../../lib/storage/sweep.js";
import type { DeleteTarget, StorageDriver } from "../../../../lib/storage/types.js";
import { saveTask, sweepTasks, type TaskRecord } from "../../../../lib/tools/task/records.js";
import { randomId } from "../../../../lib/shared/hash.js";
import { admin, newTenant, testApp, type Tenant, type TestApp } from "../../../helpers.js";

const H = 3600_000;
const r2 = r2Driver(env.FILES);

async function approverKey(app: TestApp, tenant: string): Promise<string> {
  return (await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name: "app", scopes: ["read", "approve"] })).body.key as string;
}
const ask = async (t: Tenant, question: string) => {
  const r = await t.call("ask_user", { question });
  expect(r.body.error?.code, JSON.stringify(r.body)).toBe("NEEDS_INPUT");
  return r.body.error.details.pending_id as string;
};
const answer = async (t: Tenant, key: string, id: string) => {
  const res = await t.app.request(`/v1/workspaces/${t.ws}/pending/${id}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ answer: "yes" }) });
  expect(res.status, await res.clone().text()).toBe(200);
};
const listIds = async (t: Tenant) => {
  const res = await t.req(`/v1/workspaces/${t.ws}/pending`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { pending: { id: string }[] }).pending.map((p) => p.id);
};
const stored = async (t: Tenant, id: string) => (await r2.head(pendingKey(t.tenant, t.ws, id))) !== null;

describe("pending calls are swept", () => {
  it("expired or answered more than 24 h ago: gone after a new call or a listing; fresh, recently answered and tenant B's stay", async () => {
    let now = Date.now();
    const app = testApp({ pending: { now: () => now } });
    const a = await newTenant(app);
    const b = await newTenant(app); // same workspace name "main"
    const approver = await approverKey(app, a.tenant);
    const expiring = await ask(a, "q1: never answered");
    const answeredEarly = await ask(a, "q2: answered at once");
    await answer(a, approver, answeredEarly);
    const bOld = await ask(b, "tenant B's, never answered");

    now += 30 * H; // q2 answered 30 h ago; q1 expired 6 h ago (inside the grace)
    const fresh = await ask(a, "q3: fresh"); // holding a call sweeps
    expect(await stored(a, answeredEarly)).toBe(false);
    expect(await stored(a, expiring)).toBe(true);
    const answeredRecently = await ask(a, "q4: answered now");
    await answer(a, approver, answeredRecently);

    now += 19 * H; // q1 expired 25 h ago
    expect(await listIds(a)).toEqual([fresh]); // the listing sweeps
    expect(await stored(a, expiring)).toBe(false);
    expect(await stored(a, fresh)).toBe(true);
    expect(await stored(a, answeredRecently)).toBe(true);
    expect(await stored(b, bOld)).toBe(true); // another tenant's records are not this sweep's
    expect((await a.req(`/v1/workspaces/${a.ws}/pending/${expiring}`)).status).toBe(404);
  });

  it("a record written between the sweep's read and its delete stays (conditional delete); the others go", async () => {
    let now = Date.now();
    let beforeDelete: (() => Promise<void>) | null = null;
    const racing: StorageDriver = {
      ...r2,
      name: r2.name,
      head: (k) => r2.head(k), get: (k, o) => r2.get(k, o), put: (k, b, o) => r2.put(k, b, o), list: (o) => r2.list(o),
      delete: async (keys) => {
        const hook = beforeDelete;
        beforeDelete = null;
        if (hook) await hook();
        return r2.delete(keys as readonly (string | DeleteTarget)[]);
      },
    };
    const app = testApp({ storage: racing, pending: { now: () => now } });
    const t = await newTenant(app);
    const late = await ask(t, "answered late");
    const gone = await ask(t, "never answered");
    now += 49 * H;
    beforeDelete = async () => {
      // A late write of `late` (as an answer would be) after the sweep read it: a new version.
      const key = pendingKey(t.tenant, t.ws, late);
      const rec = JSON.parse(await (await r2.get(key))!.body.pipeThrough(new TextDecoderStream()).getReader().read().then((r) => r.value ?? "")) as PendingRecord;
      await r2.put(key, JSON.stringify({ ...rec, status: "done", answer: { by: "k", at: new Date(now).toISOString(), answer: "late" }, outcome: { ok: true, title: "t", output: "late", data: {} } }), { contentType: "application/json" });
    };
    expect(await listIds(t)).toEqual([]);
    expect(beforeDelete).toBeNull(); // the sweep did try to delete
    expect(await stored(t, gone)).toBe(false);
    expect(await stored(t, late)).toBe(true);
    const g = await t.req(`/v1/workspaces/${t.ws}/pending/${late}`);
    expect(((await g.json()) as any).answer.answer).toBe("late");
  });

  it("one sweep deletes at most `max` records; the next one goes on", async () => {
    const tenant = `t-${randomId(8)}`;
    const s = { driver: r2, tenant, workspace: "main" };
    for (let i = 0; i < 5; i++) await createPending(s, { kind: "input", tool: "ask_user", args: {}, question: `q${i}`, session: "s", key_id: "k", scopes: ["read"] });
    const prefix = `t/${tenant}/w/main/x/pending/`;
    const count = async () => (await r2.list({ prefix })).objects.length;
    expect(await count()).toBe(5);
    const sweep = () => sweepRecords<PendingRecord>({ driver: r2, prefix, now: Date.now() + 100 * H, isStale: (r, n) => isSweepable(r, n), max: 3 });
    expect((await sweep()).length).toBe(3);
    expect(await count()).toBe(2);
    expect((await sweep()).length).toBe(2);
    expect(await count()).toBe(0);
  });
});

describe("task records are swept", () => {
  const task = (id: string, deadline: number, status: TaskRecord["status"] = "completed"): TaskRecord => ({
    task_id: id, status, answer: "", steps: 1, files_changed: [], call_ids: [], pending_ids: [], usage: { prompt_tokens: 0, completion_tokens: 0 },
    created_at: new Date(deadline - 600_000).toISOString(), deadline: new Date(deadline).toISOString(),
  });

  it("ended more than 24 h ago (finished or lost while running): gone; recent ones and tenant B's stay", async () => {
    const now = Date.now() + 100 * H; // the records were written "now" (real time); the sweep's clock is 100 h on
    const a = { driver: r2, tenant: `t-${randomId(8)}`, workspace: "main" };
    const b = { ...a, tenant: `t-${randomId(8)}` };
    const ids = { old: `task_${randomId(20)}`, lost: `task_${randomId(20)}`, recent: `task_${randomId(20)}`, running: `task_${randomId(20)}` };
    await saveTask(a, task(ids.old, now - 30 * H));
    await saveTask(a, task(ids.lost, now - 25 * H, "running"));
    await saveTask(a, task(ids.recent, now - 23 * H, "failed"));
    await saveTask(a, task(ids.running, now + 60_000, "running"));
    await saveTask(b, task(ids.old, now - 30 * H));
    const deleted = await sweepTasks(a, now);
    expect(deleted.sort()).toEqual([taskKey(a.tenant, "main", ids.old), taskKey(a.tenant, "main", ids.lost)].sort());
    const has = async (s: typeof a, id: string) => (await r2.head(taskKey(s.tenant, "main", id))) !== null;
    expect(await has(a, ids.old)).toBe(false);
    expect(await has(a, ids.lost)).toBe(false);
    expect(await has(a, ids.recent)).toBe(true);
    expect(await has(a, ids.running)).toBe(true);
    expect(await has(b, ids.old)).toBe(true);
  });
});
