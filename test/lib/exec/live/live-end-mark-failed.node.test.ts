/**
 * A live sandbox's end whose end mark cannot be made (storage failing: lib/exec/live/markers.ts billOnce) is
 * billed once, never twice: through the real app, the in-memory coordinator and the real runner (local
 * executor, bubblewrap). The accounting that cannot make the mark bills nothing and leaves the end as one
 * nobody accounted (its marker and its concurrent_runs lease kept: service.ts accountEnds); once storage
 * answers, the first call past the limit bills it from its marker (forgotten-end.ts), and the runner's
 * `ended`, sent again, bills nothing more. Before (2026-12-02) the DELETE's accounting billed the end
 * without its mark, and the runner's `ended` billed it again: two records.
 *
 * And a mark's PUT that landed though its answer was lost is the caller's own at its next try (its token
 * read back): billed once, not zero times, nor twice.
 */
import { afterAll, expect, it } from "vitest";
import { billedMarkKey, billOnce } from "../../../../lib/exec/live/markers.js";
import { memoryLiveCoordinator } from "../../../../lib/exec/live/memory.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import { liveMarkersPrefix } from "../../../../lib/layout/live-markers.js";
import { memoryLimits } from "../../../../lib/limits/store.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import type { StorageDriver } from "../../../../lib/storage/types.js";
import { sandboxApp } from "../../doors/sandbox-app.js";
import { until } from "../../../infra/container/live-helpers.js";
import { capturedPosts, sessionCalls } from "./session-calls.js";

/** Storage whose puts of the keys in `refused` fail before landing, and of those in `lost` land, then fail (the answer lost), once each. */
function failingPuts(inner: StorageDriver) {
  const refused = new Set<string>();
  const lost = new Set<string>();
  const driver: StorageDriver = {
    ...inner,
    async put(k, b, o) {
      if (refused.has(k)) throw new Error("storage unavailable (the test's)");
      const put = await inner.put(k, b, o);
      if (lost.delete(k)) throw new Error("connection reset after the put landed (the test's)");
      return put;
    },
  };
  return { driver, refused, lost };
}

const storage = failingPuts(memoryDriver());
const limits = memoryLimits();
const { posts: endedPosts, wrap: capture } = capturedPosts("/v1/sync/live/ended");
const { app, tenant, usage, call, close } = sandboxApp({ liveCoordinator: memoryLiveCoordinator(LIVE_TIMINGS), limits, storage: storage.driver }, capture);
afterAll(close);

it("DELETE .../sandbox with its end mark failing: nothing billed then, billed once from its marker when its slot is found, not again at its runner's ended", async () => {
  const t = await tenant("live-end-mark-failed");
  await limits.set(t.id, { concurrent_runs: 1 });
  const { bash } = sessionCalls(call, t.key, "s1");
  const ends = () => usage.filter((u) => u.tenant === t.id && u.route === "live sandbox");
  const markers = async () => (await storage.driver.list({ prefix: liveMarkersPrefix(t.id, "main") })).objects.length;
  expect(await bash({ command: "true", keep_alive: true, idle_timeout_s: 60 })).toContain("[live sandbox started");
  const view = (await (await call("/v1/workspaces/main/sessions/s1/sandbox", {}, t.key)).json()) as { generation: string };
  storage.refused.add(await billedMarkKey({ tenant: t.id, workspace: "main", session: "s1" }, view.generation, "end"));

  const d = await call("/v1/workspaces/main/sessions/s1/sandbox", { method: "DELETE" }, t.key);
  expect(d.status, await d.clone().text()).toBe(200);
  const post = await until(() => endedPosts.find((p) => String(p.init.body).includes('"reason":"ended"')), "the runner's ended", 30_000);
  expect(ends()).toEqual([]); // neither the DELETE's accounting nor the runner's ended could make the mark: neither billed
  expect(await markers()).toBe(1); // left as an end nobody accounted

  storage.refused.clear();
  // Another session's fresh command finds the limit full (the lease was kept): the end is billed from its marker, the slot freed.
  expect(await sessionCalls(call, t.key, "s2").bash({ command: "echo fresh", keep_alive: false })).toContain("fresh");
  expect(ends()).toEqual([expect.objectContaining({ tenant: t.id, workspace: "main", ok: true })]);
  expect(await markers()).toBe(0);
  expect((await app.request(post.url, post.init)).status).toBe(204); // the runner's ended again
  expect(ends()).toHaveLength(1);
}, 60_000);

it("a mark's PUT that landed though its answer was lost: the next try finds its own token, billed once", async () => {
  const key = { tenant: "mark-lost-answer", workspace: "main", session: "s1" };
  const mark = await billedMarkKey(key, "g_lostanswer", "end");
  storage.lost.add(mark);
  expect(await billOnce(storage.driver, key, "g_lostanswer", "end")).toBe(true);
  expect(await billOnce(storage.driver, key, "g_lostanswer", "end")).toBe(false);
});
