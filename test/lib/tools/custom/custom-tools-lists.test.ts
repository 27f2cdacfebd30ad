/**
 * A tenant's custom tools named in tool lists (workerd, real local R2/KV): a key's list and a
 * workspace's list may name them beside presets and built-ins; their scopes count as the list's
 * (lib/tools/custom/tool.ts catalogForLists, read by the one rule in lib/run/toolset.ts).
 * A webhook tool is gated by the tenant's policy here, so a call that passes every check answers
 * NEEDS_APPROVAL without reaching the network.
 */
import { describe, expect, it } from "vitest";
import { cloudflareFetcher } from "../../../../lib/tools/web/transport.js";
import { admin, newTenant, testApp as plainApp, type TestApp } from "../../../helpers.js";
import { held, setPolicy } from "../../run/pending/approval-helpers.js";

const webhook = (name: string) => ({
  name,
  description: "Current weather for a city.",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  backend: { type: "webhook", url: "https://hooks.example.com/weather" },
});

/** As deployed on Cloudflare (TOOLSHED_WEB_EGRESS=cloudflare): webhook host names are the runtime's to resolve (docs/ssrf.md). */
const testApp = () => plainApp({ webFetch: { fetcher: cloudflareFetcher } });

async function tenantWithTool(app: TestApp) {
  const a = await newTenant(app);
  expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom`, webhook("acme_weather"))).status).toBe(201);
  await setPolicy(app, a.tenant, { gate: [{ tool: "acme_weather" }] });
  return a;
}

const post = async (app: TestApp, key: string, path: string, body: unknown) => {
  const r = await app.request(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as any };
};

const mcpToolNames = async (app: TestApp, key: string, ws: string) => {
  const r = await app.request(`/v1/workspaces/${ws}/mcp`, { method: "POST", headers: { authorization: `Bearer ${key}`, accept: "application/json, text/event-stream", "content-type": "application/json", "mcp-protocol-version": "2025-06-18" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }) });
  return ((await r.json()) as any).result.tools.map((t: any) => t.name) as string[];
};

describe("custom tools in tool lists", () => {
  it("a key's list names a custom tool beside a preset: the tool runs (through its gate), its scope is the key's, the preset's bounds hold", async () => {
    const app = testApp();
    const a = await tenantWithTool(app);
    const made = await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { tools: ["readonly", "acme_weather"], scopes: ["read", "network"] });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.tools).toEqual(["readonly", "acme_weather"]);
    const key = made.body.key as string;
    held(await post(app, key, `/v1/workspaces/${a.ws}/tools/acme_weather`, { city: "Oslo" }));
    expect(await mcpToolNames(app, key, a.ws)).toEqual(expect.arrayContaining(["read", "grep", "acme_weather"]));
    expect(await mcpToolNames(app, key, a.ws)).not.toContain("write");
    const write = await post(app, key, `/v1/workspaces/${a.ws}/tools/write`, { file_path: "x.txt", content: "x" });
    expect(write.status).toBe(403);
    expect(write.body.error.details.refused_by).toBe("key");
    // Without scopes, the defaults narrowed to what the list needs: read (network is never a default scope).
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { tools: ["readonly", "acme_weather"] })).body.scopes).toEqual(["read"]);
  });

  it("a scope beyond the list is refused as before, the custom tool's scope counted in (network with acme_weather, not write)", async () => {
    const app = testApp();
    const a = await tenantWithTool(app);
    const r = await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { tools: ["readonly", "acme_weather"], scopes: ["read", "network", "write"] });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain("'write' exceed");
    expect(r.body.error.details.tools_scopes.sort()).toEqual(["network", "read"]);
  });

  it("a name that is no tool of this tenant is refused with the closest name; another tenant's custom tool is no name here", async () => {
    const app = testApp();
    const a = await tenantWithTool(app);
    const b = await newTenant(app);
    const typo = await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { tools: ["readonly", "acme_wether"] });
    expect(typo.status).toBe(400);
    expect(typo.body.error.message).toContain("Did you mean 'acme_weather'?");
    const other = await admin(app, `/v1/admin/tenants/${b.tenant}/keys`, { tools: ["readonly", "acme_weather"] });
    expect(other.status).toBe(400);
    expect(other.body.error.message).not.toContain("Did you mean 'acme_weather'");
    const ws = await post(app, b.key, "/v1/workspaces", { id: "w2", tools: ["acme_weather"] });
    expect(ws.status).toBe(400);
  });

  it("a tenant's own key (POST /v1/keys) may name the custom tool too, within its own bounds", async () => {
    const app = testApp();
    const a = await tenantWithTool(app);
    const manager = (await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { scopes: ["read", "network", "manage"] })).body.key as string;
    const child = await post(app, manager, "/v1/keys", { tools: ["acme_weather"], scopes: ["network"] });
    expect(child.status, JSON.stringify(child.body)).toBe(201);
    held(await post(app, child.body.key, `/v1/workspaces/${a.ws}/tools/acme_weather`, { city: "Oslo" }));
    expect((await post(app, child.body.key, `/v1/workspaces/${a.ws}/tools/read`, { file_path: "x" })).status).toBe(403);
    const listed = await app.request("/v1/keys", { headers: { authorization: `Bearer ${manager}` } });
    expect(((await listed.json()) as any).keys.map((k: any) => k.key_id)).toContain(child.body.key_id);
  });

  it("a workspace's list names a custom tool: a key holding its scope may call it there, and the workspace's routes act only with the list's scopes", async () => {
    const app = testApp();
    const a = await tenantWithTool(app);
    const key = (await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { scopes: ["read", "write", "network"] })).body.key as string;
    const made = await post(app, key, "/v1/workspaces", { id: "wx", tools: ["readonly", "acme_weather"] });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.tools).toEqual(["readonly", "acme_weather"]);
    held(await post(app, key, `/v1/workspaces/wx/tools/acme_weather`, { city: "Oslo" }));
    expect(await mcpToolNames(app, key, "wx")).toContain("acme_weather");
    const put = await app.request("/v1/workspaces/wx/files/a.txt", { method: "PUT", headers: { authorization: `Bearer ${key}` }, body: "x" });
    expect(put.status).toBe(403);
  });

  it("a custom tool deleted after a list named it adds nothing: the key keeps its preset, the name answers as no tool", async () => {
    const app = testApp();
    const a = await tenantWithTool(app);
    const key = (await admin(app, `/v1/admin/tenants/${a.tenant}/keys`, { tools: ["readonly", "acme_weather"], scopes: ["read", "network"] })).body.key as string;
    expect((await admin(app, `/v1/admin/tenants/${a.tenant}/tools/custom/acme_weather`, undefined, "DELETE")).status).toBe(200);
    expect((await post(app, key, `/v1/workspaces/${a.ws}/tools/read`, { file_path: "missing.txt" })).body.error.code).toBe("NOT_FOUND");
    const gone = await post(app, key, `/v1/workspaces/${a.ws}/tools/acme_weather`, { city: "Oslo" });
    expect(gone.status).toBe(404);
    expect(await mcpToolNames(app, key, a.ws)).not.toContain("acme_weather");
  });
});
