/**
 * The audit entry the route guard writes for a tool call that did not run (a replay of its
 * Idempotency-Key, a refusal before the tool) records the call's arguments as the run's own entry
 * does (lib/run/audit/entry.ts toolCallArgs): the tool's arguments summarized, nothing of the route
 * (its `ws` parameter, the body's size). Before (2026-12-02) the two entries of one keyed write had
 * different `args`: `{file_path, content_bytes}` and `{ws, file_path, content_bytes, body_bytes}`.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { listAudit } from "../../../lib/run/audit/store.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import { newTenant, testApp, UNGATED } from "../../helpers.js";

it("a replayed keyed write: its entry's args have the shape of the run's own entry", async () => {
  const t = await newTenant(testApp(), UNGATED);
  const write = () =>
    t.req(`/v1/workspaces/${t.ws}/tools/write`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1", "idempotency-key": "k-audit-1" }, body: JSON.stringify({ file_path: "a.txt", content: "hello\n" }) });
  expect((await write()).status).toBe(200);
  const again = await write();
  expect(again.status).toBe(200);
  expect(again.headers.get("idempotent-replayed")).toBe("true");
  const log = await listAudit(r2Driver(env.FILES), { tenant: t.tenant, workspace: t.ws }, { limit: 200 });
  const writes = log.entries.filter((e) => e.tool === "write");
  expect(writes).toHaveLength(2);
  const [ran, replayed] = writes;
  expect(replayed!.outcome.replayed).toBe(true);
  expect(ran!.args).toEqual({ file_path: "a.txt", content_bytes: 6 });
  expect(replayed!.args).toEqual(ran!.args);
});
