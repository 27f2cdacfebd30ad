/**
 * TOOLSHED_BUSINESS_OFF (lib/runtime/business.ts), through fromWorkersEnv in workerd with the real
 * USAGE and LIMITS Durable Objects and local R2: off, the same calls make no Durable Object call
 * at all (counted on the namespaces), write no audit entry (the audit prefixes stay empty) and
 * carry no rate headers; on, they do all three.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fromWorkersEnv, type WorkersEnv } from "../../../lib/runtime/workers.js";
import { businessPartsOff } from "../../../lib/runtime/business.js";
import { auditPrefix, tenantAuditPrefix } from "../../../lib/layout/paths.js";
import { executionContext, newTenant, testApp, UNGATED } from "../../helpers.js";

/** A Durable Object namespace whose every method call is counted (idFromName, get, getByName, ...). */
function counted(ns: DurableObjectNamespace) {
  let calls = 0;
  const proxy = new Proxy(ns, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => {
        calls++;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { ns: proxy, calls: () => calls };
}

const objectsUnder = async (prefix: string) => (await env.FILES.list({ prefix })).objects.map((o) => o.key);

/** The same calls on an app built from the env with `off`: a write, a read, an edit, a raw PUT, a workspace made. */
async function callsWith(off: string | undefined) {
  const usage = counted(env.USAGE as DurableObjectNamespace);
  const limits = counted(env.LIMITS as DurableObjectNamespace);
  const deps = fromWorkersEnv({ ...(env as unknown as WorkersEnv), USAGE: usage.ns, LIMITS: limits.ns, TOOLSHED_BUSINESS_OFF: off });
  const app = testApp(deps);
  const t = await newTenant(app, { ...UNGATED, scopes: ["read", "write", "execute", "manage"] });
  const { ctx, settle } = executionContext();
  const req = (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1", ...(init.headers as Record<string, string> | undefined) } }, {}, ctx);
  const tool = (name: string, args: unknown, headers: Record<string, string> = {}) => req(`/v1/workspaces/${t.ws}/tools/${name}`, { method: "POST", body: JSON.stringify(args), headers });
  const answers = [
    await tool("write", { file_path: "a.txt", content: "one\n" }, { "idempotency-key": `w-${t.tenant}` }),
    await tool("read", { file_path: "a.txt" }),
    await tool("edit", { file_path: "a.txt", old_string: "one", new_string: "two" }, { "idempotency-key": `e-${t.tenant}` }),
    await req(`/v1/workspaces/${t.ws}/files/b.txt`, { method: "PUT", body: "raw\n", headers: { "content-type": "text/plain", "content-length": "4" } }),
    await req("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "second" }) }),
  ];
  await settle(); // the work after the answers: held usage batches, audit entries
  return { app, t, deps, answers, usageCalls: usage.calls(), limitsCalls: limits.calls(), wsAudit: await objectsUnder(auditPrefix(t.tenant, t.ws)), tenantAudit: await objectsUnder(tenantAuditPrefix(t.tenant)), req };
}

describe("TOOLSHED_BUSINESS_OFF", () => {
  it("all: no usage sink or store, no limits store, no audit entry; no Durable Object is called and the routes that read them answer UNAVAILABLE", async () => {
    const r = await callsWith("all");
    expect(r.answers.map((a) => a.status)).toEqual([200, 200, 200, 201, 201]);
    expect(r.deps.onUsage).toBeUndefined();
    expect(r.deps.usageStore).toBeUndefined();
    expect(r.deps.limits).toBeUndefined();
    expect(r.deps.audit).toBe(false);
    expect(r.usageCalls).toBe(0);
    expect(r.limitsCalls).toBe(0);
    expect(r.wsAudit).toEqual([]);
    expect(r.tenantAudit).toEqual([]); // nor the admin's tenant, policy and key calls, nor the workspaces made
    for (const a of r.answers) expect(a.headers.get("ratelimit")).toBeNull();
    // Idempotency is per request and stays: the write's key replays its answer without running again.
    const replay = await r.app.request(`/v1/workspaces/${r.t.ws}/tools/write`, { method: "POST", headers: { authorization: `Bearer ${r.t.key}`, "content-type": "application/json", "x-session-id": "s1", "idempotency-key": `w-${r.t.tenant}` }, body: JSON.stringify({ file_path: "a.txt", content: "one\n" }) });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    for (const path of ["/v1/usage", `/v1/workspaces/${r.t.ws}/audit`, "/v1/audit"]) {
      const res = await r.req(path);
      expect(res.status, path).toBe(503);
      expect(((await res.json()) as any).error.message, path).toContain("TOOLSHED_BUSINESS_OFF");
    }
    expect(r.usageCalls + r.limitsCalls).toBe(0); // nor did the refused reads call one
  });

  it("unset: the same calls are metered through USAGE, limited through LIMITS and audited", async () => {
    const r = await callsWith(undefined);
    expect(r.answers.map((a) => a.status)).toEqual([200, 200, 200, 201, 201]);
    expect(r.usageCalls).toBeGreaterThan(0);
    expect(r.limitsCalls).toBeGreaterThan(0);
    for (const a of r.answers) expect(a.headers.get("ratelimit")).toMatch(/^"tenant";r=\d+;t=\d+$/);
    // write and edit (tool calls; read is not audited) and PUT files (a route) in the workspace's log;
    // the admin's tenant, policy and key calls and the workspaces made in the tenant's.
    expect(r.wsAudit.length).toBe(3);
    expect(r.tenantAudit.length).toBeGreaterThanOrEqual(2);
    const usage = (await (await r.req("/v1/usage?group_by=tool")).json()) as any;
    const names = JSON.stringify(usage);
    for (const name of ["write", "read", "edit", "PUT files", "POST workspaces"]) expect(names).toContain(`"${name}"`);
  });

  it("a value naming no part is refused, so a typo never leaves a part on unseen", () => {
    expect([...businessPartsOff({})]).toEqual([]);
    expect([...businessPartsOff({ TOOLSHED_BUSINESS_OFF: "all" })]).toEqual(["metering", "limits", "audit"]);
    expect([...businessPartsOff({ TOOLSHED_BUSINESS_OFF: " Audit, metering " })]).toEqual(["audit", "metering"]);
    expect(() => businessPartsOff({ TOOLSHED_BUSINESS_OFF: "audit,billing" })).toThrow(/unknown part "billing".*metering, limits, audit/);
    const deps = fromWorkersEnv({ ...(env as unknown as WorkersEnv), TOOLSHED_BUSINESS_OFF: "audit" });
    expect(deps.audit).toBe(false);
    expect(deps.limits).toBeDefined();
    expect(deps.usageStore).toBeDefined();
  });
});
