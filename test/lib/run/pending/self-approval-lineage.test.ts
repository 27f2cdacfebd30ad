/**
 * A held call is never approved by the key that made it, nor by a key that key made (POST /v1/keys,
 * at any depth, through keys revoked since), nor by a key it took by rotating it: a key holding
 * `manage` and `approve` could otherwise mint or take an approver for itself.
 * Real local KV and R2 in workerd.
 */
import { describe, expect, it } from "vitest";
import { newTenant, type Tenant } from "../../../helpers.js";
import { answer, approverKey, getPending, held, readFile, setPolicy } from "./approval-helpers.js";

/** An agent's key that may write, approve and manage keys, and its write held for a human. */
async function gatedAgent() {
  const t = await newTenant(undefined, { scopes: ["read", "write", "approve", "manage"] });
  await setPolicy(t.app, t.tenant, { gate: [{ tool: "write" }] });
  return { t, d: held(await t.call("write", { file_path: "a.txt", content: "mine" })) };
}

/** A key made with `maker` through POST /v1/keys, holding approve and manage. */
async function makeKey(t: Tenant, maker: string, name: string) {
  const r = await t.app.request("/v1/keys", { method: "POST", headers: { authorization: `Bearer ${maker}`, "content-type": "application/json" }, body: JSON.stringify({ name, scopes: ["read", "approve", "manage"] }) });
  expect(r.status, await r.clone().text()).toBe(201);
  return (await r.json()) as { key: string; key_id: string };
}

/** Each key's approval is refused as self-approval, and the call is still pending, its write not made. */
async function refusedAsSelf(t: Tenant, pendingId: string, keys: string[]) {
  for (const key of keys) {
    const r = await answer(t, key, pendingId, { approved: true });
    expect(r.status, JSON.stringify(r.body)).toBe(403);
    expect(r.body.error).toMatchObject({ code: "PERMISSION_DENIED", details: { reason: "self_approval" } });
  }
  expect(await readFile(t, "a.txt")).toBeNull();
  expect((await getPending(t, pendingId)).body.status).toBe("pending");
}

describe("self-approval through keys the calling key made", () => {
  it("a child and a grandchild key of the agent's key are refused (self_approval, still pending, nothing ran); an admin-made approver runs it", async () => {
    const { t, d } = await gatedAgent();
    const child = await makeKey(t, t.key, "child");
    const grandchild = await makeKey(t, child.key, "grandchild");
    await refusedAsSelf(t, d.pending_id, [child.key, grandchild.key]);
    const ok = await answer(t, await approverKey(t.app, t.tenant), d.pending_id, { approved: true });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(await readFile(t, "a.txt")).toBe("mine");
  });

  it("the lineage survives a revoked middle key: a grandchild of the agent's key, whose maker was revoked, is still refused", async () => {
    const { t, d } = await gatedAgent();
    const child = await makeKey(t, t.key, "middle");
    const grandchild = await makeKey(t, child.key, "grandchild");
    const greatGrandchild = await makeKey(t, grandchild.key, "great-grandchild");
    const revoked = await t.app.request(`/v1/keys/${child.key_id}`, { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } });
    expect(revoked.status).toBe(200);
    await refusedAsSelf(t, d.pending_id, [grandchild.key, greatGrandchild.key]);
  });

  it("rotation is no way around it: the agent's key cannot rotate an approver's key it did not make (and so never holds its secret), though the approver is within its bounds; it rotates its own and those it made", async () => {
    const { t, d } = await gatedAgent();
    const human = await approverKey(t.app, t.tenant); // "app": read + approve, made by the admin, within the agent key's bounds
    const listed = (await (await t.app.request("/v1/keys", { headers: { authorization: `Bearer ${t.key}` } })).json()) as any;
    const target = listed.keys.find((k: any) => k.name === "app");
    expect(target, JSON.stringify(listed)).toBeDefined();
    const rotate = (id: string) => t.app.request(`/v1/keys/${id}/rotate`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ grace_seconds: 3600 }) });
    const r = await rotate(target.key_id);
    const body = (await r.json()) as any;
    expect(r.status, JSON.stringify(body)).toBe(403);
    expect(body.error).toMatchObject({ code: "PERMISSION_DENIED" });
    expect(body.key).toBeUndefined();
    expect(await readFile(t, "a.txt")).toBeNull();
    expect((await getPending(t, d.pending_id)).body.status).toBe("pending");
    expect((await answer(t, human, d.pending_id, { approved: true })).status).toBe(200); // the approver's secret still works
    // Its own key, and a key it made, it still rotates.
    const made = (await (await t.app.request("/v1/keys", { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ scopes: ["read"] }) })).json()) as any;
    expect((await rotate(made.key_id)).status).toBe(200);
    const own = listed.keys.find((k: any) => k.name !== "app");
    expect((await rotate(own.key_id)).status).toBe(200);
  });
});
