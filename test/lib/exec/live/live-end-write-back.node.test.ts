/**
 * The final write-back of a live sandbox whose end the API decided (DELETE .../sandbox): through the
 * real app, the in-memory coordinator and the real runner (local executor, bubblewrap). The end's
 * "live sandbox" record is made when the coordinator ends the generation, before the runner writes
 * back what its background processes changed since the last command; the runner's `ended` then bills
 * those bytes in a "live sandbox write-back" record, once: a create-only mark per generation
 * (lib/exec/live/final-write-back.ts) makes a replayed or doubled `ended` bill nothing more, and a runner
 * that reaches its own end (idle) bills them in its end record, never again on a replay. Before
 * (2026-12-02) the API-decided end's write-back reached no record: its `ended` was dropped as the last
 * word of a generation already ended.
 */
import { afterAll, expect, it } from "vitest";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import { billedMarkKey } from "../../../../lib/exec/live/markers.js";
import { housekeepRuns } from "../../../../lib/exec/tasks.js";
import { internalPrefix } from "../../../../lib/layout/paths.js";
import { sandboxApp } from "../../doors/sandbox-app.js";
import { until } from "../../../infra/container/live-helpers.js";
import { capturedPosts, sessionCalls } from "./session-calls.js";

/** Every `/v1/sync/live/ended` the runner posted, as it sent it (to be sent again). */
const { posts: endedPosts, wrap: capture } = capturedPosts("/v1/sync/live/ended");
const { app, storage, tenant, usage, call, close } = sandboxApp({ liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS) }, capture);
afterAll(close);

const liveRecords = (t: string) => usage.filter((u) => u.tenant === t && u.route?.startsWith("live sandbox"));
const replay = async (p: { url: string; init: RequestInit }) => (await app.request(p.url, p.init)).status;

async function session(id: string) {
  const t = await tenant(id);
  return { t, ...sessionCalls(call, t.key) };
}

it("DELETE .../sandbox: what a background process wrote after the last command is written back and billed once, however often the runner's ended is sent", async () => {
  const { t, bash, read } = await session("live-end-delete");
  expect(await bash({ command: "true", keep_alive: true, idle_timeout_s: 60 })).toContain("[live sandbox started");
  await bash({ command: "(sleep 1; printf 0123456789 > late.txt; sleep 600) >/dev/null 2>&1 &" });
  await new Promise((r) => setTimeout(r, 2500)); // the file is written; the process still runs

  const d = await call("/v1/workspaces/main/sessions/s1/sandbox", { method: "DELETE" }, t.key);
  expect(d.status, await d.clone().text()).toBe(200);
  const post = await until(() => endedPosts.find((p) => String(p.init.body).includes('"reason":"ended"')), "the runner's ended", 30_000);
  expect(await read("late.txt")).toBe("0123456789");
  const end = await until(() => liveRecords(t.id).find((u) => u.route === "live sandbox"), "the end's record");
  expect(end.sandbox_ms).toBeGreaterThan(0);
  const wb = await until(() => liveRecords(t.id).find((u) => u.route === "live sandbox write-back"), "the final write-back's record");
  expect(wb).toMatchObject({ tenant: t.id, workspace: "main", key: t.keyId, ok: true, bytes_read: 0 });
  expect(wb.bytes_written).toBeGreaterThanOrEqual(10);
  expect(wb.sandbox_ms).toBeUndefined(); // its time is the end record's

  // The runner's ended sent again, then twice at once (a retry; two isolates): nothing more is billed.
  expect(await replay(post)).toBe(204);
  expect((await Promise.all([replay(post), replay(post)])).every((s) => s === 204)).toBe(true);
  expect(liveRecords(t.id).map((u) => u.route).sort()).toEqual(["live sandbox", "live sandbox write-back"]);

  // The marks (the end billed, its write-back billed) are run records' `billed` objects, collected by the run records' housekeeping a day later.
  const runs = async () => (await storage.list({ prefix: `${internalPrefix(t.id, "main")}runs/` })).objects.map((o) => o.key);
  const k = { tenant: t.id, workspace: "main", session: "s1" };
  const generation = JSON.parse(String(post.init.body)).generation as string;
  expect((await runs()).sort()).toEqual([await billedMarkKey(k, generation, "end"), await billedMarkKey(k, generation, "write-back")].sort());
  await housekeepRuns(storage, t.id, "main", Date.now() + 26 * 3_600_000);
  expect(await runs()).toEqual([]);
}, 60_000);

it("a runner's own end (idle) bills its final write-back in its end record, and a replay of its ended bills nothing more", async () => {
  const { t, bash, read } = await session("live-end-idle");
  expect(await bash({ command: "true", keep_alive: true, idle_timeout_s: 10 })).toContain("[live sandbox started");
  await bash({ command: "(sleep 1; printf abcdefghij > idle.txt) >/dev/null 2>&1 &" });
  const post = await until(() => endedPosts.find((p) => String(p.init.body).includes('"reason":"idle"')), "the runner's ended", 30_000);
  const end = await until(() => liveRecords(t.id).find((u) => u.route === "live sandbox"), "the end's record");
  expect(await read("idle.txt")).toBe("abcdefghij");
  expect(end.bytes_written).toBeGreaterThanOrEqual(10);

  expect((await Promise.all([replay(post), replay(post)])).every((s) => s === 204)).toBe(true);
  expect(liveRecords(t.id).map((u) => u.route)).toEqual(["live sandbox"]);
}, 60_000);
