/**
 * The API's refusal of a sync route reaches the model as the API wrote it (lib/sync/refusal.ts): the
 * real runner and bubblewrap sandbox, its sync requests through app A; app B, over the same storage
 * and KV, deletes the workspace and makes it again while A still knows the old record (5 s:
 * lib/api/routes/known-workspace.ts). A's bash call then runs with a token of the old workspace, and
 * its sync routes refuse it. Before, the runner read the 404 as "an older API without this route",
 * fell back to the paged manifest, and the call answered 500 INTERNAL "Workspace sync failed
 * (manifest): HTTP 404 {...}".
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools as fileTools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import type { AppDeps } from "../../../lib/api/deps.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { missingRoute, noSyncRoute, syncRefusal } from "../../../lib/sync/refusal.js";
import { RUNNER_APP_ADMIN, runnerApp } from "../../support/runner-app.js";

describe("a sync route's refusal, as the model reads it", () => {
  const storage = memoryDriver();
  const kv = storageKeyValue(memoryDriver(), "kv/");
  let a: Awaited<ReturnType<typeof runnerApp>>;
  let b: ReturnType<typeof createApp>;
  const call = async (app: { request: (p: string, i: RequestInit) => Response | Promise<Response> }, path: string, init: RequestInit = {}) => {
    const r = await app.request(path, { ...init, headers: { authorization: `Bearer ${a.key}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
    return { status: r.status, body: (await r.json()) as any };
  };

  beforeAll(async () => {
    a = await runnerApp({ storage, deps: { kv } });
    b = createApp({ storage, kv, adminToken: RUNNER_APP_ADMIN, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal" } as AppDeps, fileTools);
  });
  afterAll(() => a?.close());

  it("a workspace deleted and made again through another app within the record's 5 s: bash answers NOT_FOUND with the API's own message; nothing is written into the new one", async () => {
    const first = await call(a.app, "/v1/workspaces/main/tools/bash", { method: "POST", body: JSON.stringify({ command: "echo one > one.txt" }) });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect((await call(b, "/v1/workspaces/main", { method: "DELETE" })).status).toBe(200);
    expect((await call(b, "/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "main" }) })).status).toBe(201);

    const r = await call(a.app, "/v1/workspaces/main/tools/bash", { method: "POST", body: JSON.stringify({ command: "echo two > two.txt" }) });
    expect(r.body.ok).toBe(false);
    expect(r.body.error.code, JSON.stringify(r.body)).toBe("NOT_FOUND");
    expect(r.status).toBe(404);
    expect(r.body.error.message).toMatch(/^Workspace main no longer exists \(it was deleted, perhaps made again since this run started\); nothing (was read or written back|of the run is kept)\.$/);
    expect(JSON.stringify(r.body)).not.toMatch(/Workspace sync failed|HTTP 404|\\"ok\\"/);
    expect(r.body.error.details.workspace).toBe("main");

    // The workspace made again holds nothing of either run.
    const ls = await call(b, "/v1/workspaces/main/files/?recursive=true");
    expect(ls.body.entries).toEqual([]);
  });
});

describe("syncRefusal: what a refused sync answer becomes", () => {
  const envelope = (code: string, message: string, details: Record<string, unknown> = {}) => JSON.stringify({ ok: false, error: { code, message, details } });

  it("hands on the API's refusals the model can act on: code, message, details and the sync answer's status", () => {
    for (const [status, code] of [[404, "NOT_FOUND"], [409, "CONFLICT"], [413, "QUOTA_EXCEEDED"], [429, "RATE_LIMITED"], [409, "BUSY"]] as const) {
      const e = syncRefusal(status, envelope(code, `clear ${code}`, { quota: "q" }), "Workspace sync failed (manifest)");
      expect([e.code, e.message, e.details]).toEqual([code, `clear ${code}`, { quota: "q", status }]);
    }
  });

  it("keeps the sync token's own refusal (401, 403) INTERNAL, a 5xx UNAVAILABLE, and anything not an actionable envelope INTERNAL", () => {
    expect(syncRefusal(401, envelope("UNAUTHORIZED", "Missing, invalid or expired sync token."), "x").code).toBe("INTERNAL");
    expect(syncRefusal(403, envelope("NOT_FOUND", "sneaky"), "x").code).toBe("INTERNAL");
    expect(syncRefusal(503, envelope("NOT_FOUND", "gone"), "x").code).toBe("UNAVAILABLE");
    expect(syncRefusal(400, envelope("INVALID_ARGUMENT", "bad query"), "x").code).toBe("INTERNAL");
    expect(syncRefusal(404, "<html>not found</html>", "Workspace sync failed (fetch)").message).toBe("Workspace sync failed (fetch): HTTP 404 <html>not found</html>");
    expect(syncRefusal(404, envelope("NOT_FOUND", noSyncRoute("POST", "/v1/sync/stage").message), "x").code).toBe("INTERNAL");
    expect(syncRefusal(404, envelope("WHATEVER", "m"), "x").code).toBe("INTERNAL");
  });

  it("tells a route the API does not serve (an older API) from a refusal by the route", () => {
    expect(missingRoute(405, "")).toBe(true);
    expect(missingRoute(404, "Not Found")).toBe(true);
    expect(missingRoute(404, envelope("NOT_FOUND", noSyncRoute("POST", "/v1/sync/manifest").message))).toBe(true);
    expect(missingRoute(404, envelope("NOT_FOUND", "Workspace main no longer exists (…)", { workspace: "main" }))).toBe(false);
    expect(missingRoute(413, envelope("QUOTA_EXCEEDED", "full"))).toBe(false);
  });
});
