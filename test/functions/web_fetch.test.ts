/**
 * web_fetch and web_search in workerd with the default deps (the runtime's fetch, no loopback
 * switch): every internal address is refused before any connection, through the HTTP API. The tools
 * are in /v1/tools and /openapi.json; the policy route is an admin route.
 */
import { describe, expect, it } from "vitest";
import { cloudflareFetcher } from "../../lib/tools/web/transport.js";
import { admin, newTenant, testApp } from "../helpers.js";

const REFUSED = [
  "http://127.0.0.1:8787/v1/tools", "http://127.1/", "http://0177.0.0.1/", "http://0x7f.1/", "http://2130706433/", "http://127.0.0.1./",
  "http://[::1]/", "http://[::ffff:7f00:1]/", "http://[::ffff:127.0.0.1]/", "http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/",
  "http://localhost:8787/", "http://api.localhost/", "http://evil@127.0.0.1/",
  "http://169.254.169.254/latest/meta-data/", "http://2852039166/", "http://[fd00:ec2::254]/", "http://metadata.google.internal/",
  "http://10.0.0.1/", "http://172.16.0.1/", "http://192.168.0.1/", "http://100.64.0.1/", "http://0.0.0.0/", "http://[::]/",
  "http://224.0.0.1/", "http://255.255.255.255/", "http://[fe80::1]/", "http://[fc00::1]/",
];

describe("web_fetch refuses internal addresses by default (Workers runtime)", () => {
  it.each(REFUSED)("%s → BLOCKED", async (url) => {
    const t = await newTenant(testApp(), { scopes: ["read", "network"] });
    const r = await t.call("web_fetch", { url });
    expect(r.status, JSON.stringify(r.body)).toBe(403);
    expect(r.body.error.code).toBe("BLOCKED");
    expect(r.body.error.message).toMatch(/public internet addresses/);
  });
});

describe("a host the runtime cannot reach", () => {
  it("workerd's opaque 'internal error; reference = …' gets a plain cause and a next step (.invalid never resolves)", async () => {
    // As deployed on Cloudflare, where the runtime resolves names (locally every name is refused: test/lib/tools/web/hosts-alias.test.ts).
    const t = await newTenant(testApp({ webFetch: { fetcher: cloudflareFetcher } }), { scopes: ["read", "network"] });
    const r = await t.call("web_fetch", { url: "https://nothing.invalid/", timeout: 20 });
    expect(r.status, JSON.stringify(r.body)).toBe(503);
    expect(r.body.error.code).toBe("UNAVAILABLE");
    expect(r.body.error.message).toMatch(/^Could not reach https:\/\/nothing\.invalid\/: /);
    expect(r.body.error.message).toMatch(/does not resolve|gave no reason \(internal error; reference = [^)]*\): most often the host name does not resolve/);
    expect(r.body.error.message).toMatch(/Check the host name and that the host is reachable from the public internet; if both are right, retry later\.$/);
  });
});

describe("catalog and admin", () => {
  it("both tools are listed with the network permission and in the OpenAPI document", async () => {
    const app = testApp();
    const t = await newTenant(app);
    // Without a key: every tool (with a key, only the tools its scopes allow, and this key lacks 'network').
    expect(((await (await t.req("/v1/tools")).json()) as { tools: { name: string }[] }).tools.map((x) => x.name)).not.toContain("web_fetch");
    const list = (await (await app.request("/v1/tools")).json()) as { tools: { name: string; permission: string; description: string; input_schema: any }[] };
    const byName = Object.fromEntries(list.tools.map((x) => [x.name, x]));
    for (const name of ["web_fetch", "web_search"]) {
      expect(byName[name]!.permission).toBe("network");
      expect(byName[name]!.description).toMatch(/\(default: [^)]+\)[\s\S]*\nReturns: \{/);
    }
    expect(Object.keys(byName.web_fetch!.input_schema.properties)).toEqual(["url", "format", "max_bytes", "timeout", "method", "headers", "body"]);
    expect(byName.web_fetch!.input_schema.properties.max_bytes.maximum).toBe(102400);
    expect(byName.web_search!.input_schema.properties.max_results.maximum).toBe(20);
    const doc = (await (await app.request("/openapi.json")).json()) as { paths: Record<string, any> };
    expect(doc.paths["/v1/workspaces/{ws}/tools/web_fetch"].post.responses).toHaveProperty("502");
    expect(doc.paths["/v1/workspaces/{ws}/tools/web_search"].post.responses).toHaveProperty("429");
    expect(doc.paths["/v1/admin/tenants/{tenant}/policy"]).toHaveProperty("put");
  });

  it("the policy route needs the admin token and stores per tenant", async () => {
    const app = testApp();
    const t = await newTenant(app);
    const put = await admin(app, `/v1/admin/tenants/${t.tenant}/policy`, { web: { blocked_domains: ["example.com"] } }, "PUT");
    expect(put.status).toBe(200);
    const other = await newTenant(app);
    expect((await admin(app, `/v1/admin/tenants/${other.tenant}/policy`, undefined, "GET")).body).toEqual({});
    const asTenant = await t.req(`/v1/admin/tenants/${t.tenant}/policy`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ web: {} }) });
    expect(asTenant.status).toBe(401);
  });

  it("web_search without a provider is UNAVAILABLE; without the network scope PERMISSION_DENIED", async () => {
    const app = testApp();
    const net = await newTenant(app, { scopes: ["read", "network"] });
    const r = await net.call("web_search", { query: "rust" });
    expect(r.status).toBe(503);
    expect(r.body.error.message).toMatch(/TOOLSHED_SEARCH_PROVIDER/);
    const plain = await newTenant(app);
    expect((await plain.call("web_fetch", { url: "https://example.com/" })).body.error.code).toBe("PERMISSION_DENIED");
    expect((await plain.call("web_search", { query: "rust" })).body.error.code).toBe("PERMISSION_DENIED");
  });
});
