/**
 * A live sandbox whose coordinator was reset (a deploy, a restart) and whose runner never reported its end
 * (cut off from the API: to the API, crashed too), through the real app and the real runner (local executor,
 * bubblewrap). Its end is billed once, from its marker, by the first call that finds concurrent_runs full
 * (lib/exec/live/forgotten-end.ts): one "live sandbox" record from its start to then, its audit end entry, its
 * marker deleted, its slot freed; the runner's `ended`, arriving after all, bills nothing more. Before
 * (2026-12-02) the slot was freed but the end never billed: no record, no audit end entry, the marker left.
 */
import { afterAll, expect, it } from "vitest";
import { liveMarkersPrefix } from "../../../../lib/layout/live-markers.js";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { listAudit } from "../../../../lib/run/audit/store.js";
import { sandboxApp } from "../../doors/sandbox-app.js";
import { cutOffRunner } from "./cut-off-runner.js";
import { sessionCalls } from "./session-calls.js";

const runner = cutOffRunner();
const limits = memoryLimits();
const { app, storage, tenant, usage, call, close } = sandboxApp({ liveCoordinator: runner.coordinator, limits }, runner.runnerFetch);
afterAll(close);

it("a forgotten sandbox whose runner never reports: billed once from its marker by the call that finds its slot, not again at its late ended", async () => {
  const t = await tenant("live-end-forgotten");
  await limits.set(t.id, { concurrent_runs: 1 });
  const s1 = sessionCalls(call, t.key, "s1");
  const markers = async () => (await storage.list({ prefix: liveMarkersPrefix(t.id, "main") })).objects.length;
  const records = () => usage.filter((u) => u.tenant === t.id && u.route?.startsWith("live sandbox"));
  const before = Date.now();
  expect(await s1.bash({ command: "true", keep_alive: true, idle_timeout_s: 60 })).toContain("[live sandbox started");
  expect(await markers()).toBe(1);

  await runner.forgetAndCutOff(); // the reset, and the runner cut off: to the API, it never reports
  expect(records()).toEqual([]);

  // Another session's fresh command finds the limit full: the forgotten sandbox's slot is freed and its end billed.
  expect(await sessionCalls(call, t.key, "s2").bash({ command: "echo fresh", keep_alive: false })).toContain("fresh");
  const ends = records();
  expect(ends).toEqual([expect.objectContaining({ route: "live sandbox", tenant: t.id, workspace: "main", ok: true, bytes_read: 0 })]);
  expect(ends[0]!.sandbox_ms).toBeGreaterThan(0);
  expect(ends[0]!.sandbox_ms).toBeLessThanOrEqual(Date.now() - before);
  expect(await markers()).toBe(0);
  const audit = await listAudit(storage, { tenant: t.id, workspace: "main" }, { limit: 200 });
  expect(audit.entries.filter((e) => e.door === "runner").map((e) => e.route).sort()).toEqual(["live sandbox end", "live sandbox start"]);

  // Its runner's ended, arriving after all (sent again as it was sent): nothing more.
  const late = runner.reconnect()!;
  expect((await app.request(late.url, late.init)).status).toBe(204);
  expect(records().map((u) => u.route)).toEqual(["live sandbox"]);
  expect((await listAudit(storage, { tenant: t.id, workspace: "main" }, { limit: 200 })).entries.filter((e) => e.route === "live sandbox end")).toHaveLength(1);
}, 60_000);
