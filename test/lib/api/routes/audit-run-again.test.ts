/**
 * One call, one audit entry and one usage record, even when the tool route runs the call a second
 * time inside (lib/api/routes/known-workspace.ts): a write or edit on a workspace record this isolate
 * knows takes its file's version from the isolate (lib/workspace/version-cache.ts); when that version
 * is stale the try is refused and the call runs again on storage. The try used to leave an entry of
 * its own (INTERNAL 500 beside the 200 the caller got; found by the adversary round).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { durableUsageStore, type UsageObjects } from "../../../../lib/run/metering/durable-store.js";
import { heldUsageStore } from "../../../../lib/run/metering/held-store.js";
import { admin, newTenant, testApp, upload, UNGATED, type Tenant } from "../../../helpers.js";

const store = durableUsageStore(env.USAGE as unknown as UsageObjects);
const json = { "content-type": "application/json" };

/** An app ("isolate") whose usage goes to the Durable Object store that GET /v1/usage reads. */
function isolate() {
  const sink = heldUsageStore(store, { log: false, holdMs: 0 });
  return { app: testApp({ usageStore: store, onUsage: sink }), settled: () => sink.settled() };
}

/** `t`'s key on another app over the same R2 and KV: another isolate. */
function through(t: Tenant, app: ReturnType<typeof testApp>): Tenant {
  const req = async (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, ...(init.headers as Record<string, string> | undefined) } });
  return { ...t, app, req };
}

async function entries(t: Tenant, auditor: string, tool: string) {
  const res = await t.app.request(`/v1/workspaces/${t.ws}/audit?limit=200`, { headers: { authorization: `Bearer ${auditor}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as any).entries.filter((e: any) => e.tool === tool);
}

async function usageOf(t: Tenant, auditor: string, tool: string) {
  const res = await t.app.request("/v1/usage?group_by=tool", { headers: { authorization: `Bearer ${auditor}` } });
  expect(res.status).toBe(200);
  const row = ((await res.json()) as any).rows.find((r: any) => r.tool === tool);
  return row && { calls: row.calls, ok: row.ok, errors: row.errors };
}

async function setup() {
  const one = isolate();
  const t = await newTenant(one.app, UNGATED);
  const auditor = (await admin(one.app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "auditor", scopes: ["read", "manage"] })).body.key as string;
  return { one, t, auditor };
}

describe("a call the tool route runs again leaves one audit entry and one usage record", () => {
  it("a write after the workspace was checkpointed, deleted and made again with the same id: one entry, ok 200, as answered; usage counts one call", async () => {
    const { one, t, auditor } = await setup();
    expect((await t.call("write", { file_path: "a.txt", content: "one\n" })).status).toBe(200); // this isolate holds a.txt's version
    expect((await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: json, body: JSON.stringify({ name: "c1" }) })).status).toBe(201);
    expect((await t.req(`/v1/workspaces/${t.ws}`, { method: "DELETE" })).status).toBe(200);
    expect((await t.req("/v1/workspaces", { method: "POST", headers: json, body: JSON.stringify({ id: t.ws }) })).status).toBe(201);

    const w = await t.call("write", { file_path: "a.txt", content: "two\n" });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(w.body.data.created).toBe(true); // the new workspace had no a.txt: the version held was the old one's
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/a.txt`)).text()).toBe("two\n");

    const writes = await entries(t, auditor, "write"); // the new workspace's log: this write only
    expect(writes.map((e: any) => e.outcome)).toEqual([{ ok: true, status: 200 }]);
    expect(writes[0]).toMatchObject({ door: "http", files: ["a.txt"], call_id: w.body.call_id });
    await one.settled();
    expect(await usageOf(t, auditor, "write")).toEqual({ calls: 2, ok: 2, errors: 0 }); // the first workspace's write and this one
  });

  it("an edit whose held version another isolate replaced (the try fails on it, the run again on storage answers NOT_READ): one entry, with the code the caller got", async () => {
    const { one, t, auditor } = await setup();
    expect((await t.call("write", { file_path: "a.txt", content: "one\n" })).status).toBe(200);
    await upload(through(t, testApp()), "a.txt", "two\n"); // another isolate: this one still holds "one"

    const e = await t.call("edit", { file_path: "a.txt", old_string: "two", new_string: "three" });
    expect({ status: e.status, code: e.body.error?.code }, JSON.stringify(e.body)).toEqual({ status: 409, code: "NOT_READ" });

    const edits = await entries(t, auditor, "edit");
    expect(edits.map((x: any) => x.outcome)).toEqual([{ ok: false, status: 409, code: "NOT_READ" }]);
    await one.settled();
    expect(await usageOf(t, auditor, "edit")).toEqual({ calls: 1, ok: 0, errors: 1 });
  });
});
