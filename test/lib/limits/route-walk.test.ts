/**
 * Every tenant route the app serves (read from the app, not a hand-kept list) answers with the
 * rate limit's headers, and is refused 429 RATE_LIMITED over the budget: calls_per_minute is
 * enforced in the one guard every tenant route passes.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { servedRoutes, docPathOf, type ServedRoute } from "../../../lib/api/routes/served-routes.js";
import { SCOPES } from "../../../lib/contract/caller.js";
import { memoryLimits } from "../../../lib/limits/store.js";
import { admin, testApp } from "../../helpers.js";
import { routeRequest } from "../../support/route-request.js";

const limits = memoryLimits();
const app = testApp({ limits, syncSecret: "route-walk-sync-secret" });
let doc: any;
let tenant: string;
let key: string;
let spareKeyId: string;
let tenantRoutes: ServedRoute[];

beforeAll(async () => {
  doc = await (await app.request("/openapi.json")).json();
  tenantRoutes = servedRoutes(app).filter((r) => r.policy?.access.auth === "tenant");
  tenant = `t-rl-${crypto.randomUUID().slice(0, 8)}`;
  await admin(app, "/v1/admin/tenants", { id: tenant });
  key = (await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name: "all", scopes: [...SCOPES] })).body.key;
  spareKeyId = (await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name: "spare" })).body.key_id;
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  await app.request("/v1/workspaces", { method: "POST", headers: h, body: JSON.stringify({ id: "probe" }) });
});

async function call(route: ServedRoute, via = app) {
  const r = routeRequest(doc, route, { ws: "probe", tenant, key_id: spareKeyId, tool: "nope", path: "secret.txt" });
  const res = await via.request(r.url, { method: r.method, headers: { ...r.headers, authorization: `Bearer ${key}` }, ...(r.body !== undefined ? { body: r.body } : {}) });
  await res.body?.cancel();
  return res;
}

describe("calls_per_minute on every tenant route", () => {
  it("each answers with RateLimit-Policy and RateLimit, whatever its status", async () => {
    expect(tenantRoutes.length).toBeGreaterThan(20);
    const missing: string[] = [];
    for (const route of tenantRoutes) {
      const res = await call(route);
      if (!res.headers.get("ratelimit-policy") || !res.headers.get("ratelimit")) missing.push(`${route.method} ${docPathOf(route)} → ${res.status}`);
    }
    expect(missing).toEqual([]);
  });

  it("over the budget each is refused 429 RATE_LIMITED with Retry-After, before its handler", async () => {
    await limits.set(tenant, { calls_per_minute: 0 });
    // Another isolate (its pool of calls taken ahead is empty: the first app's pool may still spend what it took under the old limit for 10 s, lib/limits/call-leases.ts).
    const fresh = testApp({ limits, syncSecret: "route-walk-sync-secret" });
    const wrong: string[] = [];
    for (const route of tenantRoutes) {
      const res = await call(route, fresh);
      if (res.status !== 429 || !res.headers.get("retry-after")) wrong.push(`${route.method} ${docPathOf(route)} → ${res.status}`);
    }
    expect(wrong).toEqual([]);
  });
});
