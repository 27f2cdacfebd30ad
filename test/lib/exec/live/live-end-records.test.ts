/**
 * A live sandbox's end records (lib/api/live-events.ts) are written under the waitUntil of the
 * request that learned of the end, as every record after an answer is (lib/shared/after-answer.ts):
 * the usage record through the sink's held write, never the at-once one outside every waitUntil
 * (workerd may cancel that store write with the request). Before (2026-12-02) the end's usage record
 * went to the at-once sink whatever the request's context.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { listAudit } from "../../../../lib/run/audit/store.js";
import type { UsageRecord } from "../../../../lib/run/metering/record.js";
import type { UsageSink } from "../../../../lib/run/metering/usage.js";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import { executionContext, newTenant, UNGATED } from "../../../helpers.js";
import { liveApp, okOutput } from "./live-app.js";

it("DELETE .../sandbox on Workers: the end's usage record and audit entry are written under the request's waitUntil, after its answer", async () => {
  const atOnce: UsageRecord[] = [];
  const held: UsageRecord[] = [];
  const onUsage: UsageSink = Object.assign((u: UsageRecord) => void atOnce.push(u), { held: async (u: UsageRecord) => void held.push(u) });
  const { app } = liveApp({}, { onUsage });
  const t = await newTenant(app, UNGATED);
  okOutput(await t.call("bash", { command: "start", keep_alive: true, timeout: 2 }, "chat-1"));
  const { ctx, settle } = executionContext();
  const d = await app.request(`/v1/workspaces/${t.ws}/sessions/chat-1/sandbox`, { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } }, {}, ctx);
  expect(d.status).toBe(200);
  const live = (rs: UsageRecord[]) => rs.filter((u) => u.route === "live sandbox");
  expect(live(atOnce)).toEqual([]); // never handed to the sink outside the waitUntil
  await settle();
  expect(live(held)).toEqual([expect.objectContaining({ tenant: t.tenant, workspace: t.ws, ok: true })]);
  expect(live(atOnce)).toEqual([]);
  const audit = await listAudit(r2Driver(env.FILES), { tenant: t.tenant, workspace: t.ws }, { limit: 200 });
  expect(audit.entries.filter((e) => e.door === "runner").map((e) => e.route)).toEqual(["live sandbox start", "live sandbox end"]);
});
