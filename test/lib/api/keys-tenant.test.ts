/**
 * Keys tenants manage (issue #28 §5) over local R2 and KV: keys limited to workspaces (404 on any
 * other), expiring keys (401), rotation with a grace, revocation within the documented bound on
 * another isolate, and tenant-made keys that never exceed their maker.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../lib/shared/hash.js";
import { IsolateCache } from "../../../lib/shared/isolate-cache.js";
import type { AuthInfo } from "../../../lib/contract/caller.js";
import { servedRoutes } from "../../../lib/api/routes/served-routes.js";
import { admin, newTenant, testApp, type TestApp } from "../../helpers.js";
import { routeRequest } from "../../support/route-request.js";

const app = testApp();

const as = (a: TestApp, key: string) => async (path: string, init: RequestInit = {}) => {
  const res = await a.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : null };
};
const post = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });

/** Every object of one workspace, with its etag. */
async function snapshot(tenant: string, ws: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix: `t/${tenant}/w/${ws}/`, ...(cursor ? { cursor } : {}) });
    out.push(...page.objects.map((o) => `${o.key} ${o.etag}`));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out.sort();
}

/** A tenant with a manage key (tools "all"). */
async function managed() {
  const t = await newTenant(app);
  const k = await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write", "execute", "manage"] });
  expect(k.status).toBe(201);
  return { ...t, manage: as(app, k.body.key), manageKey: k.body.key as string, manageId: k.body.key_id as string };
}

describe("keys a tenant manages", () => {
  it("a key limited to workspace A gets 404 on B, by every route; listing shows A only", async () => {
    const t = await managed();
    expect((await t.manage("/v1/workspaces", post({ id: "alpha" }))).status).toBe(201);
    const made = await t.manage("/v1/keys", post({ name: "end-user", workspaces: ["alpha"], scopes: ["read", "write"] }));
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ workspaces: ["alpha"], scopes: ["read", "write"], created_by: t.manageId });
    const user = as(app, made.body.key);
    expect((await user("/v1/workspaces/alpha/tools/write", post({ file_path: "a.txt", content: "a" }))).status).toBe(200);
    for (const [path, init] of [
      [`/v1/workspaces/${t.ws}/tools/read`, post({ file_path: "a.txt" })],
      [`/v1/workspaces/${t.ws}`, {}],
      [`/v1/workspaces/${t.ws}/files/a.txt`, {}],
      [`/v1/workspaces/${t.ws}/mcp`, post({ jsonrpc: "2.0", id: 1, method: "tools/list" })],
      [`/v1/workspaces/${t.ws}/checkpoints`, post({})],
      ["/v1/workspaces/nope/tools/read", post({ file_path: "a.txt" })],
    ] as const) {
      const r = await user(path, init as RequestInit);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(404);
      // The MCP route answers as MCP answers errors: a JSON-RPC error carrying the code in data (docs/mcp-and-providers.md, Refusals).
      expect(path.endsWith("/mcp") ? r.body.error.data.code : r.body.error.code, path).toBe("NOT_FOUND");
    }
    // The answer for an existing workspace it may not reach is the answer for a missing one.
    const other = await user(`/v1/workspaces/${t.ws}`);
    const missing = await user("/v1/workspaces/nope");
    expect(other.body.error.message.replace(t.ws, "X")).toBe(missing.body.error.message.replace("nope", "X"));
    const list = await user("/v1/workspaces");
    expect(list.body.workspaces.map((w: any) => w.id)).toEqual(["alpha"]);
    // It can neither create nor fork into a workspace outside its list.
    expect((await user("/v1/workspaces", post({ id: "beta" }))).status).toBe(403);
    expect((await user("/v1/workspaces", post({ id: "alpha-copy", from_workspace: t.ws }))).status).toBe(403);
    expect((await user("/v1/workspaces", post({ id: "alpha", from_workspace: t.ws }))).status).toBe(404);
  });

  it("every route whose path names a workspace (read from the app) answers 404 to a key limited to another, and changes nothing", async () => {
    const t = await managed();
    expect((await t.manage("/v1/workspaces", post({ id: "mine" }))).status).toBe(201);
    expect((await t.call("write", { file_path: "keep.txt", content: "keep\n" })).status).toBe(200);
    const made = await t.manage("/v1/keys", post({ workspaces: ["mine"], scopes: ["read", "write", "execute", "manage"] }));
    const doc = await (await app.request("/openapi.json")).json();
    const before = await snapshot(t.tenant, t.ws);
    const routes = servedRoutes(app).filter((r) => r.path.includes(":ws") && r.policy?.access.auth === "tenant");
    expect(routes.length).toBeGreaterThan(30);
    for (const route of routes) {
      const rr = routeRequest(doc, route, { ws: t.ws, path: "keep.txt", tool: "read", name: "read", id: "probe", call_id: "probe", checkpoint: "probe", session: "s1" });
      const res = await app.request(rr.url, { method: rr.method, headers: { authorization: `Bearer ${made.body.key}`, ...rr.headers }, ...(rr.body !== undefined ? { body: rr.body } : {}) });
      expect(res.status, `${rr.method} ${rr.url}: ${await res.clone().text()}`).toBe(404);
    }
    expect(await snapshot(t.tenant, t.ws)).toEqual(before);
  });

  it("a workspace-limited key is refused the tenant-wide routes (usage of every workspace, the tenant's audit log, secrets), and gets its own workspace's usage", async () => {
    const t = await managed();
    const made = await t.manage("/v1/keys", post({ workspaces: ["alpha"], scopes: ["read", "manage"] }));
    // The secrets routes answer UNAVAILABLE without a deployment key: this app has one.
    const user = as(testApp({ secretsKey: "k".repeat(40) }), made.body.key);
    for (const [path, init] of [["/v1/usage", {}], ["/v1/usage?workspace=beta", {}], ["/v1/usage/export", {}], ["/v1/audit", {}], ["/v1/secrets", {}], ["/v1/secrets/npm", { method: "PUT", body: JSON.stringify({ value: "s3cr3t-value-123", destinations: [{ host: "npm.example.com", header: "Authorization" }] }) }]] as const) {
      const r = await user(path, init as RequestInit);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(403);
      expect(r.body.error.details.refused_by).toBe("key_workspaces");
    }
    // Its own workspace's usage is past this rule (this test app has no usage store: UNAVAILABLE, not a refusal).
    expect((await user("/v1/usage?workspace=alpha")).status).not.toBe(403);
    // The unlimited manage key is not refused by it.
    expect((await t.manage("/v1/audit")).status).toBe(200);
  });

  it("every tenant route whose path names no workspace (read from the app) refuses a workspace-limited key, but the few that bound what they reach by the key itself; nothing is stored", async () => {
    const t = await managed();
    const tools = () => env.FILES.get(`t/${t.tenant}/custom-tools.json`).then((o) => o?.text());
    const echo = { name: "acme_echo", description: "Echo.", input_schema: { type: "object", properties: { message: { type: "string" } } }, backend: { type: "plugin", command: "cat" } };
    expect((await t.manage("/v1/tools/custom", post(echo))).status).toBe(201);
    const before = await tools();
    const made = await t.manage("/v1/keys", post({ workspaces: ["alpha"], scopes: ["read", "write", "execute", "manage"] }));
    const user = as(testApp({ secretsKey: "k".repeat(40) }), made.body.key);
    // The attack that found it: a key limited to "alpha" replaced the tenant's custom tool, whose command then ran in every other workspace.
    const hijack = await user("/v1/tools/custom/acme_echo", { method: "PUT", body: JSON.stringify({ ...echo, backend: { type: "plugin", command: "cat secret.txt" } }) });
    expect(hijack.status, JSON.stringify(hijack.body)).toBe(403);
    expect(hijack.body.error.details.refused_by).toBe("key_workspaces");
    expect((await user("/v1/tools/custom/acme_echo", { method: "DELETE" })).status).toBe(403);
    const doc = await (await app.request("/openapi.json")).json();
    const routes = servedRoutes(app).filter((r) => !r.path.includes(":ws") && r.policy?.access.auth === "tenant");
    expect(routes.length).toBeGreaterThan(10);
    const bounded: string[] = [];
    for (const route of routes) {
      const access = route.policy!.access as { keyBounded?: true };
      if (access.keyBounded) {
        bounded.push(`${route.method} ${route.path}`);
        continue;
      }
      const rr = routeRequest(doc, route, { name: "acme_echo", key_id: made.body.key_id });
      const res = await user(rr.url, { method: rr.method, ...(rr.body !== undefined ? { body: rr.body } : {}) });
      expect(res.status, `${rr.method} ${rr.url}: ${JSON.stringify(res.body)}`).toBe(403);
      expect(res.body.error.details.refused_by).toBe("key_workspaces");
    }
    // The routes that bound themselves: the workspaces it lists and creates, the keys it could have made, one workspace's usage.
    expect(bounded.sort()).toEqual(["DELETE /v1/keys/:key_id", "GET /v1/keys", "GET /v1/usage", "GET /v1/workspaces", "POST /v1/keys", "POST /v1/keys/:key_id/rotate", "POST /v1/workspaces"]);
    expect(await tools()).toBe(before);
  });

  it("a prefix limit: new workspaces get an id under the prefix; others are refused", async () => {
    const t = await managed();
    const made = await t.manage("/v1/keys", post({ workspaces: ["proj-*"] }));
    const user = as(app, made.body.key);
    const w = await user("/v1/workspaces", post({}));
    expect(w.status).toBe(201);
    expect(w.body.id).toMatch(/^proj-[a-z2-7]{8}$/);
    expect((await user("/v1/workspaces", post({ id: "proj-x" }))).status).toBe(201);
    expect((await user("/v1/workspaces", post({ id: "other" }))).status).toBe(403);
    expect((await user(`/v1/workspaces/${w.body.id}/tools/ls`, post({}))).status).toBe(200);
  });

  it("a tenant-made key never exceeds its maker: scopes, tools, workspaces, expiry", async () => {
    const t = await managed();
    const narrowMade = await t.manage("/v1/keys", post({ scopes: ["read", "write", "manage"], workspaces: ["a-*"], expires_at: new Date(Date.now() + 3600_000).toISOString() }));
    expect(narrowMade.status).toBe(201);
    const narrow = as(app, narrowMade.body.key);
    const refused = async (body: unknown, what: RegExp) => {
      const r = await narrow("/v1/keys", post(body));
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(r.body.error.message).toMatch(what);
    };
    const misspelt = await narrow("/v1/keys", post({ scope: ["read"] })); // in workerd too: the closest field and the known ones
    expect(misspelt.status).toBe(400);
    expect(misspelt.body.error.message).toContain("Unknown field 'scope' (did you mean 'scopes'? known: name, scopes,");
    await refused({ scopes: ["read", "execute"] }, /scopes \["execute"\]/);
    await refused({ workspaces: ["b"] }, /workspaces/);
    await refused({ workspaces: ["a-x", "b-*"] }, /workspaces/);
    await refused({ expires_at: new Date(Date.now() + 7200_000).toISOString() }, /expiry/);
    const ok = await narrow("/v1/keys", post({ scopes: ["read"], workspaces: ["a-1"] }));
    expect(ok.status).toBe(201);
    // Its child inherits its expiry when none is given.
    expect(ok.body.expires_at).toBe(narrowMade.body.expires_at);
    const readonly = as(app, (await t.manage("/v1/keys", post({ tools: "readonly" }))).body.key);
    expect((await readonly("/v1/keys", post({}))).status).toBe(403); // no manage scope
    // It lists and revokes only keys within its bounds (the tenant's wider manage key is not among them).
    const listed = await narrow("/v1/keys");
    expect(listed.body.keys.map((k: any) => k.key_id)).not.toContain(t.manageId);
    expect((await narrow(`/v1/keys/${t.manageId}`, { method: "DELETE" })).status).toBe(404); // as a key never made: see the next test
    expect((await narrow(`/v1/keys/${ok.body.key_id}`, { method: "DELETE" })).status).toBe(200);
  });

  it("a key beyond a manage key's bounds is, to its revoke and rotate, exactly a key id never made: its scopes, tools and the workspaces it covers are not named", async () => {
    const t = await managed();
    const limited = await t.manage("/v1/keys", post({ name: "end-user-manager", scopes: ["read", "manage"], workspaces: ["ws1"] }));
    expect(limited.status).toBe(201);
    const manager = as(app, limited.body.key);
    // Wider keys whose ids it can learn (a key that acts in ws1 is named by ws1's usage and audit): another workspace, more scopes, more tools.
    const wider = [
      await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read"], workspaces: ["ws1", "secret-plans"] }),
      await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "write"], workspaces: ["ws1"] }),
      await admin(app, `/v1/admin/tenants/${t.tenant}/keys`, { scopes: ["read", "manage"] }),
    ];
    const never = "zzzzzzzzzz";
    const answers = async (id: string) => [
      await manager(`/v1/keys/${id}`, { method: "DELETE" }),
      await manager(`/v1/keys/${id}/rotate`, post({})),
    ];
    const unknown = await answers(never);
    for (const w of wider) {
      expect(w.status).toBe(201);
      const got = await answers(w.body.key_id);
      for (const [i, r] of got.entries()) {
        expect(r.status, JSON.stringify(r.body)).toBe(404);
        expect(JSON.stringify(r.body)).not.toContain("secret-plans");
        expect(r.body.error.message.replaceAll(w.body.key_id, never)).toBe(unknown[i]!.body.error.message);
      }
      expect((await as(app, w.body.key)("/v1/workspaces")).status).toBe(200); // neither revoked nor rotated
    }
    expect((await manager("/v1/keys")).body.keys.map((k: any) => k.key_id)).toEqual([limited.body.key_id]); // the listing hides the same keys
  });

  it("a key revokes itself and the keys it made at any depth, never a sibling within its bounds (not_maker, the sibling still works)", async () => {
    const t = await managed();
    const mk = async (maker: ReturnType<typeof as>, name: string) => {
      const r = await maker("/v1/keys", post({ name, scopes: ["read", "manage"] }));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return { id: r.body.key_id as string, call: as(app, r.body.key) };
    };
    const agent = await mk(t.manage, "agent");
    const sibling = await mk(t.manage, "approver"); // the same bounds as the agent's key: within them
    const child = await mk(agent.call, "child");
    const grandchild = await mk(child.call, "grandchild");
    expect((await agent.call("/v1/keys")).body.keys.map((k: any) => k.key_id)).toContain(sibling.id); // listed: within its bounds
    const refused = await agent.call(`/v1/keys/${sibling.id}`, { method: "DELETE" });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(refused.body.error).toMatchObject({ code: "PERMISSION_DENIED", details: { refused_by: "not_maker", key_id: sibling.id } });
    expect(refused.body.error.message).toMatch(/did not make key .* so it cannot revoke it.*DELETE \/v1\/admin\/tenants/);
    expect((await sibling.call("/v1/keys")).status).toBe(200);
    // A grandchild, through its maker's revocation too; then itself.
    expect((await agent.call(`/v1/keys/${child.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await agent.call(`/v1/keys/${grandchild.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await grandchild.call("/v1/keys")).status).toBe(401);
    expect((await agent.call(`/v1/keys/${agent.id}`, { method: "DELETE" })).status).toBe(200);
    // The maker of both still ends the sibling.
    expect((await t.manage(`/v1/keys/${sibling.id}`, { method: "DELETE" })).status).toBe(200);
  });

  it("an expired key is 401 naming the expiry; another tenant's key id is 404", async () => {
    const t = await managed();
    const made = await t.manage("/v1/keys", post({ expires_at: new Date(Date.now() + 60_000).toISOString() }));
    const user = as(app, made.body.key);
    expect((await user("/v1/workspaces")).status).toBe(200);
    // Move the stored expiry into the past (the clock cannot be moved in workerd).
    const hash = await sha256Hex(made.body.key);
    const rec = JSON.parse((await env.KV.get(`apikey/${hash}`))!);
    await env.KV.put(`apikey/${hash}`, JSON.stringify({ ...rec, expires_at: new Date(Date.now() - 1000).toISOString() }));
    const fresh = testApp(); // another isolate: no cached key
    const r = await as(fresh, made.body.key)("/v1/workspaces");
    expect(r.status).toBe(401);
    expect(r.body.error.message).toMatch(/expired/);
    const stranger = await managed();
    const unknown = await stranger.manage(`/v1/keys/${made.body.key_id}`, { method: "DELETE" });
    expect(unknown.status).toBe(404);
    // The same answer as for a key id never made, and it says where the keys are (no oracle, a next step).
    expect(unknown.body.error.message).toBe(`API key not found: ${made.body.key_id}. List the keys with GET /v1/keys (those within this key's bounds), or as the operator with GET /v1/admin/tenants/{tenant}/keys.`);
    expect((await stranger.manage(`/v1/keys/${made.body.key_id}/rotate`, post({}))).body.error.message).toBe(unknown.body.error.message);
    expect((await user("/v1/workspaces")).status).toBe(200);
  });

  it("rotation: both secrets work during the grace; grace 0 stops the old one at once", async () => {
    const t = await managed();
    const made = await t.manage("/v1/keys", post({}));
    const old = as(app, made.body.key);
    const rot = await t.manage(`/v1/keys/${made.body.key_id}/rotate`, post({ grace_seconds: 600 }));
    expect(rot.status).toBe(200);
    expect(rot.body.key_id).toBe(made.body.key_id);
    expect(rot.body.key).not.toBe(made.body.key);
    expect((await old("/v1/workspaces")).status).toBe(200);
    expect((await as(app, rot.body.key)("/v1/workspaces")).status).toBe(200);
    const again = await t.manage(`/v1/keys/${made.body.key_id}/rotate`, post({ grace_seconds: 0 }));
    expect((await as(app, rot.body.key)("/v1/workspaces")).status).toBe(401);
    expect((await as(app, again.body.key)("/v1/workspaces")).status).toBe(200);
    // The first secret is still in its grace; revoking the key ends every secret at once.
    expect((await old("/v1/workspaces")).status).toBe(200);
    expect((await t.manage(`/v1/keys/${made.body.key_id}`, { method: "DELETE" })).status).toBe(200);
    expect((await old("/v1/workspaces")).status).toBe(401);
    expect((await as(app, again.body.key)("/v1/workspaces")).status).toBe(401);
  });

  it("rotation of an expiring key: the old secret's grace is said to end no later than the key itself (it stops there, whatever the grace)", async () => {
    const t = await managed();
    const expires = new Date(Date.now() + 3_600_000).toISOString();
    const made = await t.manage("/v1/keys", post({ expires_at: expires }));
    expect(made.status).toBe(201);
    const rot = await t.manage(`/v1/keys/${made.body.key_id}/rotate`, post({ grace_seconds: 7 * 86_400 }));
    expect(rot.status).toBe(200);
    expect(rot.body.expires_at).toBe(expires);
    expect(rot.body.old_secret_valid_until).toBe(expires); // was a week ahead, past the key's own end
    const short = await t.manage(`/v1/keys/${made.body.key_id}/rotate`, post({ grace_seconds: 60 }));
    expect(Date.parse(short.body.old_secret_valid_until)).toBeLessThan(Date.parse(expires));
  });

  it("revocation reaches another isolate within its key cache's TTL (the documented bound: 5 s + the store's propagation)", async () => {
    const t = await managed();
    const made = await t.manage("/v1/keys", post({}));
    let clock = Date.now();
    const other = testApp({ apiKeys: new IsolateCache<AuthInfo | null>(5_000, 10_000, () => clock) });
    const user = as(other, made.body.key);
    expect((await user("/v1/workspaces")).status).toBe(200); // cached in the other isolate
    expect((await t.manage(`/v1/keys/${made.body.key_id}`, { method: "DELETE" })).status).toBe(200);
    clock += 4_900;
    expect((await user("/v1/workspaces")).status).toBe(200); // inside the bound: the cached key still answers
    clock += 200;
    expect((await user("/v1/workspaces")).status).toBe(401); // past it: refused
  });
});
