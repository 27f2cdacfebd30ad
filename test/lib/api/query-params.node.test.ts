/**
 * A query parameter a route does not declare is refused (400 INVALID_ARGUMENT naming it and the
 * parameters the route takes), never dropped: `GET …/export?prefix=src` exported the whole workspace
 * (the parameter is `path`). One rule in the guard (lib/api/routes/query-rule.ts), from each route's
 * own definition; checked here over the whole OpenAPI document, so a new route cannot leave it out:
 * every route and method answers an unknown parameter with 400, a route without a query included.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";

const ADMIN = "admin-token-query-params";
const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN }, tools);

async function call(path: string, token: string | null, method = "GET", body?: unknown) {
  const headers: Record<string, string> = { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) };
  const r = await app.request(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await r.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: r.status, body: json, text };
}

let key: string;
let manage: string;

beforeAll(async () => {
  expect((await call("/v1/admin/tenants", ADMIN, "POST", { id: "acme" })).status).toBe(201);
  key = (await call("/v1/admin/tenants/acme/keys", ADMIN, "POST", { name: "agent" })).body.key;
  manage = (await call("/v1/admin/tenants/acme/keys", ADMIN, "POST", { name: "all", scopes: ["read", "write", "execute", "network", "approve", "manage"] })).body.key;
  expect((await call("/v1/workspaces", key, "POST", { id: "w" })).status).toBe(201);
  expect((await app.request("/v1/workspaces/w/files/src/a.ts", { method: "PUT", headers: { authorization: `Bearer ${key}`, "content-length": "1" }, body: "a" })).status).toBe(201);
});

describe("unknown query parameters", () => {
  it("every route and method of /openapi.json answers one with 400 INVALID_ARGUMENT naming it and the parameters the route takes", async () => {
    const doc = (await (await app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, any>> };
    const params: Record<string, string> = { tenant: "acme", ws: "w", path: "src/a.ts" };
    const wrong: string[] = [];
    let walked = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!["get", "head", "post", "put", "delete", "patch"].includes(method)) continue;
        const declared = ((op?.parameters ?? []) as { in: string; name: string }[]).filter((p) => p.in === "query").map((p) => p.name);
        const url = `${path.replace(/\{(\w+)\}/g, (_, p: string) => params[p] ?? "x")}?zz_unknown=1`;
        const token = op.security?.length ? (path.startsWith("/v1/admin/") ? ADMIN : manage) : null;
        const r = await call(url, token, method.toUpperCase(), ["post", "put", "patch"].includes(method) ? {} : undefined);
        walked++;
        const shown = method === "head" ? "(HEAD: no body)" : r.body?.error?.message ?? r.text.slice(0, 120);
        const named = method === "head" || (r.body?.error?.code === "INVALID_ARGUMENT" && r.body.error.message.includes(`Unknown query parameter 'zz_unknown' (known: ${declared.join(", ") || "none"})`) && JSON.stringify(r.body.error.details) === JSON.stringify({ unknown: ["zz_unknown"], known: declared }));
        if (r.status !== 400 || !named) wrong.push(`${method.toUpperCase()} ${path}: ${r.status} ${shown}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(walked).toBeGreaterThan(80);
  });

  it("export ?prefix=src is refused, pointing at path; ?path=src is taken", async () => {
    const r = await call("/v1/workspaces/w/export?prefix=src", key);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    expect(r.body.error.message).toMatch(/^Unknown query parameter 'prefix' \(did you mean 'path'\? known: [a-z_, ]*\bpath\b/);
    expect((await app.request("/v1/workspaces/w/export?path=src", { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
  });

  it("declared parameters pass, and ?tenant= (the tenant an OAuth token acts as: docs/oauth.md) passes on every tenant route", async () => {
    const list = await call("/v1/workspaces/w/files/?limit=1&tenant=acme", key);
    expect(list.status, list.text).toBe(200);
    const two = await call("/v1/workspaces?zz_a=1&zz_b=2", key);
    expect(two.status).toBe(400);
    expect(two.body.error.message).toMatch(/^Unknown query parameters 'zz_a', 'zz_b' \(known: /);
    expect((await call("/healthz?tenant=acme", null)).status).toBe(400); // a public route has no tenant to name
  });
});
