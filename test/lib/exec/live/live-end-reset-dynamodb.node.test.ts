/**
 * "A reset sandbox's end" (docs/live-sessions.md) on the DynamoDB coordinator (dynalite), through the real
 * app and the real runner (local executor, bubblewrap): the session's item becomes unreadable (its state
 * sealed under a sync secret since rotated, which the coordinator takes for a session starting anew, as a
 * Durable Object's reset), its runner is told to end at its next poll, and its `ended` is billed once from
 * its report: one "live sandbox" record, its audit end entry, its marker deleted; sent again, nothing more.
 * The memory coordinator's is live-end-reset.node.test.ts; before 2026-12-02 DynamoDB's had no such test.
 */
import { afterAll, expect, it } from "vitest";
import { dynamoLiveCoordinator } from "../../../../lib/exec/live/dynamodb.js";
import { LIVE_TIMINGS } from "../../../../lib/exec/live/service.js";
import type { LiveCoordinator } from "../../../../lib/exec/live/types.js";
import { liveMarkersPrefix } from "../../../../lib/layout/live-markers.js";
import { listAudit } from "../../../../lib/run/audit/store.js";
import { dynamoTableForFile } from "../../../support/dynalite-table.js";
import { sandboxApp } from "../../doors/sandbox-app.js";
import { until } from "../../../infra/container/live-helpers.js";
import { capturedPosts, sessionCalls } from "./session-calls.js";

/** Polls held 1 s, so the runner meets the reset coordinator soon. */
const TIMINGS = { ...LIVE_TIMINGS, poll_ms: 1000 };
const db = dynamoTableForFile();
const over = (secret: string) => dynamoLiveCoordinator({ client: db.server.client(), table: db.table, secret, timings: TIMINGS });
let current: LiveCoordinator | undefined;
/** The app's coordinator: the current one's methods; the reset rotates the secret its items are sealed under. */
const coordinator = new Proxy({} as LiveCoordinator, { get: (_, m) => (...a: unknown[]) => ((current ??= over("live-item-secret-before-0123456789")) as any)[m](...a) });

const { posts: endedPosts, wrap: capture } = capturedPosts("/v1/sync/live/ended");
const { app, storage, tenant, usage, call, close } = sandboxApp({ liveCoordinator: coordinator }, capture);
afterAll(close);

it("DynamoDB: a sandbox whose item no longer opens is billed once at its runner's end, from its report", async () => {
  const t = await tenant("live-end-reset-ddb");
  const { bash } = sessionCalls(call, t.key);
  const markers = async () => (await storage.list({ prefix: liveMarkersPrefix(t.id, "main") })).objects.length;
  const records = () => usage.filter((u) => u.tenant === t.id && u.route === "live sandbox");
  expect(await bash({ command: "true", keep_alive: true, idle_timeout_s: 60 })).toContain("[live sandbox started");
  expect(await markers()).toBe(1);

  current = over("live-item-secret-after-9876543210"); // the reset: the session's item is sealed under the old secret
  const post = await until(() => endedPosts.find((p) => String(p.init.body).includes('"reason":"replaced"')), "the runner's ended", 30_000);
  const end = await until(() => records()[0], "the end's record");
  expect(end).toMatchObject({ tenant: t.id, workspace: "main", key: t.keyId, ok: true, bytes_read: 0 });
  expect(end.sandbox_ms).toBeGreaterThan(0);
  await until(async () => (await markers()) === 0, "the marker deleted");
  const audit = await listAudit(storage, { tenant: t.id, workspace: "main" }, { limit: 200 });
  expect(audit.entries.filter((e) => e.door === "runner").map((e) => e.route).sort()).toEqual(["live sandbox end", "live sandbox start"]);

  for (const n of [1, 2]) expect((await Promise.all(Array.from({ length: n }, async () => (await app.request(post.url, post.init)).status))).every((s) => s === 204)).toBe(true);
  expect(records()).toHaveLength(1);
  // The session goes on: its next keep_alive call starts a new sandbox in the new coordinator.
  expect(await bash({ command: "true", keep_alive: true, idle_timeout_s: 60 })).toContain("[live sandbox started");
  await call("/v1/workspaces/main/sessions/s1/sandbox", { method: "DELETE" }, t.key);
}, 60_000);
