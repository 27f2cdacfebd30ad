/** Pending calls through HTTP in tests: the approver's key, answering, repeating with X-Pending-Id, the tenant policy. */
import { expect } from "vitest";
import { admin, type Tenant, type TestApp } from "../../../helpers.js";

/** A key of the app in front of the agent: it may answer pending calls. */
export async function approverKey(app: TestApp, tenant: string): Promise<string> {
  const k = await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name: "app", scopes: ["read", "approve"] });
  expect(k.status).toBe(201);
  return k.body.key as string;
}

export const answer = async (t: Tenant, key: string, id: string, body: unknown) => {
  const res = await t.app.request(`/v1/workspaces/${t.ws}/pending/${id}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

export const getPending = async (t: Tenant, id: string, query = "") => {
  const res = await t.req(`/v1/workspaces/${t.ws}/pending/${id}${query}`);
  return { status: res.status, body: (await res.json()) as any };
};

/** The original call repeated with X-Pending-Id (its arguments do not matter then): the outcome as the tool's own answer. */
export const repeat = async (t: Tenant, tool: string, id: string, args: unknown = {}) => {
  const res = await t.req(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1", "x-pending-id": id }, body: JSON.stringify(args) });
  return { status: res.status, body: (await res.json()) as any };
};

/** Asserts the answer is NEEDS_APPROVAL (or `code`: NEEDS_INPUT), HTTP 202, and returns its details. */
export const held = (r: { status: number; body: any }, code: "NEEDS_APPROVAL" | "NEEDS_INPUT" = "NEEDS_APPROVAL") => {
  expect(r.body.error?.code, JSON.stringify(r.body)).toBe(code);
  expect(r.status).toBe(202);
  expect(r.body.ok).toBe(false);
  expect(r.body.error.details.pending_id).toMatch(/^p[a-z2-7]{24}$/);
  return r.body.error.details as { pending_id: string; reason: string; tool: string; args: Record<string, unknown>; [k: string]: any };
};

export const setPolicy = async (app: TestApp, tenant: string, policy: unknown) => expect((await admin(app, `/v1/admin/tenants/${tenant}/policy`, policy, "PUT")).status).toBe(200);

export const readFile = async (t: Tenant, path: string) => {
  const res = await t.req(`/v1/workspaces/${t.ws}/files/${path}`);
  return res.status === 200 ? res.text() : null;
};
