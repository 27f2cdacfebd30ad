/**
 * web_fetch in the real Workers runtime (wrangler dev): the runtime's own fetch with redirect:
 * "manual", against a real HTTP server on 127.0.0.1 serving real documents. The worker is the test
 * entry with the loopback switch on (test/infra/web-worker/); the default entry's refusal is tested
 * in test/functions/web_fetch.test.ts (workerd) and web_fetch.node.test.ts.
 * A hosts-file alias of this machine (`vm`, `runsc`, its own name) with a real server on its address
 * is refused by every door even with the loopback switch on: workerd would resolve it unseen.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHostsAlias, type HostsAlias } from "../support/hosts-alias.js";
import { DOCS, startWebServer, type WebServer } from "../support/web-server.js";
import { startWorker, type WorkerProcess } from "../support/wrangler-dev.js";

let w: WorkerProcess;
let server: WebServer;
let alias: HostsAlias;
let call: (args: unknown) => Promise<any>;
let admin: (path: string, body: unknown, method?: string) => Promise<Response>;
let setup: string;

beforeAll(async () => {
  server = await startWebServer();
  alias = await startHostsAlias();
  w = await startWorker({ config: "test/infra/web-worker/wrangler.toml" });
  admin = (path: string, body: unknown, method = "POST") => fetch(`${w.url}${path}`, { method, headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  await admin("/v1/admin/tenants", { id: "web" });
  const key = ((await (await admin("/v1/admin/tenants/web/keys", { scopes: ["read", "network"] })).json()) as { key: string }).key;
  // Creating a workspace needs 'write', which the key under test lacks: a setup key of the tenant makes it.
  setup = ((await (await admin("/v1/admin/tenants/web/keys", { name: "setup", scopes: ["read", "write", "execute"] })).json()) as { key: string }).key;
  const ws = await fetch(`${w.url}/v1/workspaces`, { method: "POST", headers: { authorization: `Bearer ${setup}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  if (ws.status !== 201) throw new Error(`workspace: ${await ws.text()}`);
  call = async (args) => (await fetch(`${w.url}/v1/workspaces/main/tools/web_fetch`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(args) })).json();
}, 120_000);

afterAll(async () => {
  await w?.stop();
  await server?.close();
  await alias?.close();
});

it("turns three real documents into markdown inside workerd", async () => {
  const a = await call({ url: `${server.url}/docs/${DOCS.rustdoc}` });
  expect(a.ok, JSON.stringify(a).slice(0, 400)).toBe(true);
  expect(a.data.content).toMatch(/^## \[Passing or failing a doctest\]/m);
  expect(a.data.content).toContain("````rust\n#![allow(unused)]");
  const b = await call({ url: `${server.url}/docs/${DOCS.book}` });
  expect(b.data.content).toMatch(/\| 8-bit +\| i8 +\| u8 +\|/);
  expect(b.data.content).toContain("[two’s complement](https://en.wikipedia.org/wiki/Two%27s%5Fcomplement)");
  const c = await call({ url: `${server.url}/docs/${DOCS.idle}` });
  expect(c.data.content).toMatch(/^## Menus/m);
  expect(c.data.content).toMatch(/```python3\n/);
}, 60_000);

it("follows redirects by hand and refuses one to cloud metadata at the hop", async () => {
  const ok = await call({ url: `${server.url}/chain?n=3` });
  expect(ok.data.redirects).toHaveLength(3);
  const before = server.seen.length;
  const r = await call({ url: `${server.url}/redirect?to=${encodeURIComponent("http://169.254.169.254/latest/meta-data/")}` });
  expect(r.error.code).toBe("BLOCKED");
  expect(r.error.message).toMatch(/169\.254\.169\.254 is a link-local address/);
  expect(server.seen.length).toBe(before + 1);
}, 60_000);

it("timeouts, bot walls and huge pages behave as in Node", async () => {
  expect((await call({ url: `${server.url}/slow?ms=5000`, timeout: 1 })).error.code).toBe("TIMEOUT");
  const wall = await call({ url: `${server.url}/bot-wall` });
  expect(wall.error).toMatchObject({ code: "FETCH_FAILED", details: { status: 403, bot_wall: true } });
  const huge = await call({ url: `${server.url}/huge.html`, max_bytes: 20000 });
  expect(huge.ok, JSON.stringify(huge).slice(0, 300)).toBe(true);
  expect(huge.data.truncated).toBe(true);
  const bin = await call({ url: `${server.url}/image.png` });
  expect(bin.error.code).toBe("BINARY_FILE");
}, 60_000);

describe("a hosts-file alias of this machine, in workerd", () => {
  const refused = (r: any) => {
    expect(r.error?.code, JSON.stringify(r).slice(0, 400)).toBe("BLOCKED");
    expect(r.error.message).toContain(`${alias.name} is a host name, and this runtime resolves names itself`);
    expect(alias.seen).toEqual([]);
  };

  it("web_fetch refuses it, directly and as a redirect target of a server it may reach", async () => {
    refused(await call({ url: `${alias.url}/secret` }));
    const before = server.seen.length;
    refused(await call({ url: `${server.url}/redirect?to=${encodeURIComponent(`${alias.url}/secret`)}` }));
    expect(server.seen.length).toBe(before + 1);
  }, 60_000);

  it("a webhook's creation and the model endpoint's save refuse it; a task whose endpoint redirects to it is refused", async () => {
    const hook = await admin("/v1/admin/tenants/web/tools/custom", { name: "acme_alias", description: "echo", input_schema: { type: "object" }, backend: { type: "webhook", url: `${alias.url}/hook` } });
    expect(hook.status).toBe(403);
    refused(await hook.json());
    const model = (base_url: string) => admin("/v1/admin/tenants/web/model", { base_url, api_key: "sk-test-0123456789abcdef", model: "m" }, "PUT");
    const saved = await model(`${alias.url}/v1`);
    expect(saved.status).toBe(403);
    refused(await saved.json());
    // The endpoint on 127.0.0.1 (the test switch allows it) answers POST /chat/completions with a redirect to the alias.
    expect((await model(`${server.url}/redirect?to=${encodeURIComponent(`${alias.url}/v1`)}`)).status).toBe(200);
    const task = await fetch(`${w.url}/v1/workspaces/main/tools/task`, { method: "POST", headers: { authorization: `Bearer ${setup}`, "content-type": "application/json" }, body: JSON.stringify({ prompt: "hi" }) });
    refused(await task.json());
  }, 60_000);
});
