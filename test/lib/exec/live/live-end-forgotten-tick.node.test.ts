/**
 * A forgotten live end (its coordinator reset, its runner cut off before it could report: to the API, crashed
 * too) billed without any call past concurrent_runs, through the real app and the real runner (local executor,
 * bubblewrap): by the scheduled tick once its marker is older than a sandbox's lease (lib/runtime/housekeeping.ts,
 * lib/exec/live/forgotten-end.ts sweepForgottenEnds), and by its workspace's delete before the marker goes with
 * the workspace (lib/exec/workspace-gone.ts). Once each: a second tick and the runner's `ended`, arriving after
 * all, bill nothing more. Before (2026-12-02) a tenant that never reached its limit was never billed for it (its
 * marker stayed), and a deleted workspace's was never billed at all.
 */
import { afterAll, expect, it } from "vitest";
import { appLiveService } from "../../../../lib/api/live-events.js";
import { liveLeaseMs } from "../../../../lib/exec/live/service.js";
import { liveMarkersPrefix } from "../../../../lib/layout/live-markers.js";
import { workspacePrefix } from "../../../../lib/layout/paths.js";
import { listAudit } from "../../../../lib/run/audit/store.js";
import { housekeepingTick } from "../../../../lib/runtime/housekeeping.js";
import { LIVE_MAX_LIFE_MS } from "../../../../lib/sync/live-types.js";
import { sandboxApp } from "../../doors/sandbox-app.js";
import { cutOffRunner } from "./cut-off-runner.js";
import { sessionCalls } from "./session-calls.js";

const runner = cutOffRunner();
const { app, deps, storage, tenant, usage, call, close } = sandboxApp({ liveCoordinator: runner.coordinator }, runner.runnerFetch);
afterAll(close);

/** The scheduled tick with the app's live service, its clock `ahead` ms from now; the tick's log lines. */
async function tick(ahead: number): Promise<string[]> {
  const lines: string[] = [];
  await housekeepingTick({ storage, kv: deps.kv, live: appLiveService(deps) }, {}, { now: () => Date.now() + ahead, maxTenants: 10_000, log: (l) => lines.push(l) });
  return lines;
}

/** A live sandbox in session s1 of `t`'s main, then the reset and the runner cut off: an end nobody reported. */
async function forgottenSandbox(t: { id: string; key: string }): Promise<number> {
  const started = Date.now();
  runner.reconnect(); // a test before may have left it cut off
  expect(await sessionCalls(call, t.key, "s1").bash({ command: "true", keep_alive: true, idle_timeout_s: 60 })).toContain("[live sandbox started");
  expect((await storage.list({ prefix: liveMarkersPrefix(t.id, "main") })).objects).toHaveLength(1);
  await runner.forgetAndCutOff();
  return started;
}

const records = (tenant: string) => usage.filter((u) => u.tenant === tenant && u.route?.startsWith("live sandbox"));

it("the scheduled tick bills a forgotten end once its marker is past a sandbox's lease, whatever the tenant's limit; once", async () => {
  const t = await tenant("forgotten-tick");
  await forgottenSandbox(t);
  const markers = async () => (await storage.list({ prefix: liveMarkersPrefix(t.id, "main") })).objects.length;

  await tick(0); // young: its runner may still live, its slot's lease still runs
  expect(records(t.id)).toEqual([]);
  expect(await markers()).toBe(1);

  const lines = await tick(liveLeaseMs(LIVE_MAX_LIFE_MS) + 1000);
  expect(records(t.id)).toEqual([expect.objectContaining({ route: "live sandbox", tenant: t.id, workspace: "main", ok: true, bytes_read: 0, sandbox_ms: LIVE_MAX_LIFE_MS })]);
  expect(await markers()).toBe(0);
  expect(lines.find((l) => l.includes(`"gc":"${t.id}"`))).toContain(`"live_ends_billed":1`);
  const audit = await listAudit(storage, { tenant: t.id, workspace: "main" }, { limit: 200 });
  expect(audit.entries.filter((e) => e.route === "live sandbox end").map((e) => e.args)).toEqual([expect.objectContaining({ reason: "crashed", wall_ms: LIVE_MAX_LIFE_MS })]);

  await tick(liveLeaseMs(LIVE_MAX_LIFE_MS) + 2000);
  const late = runner.reconnect()!;
  expect((await app.request(late.url, late.init)).status).toBe(204); // its runner's ended after all
  expect(records(t.id).map((u) => u.route)).toEqual(["live sandbox"]);
}, 60_000);

it("a workspace's delete bills its forgotten end before the marker goes with it, and the runner's late ended bills nothing more", async () => {
  const t = await tenant("forgotten-delete");
  const started = await forgottenSandbox(t);
  const r = await call("/v1/workspaces/main", { method: "DELETE" }, t.key);
  expect(r.status, await r.clone().text()).toBe(200);
  const ends = records(t.id);
  expect(ends).toEqual([expect.objectContaining({ route: "live sandbox", tenant: t.id, workspace: "main", ok: true })]);
  expect(ends[0]!.sandbox_ms).toBeGreaterThan(0);
  expect(ends[0]!.sandbox_ms).toBeLessThanOrEqual(Date.now() - started); // from its marker to the delete
  expect((await storage.list({ prefix: workspacePrefix(t.id, "main") })).objects.map((o) => o.key)).toEqual([]); // its end mark went with it, and no audit entry came

  const late = runner.reconnect()!;
  expect((await app.request(late.url, late.init)).status).toBe(204);
  expect(records(t.id).map((u) => u.route)).toEqual(["live sandbox"]);
}, 60_000);
