/** Custom tools: definitions per tenant (admin and `manage` routes), name rules, argument validation in workerd, tenant isolation. */
import { describe, expect, it } from "vitest";
import { cloudflareFetcher } from "../../../../lib/tools/web/transport.js";
import { admin, newTenant, testApp as plainApp } from "../../../helpers.js";

/** As deployed on Cloudflare (TOOLSHED_WEB_EGRESS=cloudflare): webhook host names are the runtime's to resolve (docs/ssrf.md). */
const testApp = () => plainApp({ webFetch: { fetcher: cloudflareFetcher } });

const def = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: "Echo a message.",
  input_schema: { type: "object", properties: { message: { type: "string", minLength: 1 }, times: { type: "integer", minimum: 1 } }, required: ["message"], additionalProperties: false },
  backend: { type: "webhook", url: "https://hooks.example.com/echo" },
  ...extra,
});

describe("custom tools", () => {
  it("admin creates a webhook tool: the secret is shown once, never listed; the tool is listed for its tenant only", async () => {
    const app = testApp();
    const a = await newTenant(app);
    const b = await newTenant(app);
    const made = await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def("acme_echo"));
    expect(made.status).toBe(201);
    expect(made.body.backend.secret).toMatch(/^whsec_/);
    const listed = await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, undefined, "GET");
    expect(listed.body.tools.map((t: any) => t.name)).toEqual(["acme_echo"]);
    expect(JSON.stringify(listed.body)).not.toContain(made.body.backend.secret);

    const namesFor = async (key: string, format = "toolshed") => {
      const r = await app.request(`/v1/tools?format=${format}`, { headers: { authorization: `Bearer ${key}` } });
      const body = (await r.json()) as { tools: any[] };
      return body.tools.map((t) => t.name ?? t.function?.name);
    };
    // webhook tools need `network`: a default key does not see it; a network key does.
    expect(await namesFor(a.key)).not.toContain("acme_echo");
    const netKey = (await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { scopes: ["read", "network"] })).body.key as string;
    for (const f of ["toolshed", "openai", "anthropic", "mcp"]) expect(await namesFor(netKey, f)).toContain("acme_echo");
    const netKeyB = (await admin(app, `/v1/admin/tenants/${b.tenant}/keys`, { scopes: ["read", "network"] })).body.key as string;
    for (const f of ["toolshed", "openai", "anthropic", "mcp"]) expect(await namesFor(netKeyB, f)).not.toContain("acme_echo");
    expect(await namesFor("")).not.toContain("acme_echo");

    // Tenant B calling A's tool: NOT_FOUND like any unknown tool.
    const res = await app.request(`/v1/workspaces/${b.ws}/tools/acme_echo`, { method: "POST", headers: { authorization: `Bearer ${netKeyB}`, "content-type": "application/json" }, body: JSON.stringify({ message: "hi" }) });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe("NOT_FOUND");
  });

  it("arguments are validated against the tenant's JSON Schema (in workerd: no eval), with INVALID_ARGUMENT naming the field", async () => {
    const app = testApp();
    const a = await newTenant(app, { scopes: ["read", "write", "network"] });
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def("acme_echo"))).status).toBe(201);
    const bad = await a.call("acme_echo", { times: 1.5 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("INVALID_ARGUMENT");
    expect(bad.body.error.message).toMatch(/message/);
    expect(bad.body.usage).toBeDefined();
  });

  it("a name that shadows a built-in (or a compat name) is refused; bad schemas and backends are refused; storage is unchanged", async () => {
    const app = testApp();
    const a = await newTenant(app);
    for (const name of ["read", "bash", "web_fetch", "str_replace_based_edit_tool"]) {
      const r = await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def(name));
      expect(r.status, name).toBe(409);
      expect(r.body.error.message).toMatch(/built-in/);
    }
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def("Bad-Name"))).status).toBe(400);
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def("x1", { input_schema: { type: "string" } }))).status).toBe(400);
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def("x2", { backend: { type: "webhook", url: "http://169.254.169.254/" } }))).status).toBe(403);
    // A loopback webhook: the refusal names the webhook URL, not web_fetch.
    const loop = await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def("x5", { backend: { type: "webhook", url: "https://127.0.0.1:8443/hook" } }));
    expect(loop.status).toBe(403);
    expect(loop.body.error.message).toBe("Refused to call the webhook URL https://127.0.0.1:8443/hook: 127.0.0.1 is a loopback address (127.0.0.0/8). A custom tool's webhook URL must be on the public internet; use a public https URL for the webhook.");
    expect(loop.body.error.details).toMatchObject({ subject: "webhook", reason: "a loopback address (127.0.0.0/8)" });
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def("x3", { backend: { type: "plugin", command: "a", path: "b" } }))).status).toBe(400);
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def("x4", { permission: "read" }))).status).toBe(400);
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, undefined, "GET")).body.tools).toEqual([]);
  });

  it("a tenant key needs `manage`; with it, the tenant's own routes add, change and delete", async () => {
    const app = testApp();
    const a = await newTenant(app);
    const post = (key: string, body: unknown) => app.request("/v1/tools/custom", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const denied = await post(a.key, def("acme_echo"));
    expect(denied.status).toBe(403);
    const mkey = (await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { scopes: ["manage"] })).body.key as string;
    expect((await post(mkey, def("acme_echo", { backend: { type: "webhook", url: "https://hooks.example.com/e", secret: "s".repeat(20) } }))).status).toBe(201);
    expect((await post(mkey, def("acme_echo"))).status).toBe(409);
    const put = await app.request("/v1/tools/custom/acme_echo", { method: "PUT", headers: { authorization: `Bearer ${mkey}`, "content-type": "application/json" }, body: JSON.stringify(def("acme_echo", { description: "Echo v2", backend: { type: "webhook", url: "https://hooks.example.com/e2" } })) });
    expect(put.status).toBe(200);
    const got = (await (await app.request("/v1/tools/custom/acme_echo", { headers: { authorization: `Bearer ${mkey}` } })).json()) as any;
    expect(got.description).toBe("Echo v2");
    expect(got.backend.secret).toBeUndefined();
    const del = await app.request("/v1/tools/custom/acme_echo", { method: "DELETE", headers: { authorization: `Bearer ${mkey}` } });
    expect(del.status).toBe(200);
    expect((await app.request("/v1/tools/custom/acme_echo", { headers: { authorization: `Bearer ${mkey}` } })).status).toBe(404);
  });

  it("MCP with tenant B's key sees none of A's custom tools (tools/list), and cannot call one (tools/call)", async () => {
    const app = testApp();
    const a = await newTenant(app, { scopes: ["read", "write", "network"] });
    const b = await newTenant(app, { scopes: ["read", "write", "network"] });
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, def("acme_echo"))).status).toBe(201);
    const mcp = async (t: typeof a, method: string, params: unknown = {}) => {
      const res = await t.req(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { accept: "application/json, text/event-stream", "content-type": "application/json", "mcp-protocol-version": "2025-06-18" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
      expect(res.status).toBe(200);
      return (await res.json()) as any;
    };
    const names = async (t: typeof a) => ((await mcp(t, "tools/list")).result.tools as any[]).map((x) => x.name);
    expect(await names(a)).toContain("acme_echo");
    const seenByB = await names(b);
    expect(seenByB).not.toContain("acme_echo");
    expect(seenByB).toContain("read");
    const called = await mcp(b, "tools/call", { name: "acme_echo", arguments: { message: "hi" } });
    expect(JSON.stringify(called)).not.toContain("hooks.example.com");
    expect(called.error ?? called.result?.isError).toBeTruthy();
  });
});

