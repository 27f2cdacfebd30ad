/**
 * kill_shell on a background task its starting key's revocation stopped reads the true reason
 * (killed_by "key_gone"), as bash_output does: before (until 2026-12-02) it said the task "had already
 * ended (it finished, reached its deadline, or an earlier kill_shell stopped it)". The real app
 * (memory storage) with the real sandbox (local executor, bubblewrap); another key of the tenant asks.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ADMIN, sandboxApp, type Tenant } from "../lib/doors/sandbox-app.js";
import { hostPids, until } from "../infra/container/live-helpers.js";

const { post, tenant, close } = sandboxApp();
let t: Tenant;
beforeAll(async () => {
  t = await tenant("killgone");
});
afterAll(close);

it("kill_shell on a task stopped because its key was revoked says so, in the output and in data.killed_by", async () => {
  const made = (await post("/v1/admin/tenants/killgone/keys", { name: "doomed" }, ADMIN)).body as { key: string; key_id: string };
  const started = await post("/v1/workspaces/main/tools/bash", { command: "sleep 7654361", run_in_background: true }, made.key);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const task_id = started.body.data.task_id as string;
  await until(() => hostPids("sleep 7654361").length > 0, "the task running");
  expect((await post(`/v1/admin/tenants/killgone/keys/${made.key_id}`, undefined, ADMIN, "DELETE")).status).toBe(200);
  // Another key waits for its end: stored killed, for the key.
  const read = await post("/v1/workspaces/main/tools/bash_output", { task_id, wait: true, timeout: 60 }, t.key);
  expect(read.body.data).toMatchObject({ status: "killed", killed_by: "key_gone" });

  const kill = await post("/v1/workspaces/main/tools/kill_shell", { task_id }, t.key);
  expect(kill.status, JSON.stringify(kill.body)).toBe(200);
  expect(kill.body.data).toEqual({ task_id, status: "already_completed", killed_by: "key_gone" });
  expect(kill.body.output).toContain(`Task ${task_id} had already been stopped because the API key that started it was revoked or expired (killed_by: "key_gone"), not by this call`);
  expect(kill.body.output).not.toContain("it finished, reached its deadline, or an earlier kill_shell stopped it");
}, 120_000);
