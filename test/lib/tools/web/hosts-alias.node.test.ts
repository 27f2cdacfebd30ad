/**
 * SSRF through a host name of this machine (issue #25): a hosts-file alias (`vm`, `runsc`, the
 * machine's own name) of a real server on this machine is refused with BLOCKED by every door that
 * reaches a URL: web_fetch (directly and as a redirect target), a webhook's creation and call, the
 * model endpoint's save and use. In Node, through both transports a Node app can have: Lambda's
 * (fromAwsEnv: resolves, checks every address, pins) and the default (no transport given: names refused).
 * The definitions a call door reads are saved by another app over the same storage (as one saved
 * before this guard, or by a deployment that could not check them), so each call door is tested alone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import { fromAwsEnv } from "../../../../lib/runtime/aws.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { cloudflareFetcher, literalOnlyFetcher, type WebFetchDeps, type WebFetcher } from "../../../../lib/tools/web/transport.js";
import { checkOutputs } from "../../../support/output-check.js";
import { startHostsAlias, type HostsAlias } from "../../../support/hosts-alias.js";

const ADMIN = "admin-hosts-alias";
const storage = memoryDriver();
const kv = storageKeyValue(memoryDriver(), "kv/");
const build = (webFetch?: WebFetchDeps) => checkOutputs(createApp({ storage, kv, adminToken: ADMIN, ...(webFetch ? { webFetch } : {}) }, tools), tools);
/** Saves what the tested app must refuse to reach: checks nothing of a name, allows loopback. */
const saver = build({ fetcher: cloudflareFetcher, allowLoopback: true });

let alias: HostsAlias;
beforeAll(async () => {
  alias = await startHostsAlias();
});
afterAll(() => alias?.close());

const send = async (app: ReturnType<typeof build>, path: string, token: string, body?: unknown, method = "POST") => {
  const res = await app.request(path, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: res.status, body: (await res.json()) as any };
};

async function tenant() {
  const id = `t${Math.random().toString(36).slice(2, 10)}`;
  expect((await send(saver, "/v1/admin/tenants", ADMIN, { id })).status).toBe(201);
  const key = (await send(saver, `/v1/admin/tenants/${id}/keys`, ADMIN, { scopes: ["read", "write", "execute", "network"] })).body.key as string;
  expect((await send(saver, "/v1/workspaces", key, { id: "main" })).status).toBe(201);
  return { id, key };
}

/** A BLOCKED answer that names the alias, and the alias's server never asked. */
const blocked = (r: { status: number; body: any }) => {
  expect(r.body.error?.code, JSON.stringify(r.body).slice(0, 500)).toBe("BLOCKED");
  expect(r.status).toBe(403);
  expect(r.body.error.message).toContain(alias.name);
  expect(r.body.error.message).toMatch(/is a host name, and this runtime resolves names itself|resolves to \S+, which is an? /);
  expect(alias.seen).toEqual([]);
  return r.body.error as { message: string };
};

/** A transport that plays one public site, public.test, which redirects to `to`; every other host goes to `real`. */
const redirecting = (real: WebFetcher, to: () => string): WebFetcher => ({
  check: real.check,
  fetch: async (url, init, host, guard) => (url.hostname === "public.test" ? new Response(null, { status: 302, headers: { location: to() } }) : real.fetch(url, init, host, guard)),
});

const TRANSPORTS: [string, WebFetchDeps | undefined][] = [
  ["Lambda's transport (fromAwsEnv)", fromAwsEnv({ TOOLSHED_BUCKET: "unused" }).webFetch],
  ["the default transport (none given)", undefined],
];

describe.each(TRANSPORTS)("a hosts-file alias through %s", (_name, web) => {
  const app = build(web);

  it("the alias resolves to this machine, where its server answers (the test is real)", async () => {
    const res = await fetch(`${alias.url}/probe`);
    expect(res.status).toBe(200);
    alias.seen.length = 0;
  });

  it("web_fetch: refused directly and as a redirect target", async () => {
    const t = await tenant();
    blocked(await send(app, "/v1/workspaces/main/tools/web_fetch", t.key, { url: `${alias.url}/secret` }));
    const hop = build({ fetcher: redirecting(web?.fetcher ?? literalOnlyFetcher, () => `${alias.url}/after-redirect`) });
    const e = blocked(await send(hop, "/v1/workspaces/main/tools/web_fetch", t.key, { url: "http://public.test/start" }));
    expect(e.message).not.toContain("public.test");
  });

  it("a webhook: refused when created and when called", async () => {
    const t = await tenant();
    const def = (name: string, url: string) => ({ name, description: "echo", input_schema: { type: "object" }, backend: { type: "webhook", url } });
    for (const url of [`${alias.url}/hook`, `https://${alias.name}:${alias.port}/hook`]) {
      const e = blocked(await send(app, `/v1/admin/tenants/${t.id}/tools/custom`, ADMIN, def("acme_hook", url)));
      expect(e.message).toMatch(/^Refused to call the webhook URL /);
    }
    expect((await send(app, `/v1/admin/tenants/${t.id}/tools/custom`, ADMIN, undefined, "GET")).body.tools).toEqual([]);
    // Saved where the name was not checked: the call is refused before any connection.
    expect((await send(saver, `/v1/admin/tenants/${t.id}/tools/custom`, ADMIN, def("acme_hook", `${alias.url}/hook`))).status).toBe(201);
    blocked(await send(app, "/v1/workspaces/main/tools/acme_hook", t.key, {}));
  });

  it("the model endpoint: refused when saved, and when a task uses it (directly or through a redirect)", async () => {
    const t = await tenant();
    const model = (a: ReturnType<typeof build>, base_url: string) => send(a, `/v1/admin/tenants/${t.id}/model`, ADMIN, { base_url, api_key: "sk-test-0123456789abcdef", model: "m" }, "PUT");
    const e = blocked(await model(app, `${alias.url}/v1`));
    expect(e.message).toMatch(/^Refused to use the model endpoint's base_url /);
    expect((await send(app, `/v1/admin/tenants/${t.id}/model`, ADMIN, undefined, "GET")).status).toBe(404);
    expect((await model(saver, `${alias.url}/v1`)).status).toBe(200);
    blocked(await send(app, "/v1/workspaces/main/tools/task", t.key, { prompt: "hi" }));
    expect((await model(saver, "http://public.test/v1")).status).toBe(200);
    const hop = build({ fetcher: redirecting(web?.fetcher ?? literalOnlyFetcher, () => `${alias.url}/v1/chat/completions`) });
    blocked(await send(hop, "/v1/workspaces/main/tools/task", t.key, { prompt: "hi" }));
  });
});
