/**
 * Every route declares what it needs (DESIGN invariant 8), read from the app itself: the routes
 * Hono serves (app.routes, with the policy their guard carries) and the OpenAPI document must
 * list the same operations with the same access; then every route is called with keys of every
 * scope set, the admin token, no key and a bad key. Refused exactly where the policy says
 * (401 / 403), and a refused call changes nothing in storage or KV but its audit entry. Routes added later are
 * covered without touching this file: their calls are built from the document.
 */
import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createAuthBackoff } from "../../../../lib/api/auth/backoff.js";
import { SCOPES, type Scope } from "../../../../lib/contract/caller.js";
import { guard } from "../../../../lib/api/routes/access.js";
import { accessLabel } from "../../../../lib/api/routes/route-policy.js";
import { assertEveryRouteGuarded, docPathOf, servedRoutes, type ServedRoute } from "../../../../lib/api/routes/served-routes.js";
import { ADMIN, admin, testApp, type TestApp } from "../../../helpers.js";
import { routeRequest } from "../../../support/route-request.js";

// Failed authentications are the point here: no backoff (tested in auth-backoff.test.ts).
const app: TestApp = testApp({ authBackoff: createAuthBackoff({ freeFailures: Infinity }), syncSecret: "route-walk-sync-secret" });

/** The decisions (issue #10). Routes not listed here are still walked, by the policy they declare. */
const EXPECTED: Record<string, string> = {
  "GET /": "public",
  "GET /healthz": "public",
  "GET /openapi.json": "public",
  "GET /docs": "public",
  "GET /v1/tools": "public",
  "POST /v1/workspaces": "tenant:write",
  "GET /v1/workspaces": "tenant:read",
  "GET /v1/workspaces/{ws}": "tenant:read",
  "DELETE /v1/workspaces/{ws}": "tenant:write",
  "GET /v1/workspaces/{ws}/files/": "tenant:read",
  "GET /v1/workspaces/{ws}/files/{path}": "tenant:read",
  "HEAD /v1/workspaces/{ws}/files/{path}": "tenant:read",
  "PUT /v1/workspaces/{ws}/files/{path}": "tenant:write",
  "POST /v1/workspaces/{ws}/uploads": "tenant:write",
  "DELETE /v1/workspaces/{ws}/files/{path}": "tenant:write",
  "POST /v1/admin/tenants": "admin",
  "GET /v1/admin/tenants": "admin",
  "GET /v1/admin/tenants/{tenant}": "admin",
  "GET /v1/admin/tenants/{tenant}/keys": "admin",
  "POST /v1/admin/tenants/{tenant}/keys": "admin",
  "DELETE /v1/admin/tenants/{tenant}/keys/{key_id}": "admin",
  "GET /v1/admin/tenants/{tenant}/policy": "admin",
  "PUT /v1/admin/tenants/{tenant}/policy": "admin",
  "GET /v1/admin/tenants/{tenant}/model": "admin",
  "PUT /v1/admin/tenants/{tenant}/model": "admin",
  "DELETE /v1/admin/tenants/{tenant}/model": "admin",
  "POST /v1/admin/tenants/{tenant}/gc": "admin",
  "GET /v1/admin/tenants/{tenant}/oauth": "admin",
  "PUT /v1/admin/tenants/{tenant}/oauth": "admin",
  "DELETE /v1/admin/tenants/{tenant}/oauth": "admin",
  // OAuth Protected Resource Metadata (RFC 9728): public by definition (docs/oauth.md).
  "GET /.well-known/oauth-protected-resource": "public",
  "GET /.well-known/oauth-protected-resource/{resource_path}": "public",
  // The audit log names every key that acted and what it did: the operator's key, not an agent's (docs/audit.md).
  "GET /v1/workspaces/{ws}/audit": "tenant:manage",
  "GET /v1/audit": "tenant:manage",
  // Deleting a checkpoint gives up a version (its storage goes at the next GC): write, like creating one.
  "GET /v1/workspaces/{ws}/checkpoints/{id}": "tenant:read",
  "DELETE /v1/workspaces/{ws}/checkpoints/{id}": "tenant:write",
  "POST /v1/workspaces/{ws}/import": "tenant:write",
  "GET /v1/workspaces/{ws}/export": "tenant:read",
  "GET /v1/workspaces/{ws}/sessions/{session}/todos": "tenant:read",
  "GET /docs/init.js": "public",
  "GET /docs/assets/{digest}/{file}": "public",
  "ALL /v1/sync/{path}": "sync",
  "POST /v1/workspaces/{ws}/tools/{tool}": "tenant:any",
  // MCP: any key of the tenant; each tools/call checks its tool's scope (lib/doors/mcp.ts).
  "POST /v1/workspaces/{ws}/mcp": "tenant:any",
  "GET /v1/workspaces/{ws}/mcp": "tenant:any",
  "DELETE /v1/workspaces/{ws}/mcp": "tenant:any",
  ...Object.fromEntries(tools.map((t) => [`POST /v1/workspaces/{ws}/tools/${t.name}`, `tenant:${t.permission}`])),
};

/** Every non-empty set of scopes. */
const SCOPE_SETS: Scope[][] = Array.from({ length: 2 ** SCOPES.length - 1 }, (_, i) => SCOPES.filter((_, b) => ((i + 1) >> b) & 1));

let doc: any;
let routes: ServedRoute[];
let tenant: string;
const keys = new Map<string, string>(); // scope set "read,write" → key
let spareKeyId: string;

async function snapshot(): Promise<string> {
  const objects: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ ...(cursor ? { cursor } : {}) });
    // The one thing a refused call adds is its audit entry (lib/run/audit/, tested in audit.test.ts).
    objects.push(...page.objects.filter((o) => !/^t\/[^/]+\/(w\/[^/]+\/x\/)?audit\//.test(o.key)).map((o) => `${o.key} ${o.etag}`));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  // KV by name: what a refused call could add (keys, session records) is a new name.
  const kv: string[] = [];
  let kvCursor: string | undefined;
  do {
    const page = await env.KV.list({ ...(kvCursor ? { cursor: kvCursor } : {}) });
    for (const k of page.keys) kv.push(k.name);
    kvCursor = page.list_complete ? undefined : page.cursor;
  } while (kvCursor);
  return [...objects.sort(), "--", ...kv.sort()].join("\n");
}

/** A request for one route, built from its document entry (or a plain one for undocumented routes). */
const requestFor = (route: ServedRoute) => routeRequest(doc, route, { ws: "probe", tenant, key_id: spareKeyId, tool: "nope", path: "secret.txt" });

async function call(route: ServedRoute, authorization?: string) {
  const r = requestFor(route);
  const res = await app.request(r.url, { method: r.method, headers: { ...r.headers, ...(authorization ? { authorization } : {}) }, ...(r.body !== undefined ? { body: r.body } : {}) });
  const text = await res.text();
  return { status: res.status, code: text.startsWith("{") ? (JSON.parse(text) as any).error?.code : undefined, text, challenge: res.headers.get("www-authenticate") };
}

/** The fixture every allowed call may have changed: workspace "probe" with secret.txt. */
async function ensureFixture() {
  const key = keys.get(SCOPES.join(","))!;
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  await app.request("/v1/workspaces", { method: "POST", headers: h, body: JSON.stringify({ id: "probe" }) });
  await app.request("/v1/workspaces/probe/files/secret.txt", { method: "PUT", headers: { authorization: h.authorization, "content-length": "6" }, body: "secret" });
}

beforeAll(async () => {
  doc = await (await app.request("/openapi.json")).json();
  routes = servedRoutes(app);
  tenant = `t-walk-${crypto.randomUUID().slice(0, 8)}`;
  expect((await admin(app, "/v1/admin/tenants", { id: tenant })).status).toBe(201);
  for (const set of SCOPE_SETS) {
    const k = await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name: set.join("+"), scopes: set });
    expect(k.status).toBe(201);
    keys.set(set.join(","), k.body.key);
  }
  spareKeyId = (await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name: "spare" })).body.key_id;
  await ensureFixture();
});

describe("the app's routes and its OpenAPI document", () => {
  it("are served by Hono's RegExpRouter (one regular expression per method), not its TrieRouter fallback", async () => {
    // A route RegExpRouter cannot serve (a `:param` beside static siblings, e.g. /tools/:tool beside
    // /tools/read) makes SmartRouter fall back to TrieRouter for every request: ~0.7 ms of CPU per
    // request in workerd (a CPU profile of read through wrangler dev), not a failure anyone sees.
    await app.request("/health");
    expect((app as unknown as { router: { name: string } }).router.name).toBe("SmartRouter + RegExpRouter");
  });

  it("every route the app serves carries a policy", () => {
    expect(routes.length).toBeGreaterThan(20);
    expect(routes.filter((r) => !r.policy).map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });

  it("the document lists exactly the documented routes, each with the access of its guard", () => {
    const served = new Map<string, string>();
    for (const r of routes) if (!r.policy!.undocumented) served.set(`${r.method} ${docPathOf(r)}`, accessLabel(r.policy!.access));
    const documented = new Map<string, string>();
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) documented.set(`${method.toUpperCase()} ${path}`, op["x-toolshed-access"]);
    }
    expect([...documented.keys()].sort()).toEqual([...served.keys()].sort());
    for (const [k, access] of served) expect(documented.get(k), k).toBe(access);
    // The document's security matches too: tenant routes a key, admin routes the admin token, public none.
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        const a: string = op["x-toolshed-access"];
        const want = a.startsWith("tenant:") ? [{ Bearer: [] }] : a === "admin" ? [{ AdminBearer: [] }] : [];
        expect(op.security ?? [], `${method} ${path}`).toEqual(want);
      }
    }
  });

  it("each route's access is the one decided, and every decided route is served", () => {
    const actual = Object.fromEntries(routes.map((r) => [`${r.method} ${docPathOf(r)}`, accessLabel(r.policy!.access)]));
    for (const [k, v] of Object.entries(EXPECTED)) expect(actual[k], k).toBe(v);
    // Only the runner's API, the unknown-tool answer and the /docs page's own script and assets are undocumented.
    const undocumented = routes.filter((r) => r.policy!.undocumented).map((r) => `${r.method} ${docPathOf(r)}`);
    // MCP's JSON-RPC is specified by the MCP spec, not by OpenAPI.
    expect(undocumented.sort()).toEqual(["ALL /v1/sync/{path}", "DELETE /v1/workspaces/{ws}/mcp", "GET /docs/assets/{digest}/{file}", "GET /docs/init.js", "GET /v1/workspaces/{ws}/mcp", "POST /v1/workspaces/{ws}/mcp", "POST /v1/workspaces/{ws}/tools/{tool}"]);
    // Routes that bind the {ws} of their path.
    for (const k of ["POST /v1/workspaces/{ws}/mcp", "POST /v1/workspaces/{ws}/import", "GET /v1/workspaces/{ws}/export", "GET /v1/workspaces/{ws}/sessions/{session}/todos", "PUT /v1/workspaces/{ws}/files/{path}"]) {
      const r = routes.find((x) => `${x.method} ${docPathOf(x)}` === k)!;
      expect(r.policy!.access, k).toMatchObject({ auth: "tenant", workspace: true });
    }
  });

  it("an app with a route registered without a policy refuses to start", () => {
    const bare = new Hono();
    bare.get("/guarded", guard({} as never, { access: { auth: "public" } }), (c) => c.text("ok"));
    expect(() => assertEveryRouteGuarded(bare as never)).not.toThrow();
    bare.post("/v1/forgotten", (c) => c.text("oops"));
    expect(() => assertEveryRouteGuarded(bare as never)).toThrow(/POST \/v1\/forgotten/);
    // Also through a mounted sub-app (Hono wraps its handlers).
    const outer = new Hono();
    const sub = new Hono();
    sub.onError((e, c) => c.text(String(e), 500));
    sub.get("/x", guard({} as never, { access: { auth: "public" } }), (c) => c.text("ok"));
    outer.route("/", sub);
    expect(() => assertEveryRouteGuarded(outer as never)).not.toThrow();
    sub.get("/y", (c) => c.text("oops"));
    outer.route("/", sub);
    expect(() => assertEveryRouteGuarded(outer as never)).toThrow(/GET \/y/);
  });
});

/** The paths under /v1/sync/* that lib/sync/server.ts serves (one token check before dispatch guards them all). */
const SYNC_SUBROUTES = ["manifest", "modes", "fetch", "put", "delete", "stage", "commit", "run", "run/r1/claim"];

describe("every route, with every kind of credential", () => {
  // The decided routes whose allowed call must change storage: proof that the snapshots can tell.
  const mustChange = ["POST /v1/workspaces", "DELETE /v1/workspaces/{ws}", "PUT /v1/workspaces/{ws}/files/{path}", "DELETE /v1/workspaces/{ws}/files/{path}", "POST /v1/workspaces/{ws}/tools/write", "POST /v1/admin/tenants", "POST /v1/admin/tenants/{tenant}/keys"];

  for (const route of servedRoutes(app)) {
    const name = `${route.method} ${docPathOf(route)}`;
    it(`${name}: refused exactly where its policy says, and a refused call changes nothing`, async () => {
      const access = route.policy!.access;
      await ensureFixture();
      const before = await snapshot();
      const expectStatus = async (authorization: string | undefined, status: number[], what: string) => {
        const r = await call(route, authorization);
        expect(status, `${name} with ${what}: ${r.status} ${r.text.slice(0, 200)}`).toContain(r.status);
        return r;
      };
      if (access.auth === "public") {
        for (const a of [undefined, `Bearer ${ADMIN}`, `Bearer ${keys.get("read")}`, "Bearer tsk_bogus"]) {
          const r = await call(route, a);
          expect([401, 403, 429], `${name} is public: ${r.status}`).not.toContain(r.status);
        }
        return;
      }
      if (access.auth === "sync") {
        // No API key or admin token opens the runner's API (it takes only its own per-run token).
        for (const a of [undefined, `Bearer ${ADMIN}`, ...[...keys.values()].map((k) => `Bearer ${k}`)]) await expectStatus(a, [401, 403], a ?? "no credential");
        // Every sub-route lib/sync/server.ts dispatches, the packed write-back's stage and commit included.
        for (const sub of SYNC_SUBROUTES) {
          for (const a of [undefined, `Bearer ${ADMIN}`, ...[...keys.values()].map((k) => `Bearer ${k}`)]) {
            const r = await app.request(`/v1/sync/${sub}`, { method: "POST", headers: { "content-type": "application/json", ...(a ? { authorization: a } : {}) }, body: "{}" });
            expect([401, 403], `POST /v1/sync/${sub} with ${a ?? "no credential"}: ${r.status}`).toContain(r.status);
          }
        }
        expect(await snapshot(), `${name}: storage after refused calls`).toBe(before);
        return;
      }
      // Nobody, a bogus key, and the wrong kind of credential: 401.
      await expectStatus(undefined, [401], "no credential");
      await expectStatus("Bearer tsk_bogus_key", [401], "a bogus key");
      if (access.auth === "admin") {
        for (const [set, key] of keys) await expectStatus(`Bearer ${key}`, [401], `tenant key [${set}]`);
      } else {
        // Every 401 of a tenant route carries the Bearer challenge pointing at its resource's metadata (docs/oauth.md).
        const metadata = `resource_metadata="http://localhost/.well-known/oauth-protected-resource${/\/mcp$/.test(route.path) ? requestFor(route).url : ""}"`;
        expect((await call(route)).challenge, name).toBe(`Bearer ${metadata}`);
        expect((await expectStatus(`Bearer ${ADMIN}`, [401], "the admin token")).challenge, name).toBe(`Bearer ${metadata}, error="invalid_token"`);
        // Every scope set without the needed scope: 403 PERMISSION_DENIED, with insufficient_scope naming it.
        if (access.scope !== "any") {
          for (const [set, key] of keys) {
            if (set.split(",").includes(access.scope)) continue;
            const r = await expectStatus(`Bearer ${key}`, [403], `[${set}]`);
            if (route.method !== "HEAD") expect(r.code, name).toBe("PERMISSION_DENIED");
            expect(r.challenge, `${name} [${set}]`).toBe(`Bearer ${metadata}, error="insufficient_scope", scope="${access.scope}"`);
          }
        }
      }
      expect(await snapshot(), `${name}: storage after refused calls`).toBe(before);

      // Every credential with what the route needs gets past the guard.
      const allowed = access.auth === "admin" ? [`Bearer ${ADMIN}`] : [...keys].filter(([set]) => access.scope === "any" || set.split(",").includes(access.scope)).map(([, k]) => `Bearer ${k}`);
      expect(allowed.length).toBeGreaterThan(0);
      for (const [i, a] of allowed.entries()) {
        const r = await call(route, a);
        // A key route's own rule (a key acts only on keys within its bounds: lib/api/auth/key-bounds.ts) is past the guard.
        const ownRule = r.status === 403 && r.text.includes('"refused_by":"key_bounds"');
        if (!ownRule) expect([401, 403, 429], `${name} allowed: ${r.status} ${r.text.slice(0, 200)}`).not.toContain(r.status);
        if (i === 0 && mustChange.includes(name)) expect(await snapshot(), `${name}: the allowed call changes storage`).not.toBe(before);
      }
    }, 180_000);
  }
});
