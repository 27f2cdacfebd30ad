/**
 * A live sandbox whose coordinator was reset (a deploy, a restart: its state lost) under it, through the
 * real app and the real runner (local executor, bubblewrap): its runner is told to end at its next poll,
 * writes back, and posts `ended` for a generation the coordinator no longer knows. That end is billed
 * once, from the runner's report (lib/exec/live/final-write-back.ts): one "live sandbox" record with its
 * time and its final write-back's bytes, its audit end entry, its marker deleted; a replayed `ended`
 * bills nothing more. Before (2026-12-02) it was dropped: no record, no audit end entry, the marker left.
 */
import { afterAll, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import type { LiveCoordinator } from "../../../../lib/exec/live/types.js";
import { liveMarkersPrefix } from "../../../../lib/layout/live-markers.js";
import { listAudit } from "../../../../lib/run/audit/store.js";
import { sandboxApp } from "../../doors/sandbox-app.js";
import { until } from "../../../infra/container/live-helpers.js";
import { capturedPosts, sessionCalls } from "./session-calls.js";

/** Polls held 1 s, so the runner meets the reset coordinator soon. */
const TIMINGS = { ...LIVE_TIMINGS, poll_ms: 1000 };
let current = memoryLiveCoordinator(TIMINGS);
/** The app's coordinator: the current one's methods; `reset` forgets every session, as a Durable Object's reset does. */
const coordinator = new Proxy({} as LiveCoordinator, { get: (_, m) => (...a: unknown[]) => (current as any)[m](...a) });
const reset = () => (current = memoryLiveCoordinator(TIMINGS));

const { posts: endedPosts, wrap: capture } = capturedPosts("/v1/sync/live/ended");
const { app, storage, tenant, usage, call, close } = sandboxApp({ liveCoordinator: coordinator }, capture);
afterAll(close);

it("a sandbox its coordinator forgot is billed once at its runner's end: its record (time and final write-back), its audit end entry, its marker deleted", async () => {
  const t = await tenant("live-end-reset");
  const { bash } = sessionCalls(call, t.key);
  const markers = async () => (await storage.list({ prefix: liveMarkersPrefix(t.id, "main") })).objects.length;
  const records = () => usage.filter((u) => u.tenant === t.id && u.route?.startsWith("live sandbox"));
  expect(await bash({ command: "true", keep_alive: true, idle_timeout_s: 60 })).toContain("[live sandbox started");
  await bash({ command: "(sleep 1; printf 0123456789 > late.txt; sleep 600) >/dev/null 2>&1 &" });
  await new Promise((r) => setTimeout(r, 2500));
  expect(await markers()).toBe(1);

  reset();
  const post = await until(() => endedPosts.find((p) => String(p.init.body).includes('"reason":"replaced"')), "the runner's ended", 30_000);
  const end = await until(() => records().find((u) => u.route === "live sandbox"), "the end's record");
  expect(end).toMatchObject({ tenant: t.id, workspace: "main", key: t.keyId, ok: true, bytes_read: 0 });
  expect(end.sandbox_ms).toBeGreaterThan(2500);
  expect(end.bytes_written).toBeGreaterThanOrEqual(10); // the final write-back: late.txt
  expect(await (await call("/v1/workspaces/main/files/late.txt", {}, t.key)).text()).toBe("0123456789");
  await until(async () => (await markers()) === 0, "the marker deleted");
  const audit = await listAudit(storage, { tenant: t.id, workspace: "main" }, { limit: 200 });
  expect(audit.entries.filter((e) => e.door === "runner").map((e) => e.route).sort()).toEqual(["live sandbox end", "live sandbox start"]);

  // Sent again, and twice at once: nothing more.
  for (const n of [1, 2]) expect((await Promise.all(Array.from({ length: n }, async () => (await app.request(post.url, post.init)).status))).every((s) => s === 204)).toBe(true);
  expect(records().map((u) => u.route)).toEqual(["live sandbox"]);
  expect((await listAudit(storage, { tenant: t.id, workspace: "main" }, { limit: 200 })).entries.filter((e) => e.route === "live sandbox end")).toHaveLength(1);
}, 60_000);
