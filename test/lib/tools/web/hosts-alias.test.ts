/**
 * SSRF through host names in workerd (issue #25): locally (wrangler dev, npm start, this test pool)
 * the runtime resolves a name through this machine's hosts file (`vm`, `runsc` → 127.0.0.1) where
 * the guard never sees the address, so every door refuses every name there: web_fetch (directly and
 * as a redirect target), a webhook's creation and call, the model endpoint's save and use. Only a
 * Worker deployed on Cloudflare (TOOLSHED_WEB_EGRESS=cloudflare) reaches names. The apps are built
 * by fromWorkersEnv, as the Workers entry builds them. The real alias of a real server in workerd:
 * test/infra/worker-web.node.test.ts; in Node: hosts-alias.node.test.ts.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import { fromWorkersEnv, type WorkersEnv } from "../../../../lib/runtime/workers.js";
import { literalOnlyFetcher, type WebFetcher } from "../../../../lib/tools/web/transport.js";
import { ADMIN, admin, newTenant, testApp } from "../../../helpers.js";
import { checkOutputs } from "../../../support/output-check.js";

const workers = (vars: Partial<WorkersEnv> = {}) => checkOutputs(createApp({ ...fromWorkersEnv({ ...(env as unknown as WorkersEnv), ...vars }), adminToken: ADMIN }, tools), tools);
const local = workers();
/** As deployed on Cloudflare: saves what the local app must refuse to reach. */
const deployed = workers({ TOOLSHED_WEB_EGRESS: "cloudflare" });

const ALIASES = ["vm", "runsc"];

const blocked = (r: { status: number; body: any }, name: string) => {
  expect(r.body.error?.code, JSON.stringify(r.body).slice(0, 500)).toBe("BLOCKED");
  expect(r.status).toBe(403);
  expect(r.body.error.message).toContain(`${name} is a host name, and this runtime resolves names itself`);
  expect(r.body.error.message).toMatch(/use the host's public IP address, or run Toolshed where names are resolved and checked .*TOOLSHED_WEB_EGRESS=cloudflare/);
  expect(r.body.error.details.reason).toBe("a host name this runtime cannot check");
  return r.body.error as { message: string };
};

/** A transport that plays one public site, public.test, which redirects to `to`; every other host goes to the local default. */
const redirecting = (to: string): WebFetcher => ({
  check: literalOnlyFetcher.check,
  fetch: async (url, init, host, guard) => (url.hostname === "public.test" ? new Response(null, { status: 302, headers: { location: to } }) : literalOnlyFetcher.fetch(url, init, host, guard)),
});

describe.each(ALIASES)("locally, the hosts-file alias %s", (name) => {
  it("web_fetch refuses it, directly and as a redirect target", async () => {
    const t = await newTenant(local, { scopes: ["read", "network"] });
    const e = blocked(await t.call("web_fetch", { url: `http://${name}:8787/v1/tools` }), name);
    expect(e.message).toMatch(/^Refused to fetch http:\/\/\S+:8787\/v1\/tools: /);
    const hop = await newTenant(testApp({ webFetch: { fetcher: redirecting(`http://${name}:8787/secret`) } }), { scopes: ["read", "network"] });
    blocked(await hop.call("web_fetch", { url: "http://public.test/start" }), name);
  });

  it("a webhook is refused when created and when called", async () => {
    const t = await newTenant(local, { scopes: ["read", "network"] });
    const def = (url: string) => ({ name: "acme_hook", description: "echo", input_schema: { type: "object" }, backend: { type: "webhook", url } });
    expect(blocked(await admin(local, `/v1/admin/tenants/${t.tenant}/tools/custom`, def(`https://${name}:8443/hook`)), name).message).toMatch(/^Refused to call the webhook URL /);
    expect((await admin(local, `/v1/admin/tenants/${t.tenant}/tools/custom`, undefined, "GET")).body.tools).toEqual([]);
    expect((await admin(deployed, `/v1/admin/tenants/${t.tenant}/tools/custom`, def(`https://${name}:8443/hook`))).status).toBe(201);
    blocked(await t.call("acme_hook", {}), name);
  });

  it("the model endpoint is refused when saved and when a task uses it (directly or through a redirect)", async () => {
    const t = await newTenant(local, { scopes: ["read", "write", "execute"] });
    const model = (app: typeof local, base_url: string) => admin(app, `/v1/admin/tenants/${t.tenant}/model`, { base_url, api_key: "sk-test-0123456789abcdef", model: "m" }, "PUT");
    expect(blocked(await model(local, `http://${name}:8787/v1`), name).message).toMatch(/^Refused to use the model endpoint's base_url /);
    expect((await admin(local, `/v1/admin/tenants/${t.tenant}/model`, undefined, "GET")).status).toBe(404);
    expect((await model(deployed, `http://${name}:8787/v1`)).status).toBe(200);
    blocked(await t.call("task", { prompt: "hi" }), name);
    expect((await model(deployed, "http://public.test/v1")).status).toBe(200);
    const hop = testApp({ webFetch: { fetcher: redirecting(`http://${name}:8787/v1/chat/completions`) } });
    const res = await hop.request(`/v1/workspaces/${t.ws}/tools/task`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: JSON.stringify({ prompt: "hi" }) });
    blocked({ status: res.status, body: await res.json() }, name);
  });
});

describe("what reaches a URL locally, and on Cloudflare", () => {
  it("an IP literal still goes out locally: with the test-only loopback switch, 127.0.0.1 is tried (nothing listens on port 9), not refused", async () => {
    const t = await newTenant(testApp({ webFetch: { allowLoopback: true } }), { scopes: ["read", "network"] });
    const r = await t.call("web_fetch", { url: "http://127.0.0.1:9/", timeout: 20 });
    expect(r.body.error.code, JSON.stringify(r.body)).toBe("UNAVAILABLE");
  });

  it("TOOLSHED_WEB_EGRESS=cloudflare lets a public name be saved; without it the same name is refused", async () => {
    const t = await newTenant(local);
    const def = { name: "acme_pub", description: "echo", input_schema: { type: "object" }, backend: { type: "webhook", url: "https://hooks.example.com/echo" } };
    blocked(await admin(local, `/v1/admin/tenants/${t.tenant}/tools/custom`, def), "hooks.example.com");
    expect((await admin(workers({ TOOLSHED_WEB_EGRESS: "yes" }), `/v1/admin/tenants/${t.tenant}/tools/custom`, def)).status).toBe(403);
    expect((await admin(deployed, `/v1/admin/tenants/${t.tenant}/tools/custom`, def)).status).toBe(201);
  });
});
