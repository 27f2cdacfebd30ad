/**
 * What a key started ends with it (docs/tenant-keys.md, "How soon a revocation takes effect"): a
 * background task and a command running in a live sandbox, each `sleep 15; echo done > f`, the key
 * revoked 2 s in. The task's runner learns it at its next kill check (about every second), the live
 * command's at its kill check from 4 s on (lib/sync/starting-key.ts): the process is killed long
 * before its 15 s (so too a task whose key expires meanwhile), f is never written, the task's
 * background_tasks place and the sandbox's concurrent_runs slot are free for another key, and another
 * key reading the task with bash_output is told why it was killed. The real app (memory storage, the
 * in-memory coordinator with the production timings) and the real runner in bubblewrap.
 *
 * Each case has a tenant of its own (its own keys, places and slots), so the three run at once: each
 * waits out its command's own 15 s to see nothing was written, and waiting once is enough.
 */
import { afterAll, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../lib/exec/live/service.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { ADMIN, sandboxApp, type Tenant } from "../doors/sandbox-app.js";
import { hostPids, until } from "../../infra/container/live-helpers.js";

const limits = memoryLimits();
const coordinator = memoryLiveCoordinator(LIVE_TIMINGS);
const { app, post, tenant, close } = sandboxApp({ liveCoordinator: coordinator, limits });
/** Sessions a case left live, ended after all. */
const live: { tenant: string; workspace: string; session: string }[] = [];

/**
 * A tenant of the case's own (concurrent_runs 1, background_tasks 1) and another key of it, with every
 * scope: it stands when the first is revoked.
 */
async function caseTenant(id: string): Promise<{ t: Tenant; other: string }> {
  const t = await tenant(id);
  const other = (await post(`/v1/admin/tenants/${t.id}/keys`, { name: "other" }, ADMIN)).body.key as string;
  await limits.set(t.id, { concurrent_runs: 1, background_tasks: 1 });
  return { t, other };
}

const fileStatus = async (key: string, path: string) => (await app.request(`/v1/workspaces/main/files/${path}`, { headers: { authorization: `Bearer ${key}` } })).status;

async function tool(key: string, name: string, args: unknown, session = "s1") {
  const r = await app.request(`/v1/workspaces/main/tools/${name}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
  return { status: r.status, body: (await r.json()) as any };
}

/** The tenant's key revoked `ms` after `from`; when it was. */
async function revokeAt(t: Tenant, from: number, ms: number): Promise<number> {
  await new Promise((r) => setTimeout(r, Math.max(0, from + ms - Date.now())));
  const at = Date.now();
  expect((await post(`/v1/admin/tenants/${t.id}/keys/${t.keyId}`, undefined, ADMIN, "DELETE")).status).toBeLessThan(300);
  return at;
}

afterAll(async () => {
  for (const s of live) await coordinator.end(s, "ended").catch(() => {});
  await close();
});

it.concurrent("a background task of a revoked key is killed within ~1 s, writes nothing back, frees its place and tells another key why", async () => {
  const { t, other } = await caseTenant("kgruns-bg");
  const SLEEPER = "sleep 15.0101";
  const started = Date.now();
  const bg = await tool(t.key, "bash", { command: `${SLEEPER}; echo done > f`, run_in_background: true });
  expect(bg.status, JSON.stringify(bg.body)).toBe(200);
  const task = bg.body.data.task_id as string;
  await until(() => hostPids(SLEEPER).length > 0, "the task's sleeper running");
  const revoked = await revokeAt(t, started, 2000);
  await until(() => hostPids(SLEEPER).length === 0, "the task's sleeper killed", 12_000);
  const killedMs = Date.now() - revoked;
  console.log(`background task: killed ${killedMs} ms after the revocation`);
  // The runner's kill check comes about every second; the revocation went through this isolate (no cache to lapse).
  expect(killedMs).toBeLessThan(5000);

  // Another key of the workspace reads it: killed, and why; nothing of it was written back.
  const out = await tool(other, "bash_output", { task_id: task, wait: true, timeout: 30 });
  expect(out.status, JSON.stringify(out.body)).toBe(200);
  expect(out.body.data).toMatchObject({ status: "killed", killed_by: "key_gone" });
  expect(out.body.output).toContain("the API key that started it was revoked or has expired");
  // The revoked key itself is refused.
  const own = await tool(t.key, "bash_output", { task_id: task });
  expect(own.status).toBe(401);
  // Its place is free (background_tasks: 1): another key's task starts.
  const next = await tool(other, "bash", { command: "echo next", run_in_background: true });
  expect(next.status, JSON.stringify(next.body)).toBe(200);
  await tool(other, "bash_output", { task_id: next.body.data.task_id, wait: true });
  // Past the command's own 15 s: f never came.
  await new Promise((r) => setTimeout(r, Math.max(0, started + 16_000 - Date.now())));
  expect(await fileStatus(other, "f")).toBe(404);
}, 90_000);

it.concurrent("a live sandbox's command of a revoked key is killed within a foreground command's bound, writes nothing back, and the sandbox ends", async () => {
  const { t, other } = await caseTenant("kgruns-live");
  live.push({ tenant: t.id, workspace: "main", session: "s2" }, { tenant: t.id, workspace: "main", session: "s3" });
  const SLEEPER = "sleep 15.0202";
  const up = await tool(t.key, "bash", { command: "echo up", keep_alive: true }, "s2");
  expect(up.status, JSON.stringify(up.body)).toBe(200);
  const started = Date.now();
  const call = tool(t.key, "bash", { command: `${SLEEPER}; echo done > g`, keep_alive: true }, "s2");
  await until(() => hostPids(SLEEPER).length > 0, "the live command's sleeper running");
  const revoked = await revokeAt(t, started, 2000);
  await until(() => hostPids(SLEEPER).length === 0, "the live command's sleeper killed", 12_000);
  const killedMs = Date.now() - started;
  console.log(`live command: killed ${killedMs} ms after it started, ${Date.now() - revoked} ms after the revocation`);
  // Its kill check from 4 s into the command, every second: long before its 15 s.
  expect(killedMs).toBeLessThan(8000);
  // The call answers the key_gone refusal, whether its own key watch (5 s) asked or not: the runner marks the result
  // killed_by "key_gone" and takeRun turns it into RunKilled (before 2026-12-02 a call under 5 s answered 200, the kill a note in stderr).
  const answer = await call;
  const said = JSON.stringify(answer.body);
  expect(answer.status, said).toBe(401);
  expect(answer.body.error).toMatchObject({ code: "UNAUTHORIZED", details: { refused_by: "key_gone" } });
  expect(answer.body.error.message).toContain("was revoked or has expired since it started");
  expect(answer.body.error.message).toContain("its command was killed and its file changes in the sandbox were dropped, not written back");

  // The sandbox ended, its slot free (concurrent_runs: 1): another key's live command runs.
  await until(async () => (await coordinator.status({ tenant: t.id, workspace: "main", session: "s2" })).sandbox === null, "the sandbox ended");
  const next = await tool(other, "bash", { command: "echo next", keep_alive: true }, "s3");
  expect(next.status, JSON.stringify(next.body)).toBe(200);
  await coordinator.end({ tenant: t.id, workspace: "main", session: "s3" }, "ended").catch(() => {});
  await new Promise((r) => setTimeout(r, Math.max(0, started + 16_000 - Date.now())));
  expect(await fileStatus(other, "g")).toBe(404);
}, 90_000);

it.concurrent("a background task of a key that expires meanwhile is killed at its runner's next check after the expiry, nothing written back", async () => {
  const { t, other } = await caseTenant("kgruns-exp");
  const expiresAt = Date.now() + 4000;
  const key = (await post(`/v1/admin/tenants/${t.id}/keys`, { name: "expiring", expires_at: new Date(expiresAt).toISOString() }, ADMIN)).body as { key: string };
  const SLEEPER = "sleep 15.0303";
  const started = Date.now();
  const bg = await tool(key.key, "bash", { command: `${SLEEPER}; echo done > h`, run_in_background: true });
  expect(bg.status, JSON.stringify(bg.body)).toBe(200);
  await until(() => hostPids(SLEEPER).length > 0, "the task's sleeper running");
  await until(() => hostPids(SLEEPER).length === 0, "the task's sleeper killed", 14_000);
  console.log(`background task: killed ${Date.now() - expiresAt} ms after its key's expiry`);
  expect(Date.now() - expiresAt).toBeLessThan(4000);
  const out = await tool(other, "bash_output", { task_id: bg.body.data.task_id, wait: true, timeout: 30 });
  expect(out.body.data).toMatchObject({ status: "killed", killed_by: "key_gone" });
  await new Promise((r) => setTimeout(r, Math.max(0, started + 16_000 - Date.now())));
  expect(await fileStatus(other, "h")).toBe(404);
}, 90_000);
