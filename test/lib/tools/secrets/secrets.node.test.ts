/**
 * Tenant secrets end to end (docs/secrets.md), in Node with the Lambda transport (nodeFetcher, a
 * fake DNS that sends *.secret.test and other.test to 127.0.0.1) against a real HTTPS server that
 * answers /private only with the secret in Authorization. The request that needs it succeeds
 * through web_fetch and a webhook, and the value is absent from every response (body and headers),
 * every log line of the file, and storage. A redirect to another host, a host not bound, another
 * tenant and plain http never get it.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { tools } from "../../../../functions/index.js";
import { createApp } from "../../../../lib/api/app.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { nodeFetcher } from "../../../../lib/tools/web/node-fetcher.js";
import type { Resolver } from "../../../../lib/shared/ssrf.js";
import { openSecret, sealSecret } from "../../../../lib/tools/secrets/crypto.js";
import { secretInjector } from "../../../../lib/tools/secrets/inject.js";
import { hostMatches, hostPatternProblem } from "../../../../lib/shared/host-pattern.js";
import { startTlsServer, type TlsServer } from "../../../support/tls-server.js";
import { startWebServer, type WebServer } from "../../../support/web-server.js";

const ADMIN = "admin-secrets-test";
const KEY = "k".repeat(40);
const VALUE = "npm_tok_3f9a1c0e7b2d4c68a5e1";
const BETA_VALUE = "beta_tok_91c4e2a7d0b35f18e6";
let tls: TlsServer;
let plain: WebServer;
const logs: string[] = [];
const answers: string[] = [];

const fakeDns: Resolver = async (name) => {
  if (name.endsWith(".secret.test") || name === "other.test") return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
};

beforeAll(async () => {
  for (const m of ["log", "info", "warn", "error", "debug"] as const) vi.spyOn(console, m).mockImplementation((...a: unknown[]) => void logs.push(a.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(" ")));
  tls = await startTlsServer(["npm.secret.test", "hooks.secret.test", "other.test"], VALUE);
  plain = await startWebServer();
});
afterAll(async () => {
  vi.restoreAllMocks();
  await tls.close();
  await plain.close();
  // The last word: the value never showed in a log line or an answer of this file.
  expect(logs.join("\n")).not.toContain(VALUE);
  expect(answers.join("\n")).not.toContain(VALUE);
});

function setup(secretsKey: string | null = KEY) {
  const storage = memoryDriver();
  const app = createApp({ storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, ...(secretsKey ? { secretsKey } : {}), webFetch: { fetcher: nodeFetcher({ resolve: fakeDns, ca: tls.ca }), allowLoopback: true } }, tools);
  /** Every answer, headers and body, kept for the file's last check. */
  const request = async (path: string, init: RequestInit) => {
    const res = await app.request(path, init);
    const text = await res.text();
    answers.push(JSON.stringify([...res.headers]), text);
    return { status: res.status, body: text ? (JSON.parse(text) as any) : null };
  };
  const adm = (path: string, body?: unknown, method = "POST") => request(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const tenant = async (id: string) => {
    await adm("/v1/admin/tenants", { id });
    const manage = (await adm(`/v1/admin/tenants/${id}/keys`, { scopes: ["read", "write", "network", "manage"] })).body.key as string;
    const h = { authorization: `Bearer ${manage}`, "content-type": "application/json" };
    await request("/v1/workspaces", { method: "POST", headers: h, body: JSON.stringify({ id: "main" }) });
    return {
      api: (path: string, body?: unknown, method = "GET") => request(path, { method, headers: h, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }),
      call: (tool: string, args: unknown) => request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: h, body: JSON.stringify(args) }),
    };
  };
  return { storage, adm, tenant, request };
}

const npm = (path: string) => `https://npm.secret.test:${tls.port}${path}`;
const bearer = { header: "Authorization", format: "Bearer {value}" };

describe("secrets: storage and routes", () => {
  it("PUT stores the value encrypted and answers without it; GET and the listing never show it; DELETE removes it", async () => {
    const { storage, tenant, adm } = setup();
    const acme = await tenant("acme");
    const put = await acme.api("/v1/secrets/NPM_TOKEN", { value: VALUE, destinations: [{ host: "npm.secret.test", ...bearer }] }, "PUT");
    expect(put.status).toBe(201);
    expect(put.body).toMatchObject({ name: "NPM_TOKEN", destinations: [{ host: "npm.secret.test", header: "Authorization", format: "Bearer {value}" }] });
    expect(JSON.stringify(put.body)).not.toContain("value\":");
    expect((await acme.api("/v1/secrets/NPM_TOKEN", { value: VALUE, destinations: [{ host: "*.secret.test", header: "X-Token" }] }, "PUT")).status).toBe(200);
    const listed = await acme.api("/v1/secrets");
    expect(listed.body.secrets.map((s: any) => s.name)).toEqual(["NPM_TOKEN"]);
    expect(Object.keys(listed.body.secrets[0]).sort()).toEqual(["created_at", "destinations", "name", "updated_at"]);
    expect((await adm("/v1/admin/tenants/acme/secrets/NPM_TOKEN", undefined, "GET")).body.name).toBe("NPM_TOKEN");
    const raw = await new Response((await storage.get("t/acme/secrets.json"))!.body).text();
    expect(raw).toContain("NPM_TOKEN");
    expect(raw).not.toContain(VALUE);
    expect((await acme.api("/v1/secrets/NPM_TOKEN", undefined, "DELETE")).body).toEqual({ deleted: "NPM_TOKEN" });
    expect((await acme.api("/v1/secrets/NPM_TOKEN")).status).toBe(404);
  });

  it("refuses bad names, hosts, headers and formats; a key without manage is 403", async () => {
    const { tenant, adm, request } = setup();
    const acme = await tenant("acme");
    const bad = async (name: string, body: unknown) => (await acme.api(`/v1/secrets/${name}`, body, "PUT")).body.error?.message as string;
    expect(await bad("no-dash", { value: VALUE, destinations: [{ host: "a.example.com", header: "X" }] })).toMatch(/Bad secret name/);
    expect(await bad("T", { value: VALUE, destinations: [{ host: "https://a.example.com", header: "X" }] })).toMatch(/without scheme/);
    expect(await bad("T", { value: VALUE, destinations: [{ host: "*.com", header: "X" }] })).toMatch(/top-level domain/);
    expect(await bad("T", { value: VALUE, destinations: [{ host: "a.*.com", header: "X" }] })).toMatch(/only as the whole first label/);
    expect(await bad("T", { value: VALUE, destinations: [{ host: "a.example.com", header: "Host" }] })).toMatch(/set by the transport/);
    expect(await bad("T", { value: VALUE, destinations: [{ host: "a.example.com", header: "X", format: "Bearer value" }] })).toMatch(/\{value\} exactly once/);
    expect(await bad("T", { value: VALUE, destinations: [{ host: "a.example.com", header: "X", format: "Bearer" }] })).toMatch(/\{value\} exactly once/); // shorter than "{value}" itself
    const reader = (await adm("/v1/admin/tenants/acme/keys", { scopes: ["read"] })).body.key as string;
    const refused = await request("/v1/secrets", { headers: { authorization: `Bearer ${reader}` } });
    expect(refused.status).toBe(403);
  });

  it("without TOOLSHED_SECRETS_KEY the routes answer UNAVAILABLE saying how to turn secrets on", async () => {
    const { tenant } = setup(null);
    const acme = await tenant("acme");
    const r = await acme.api("/v1/secrets/NPM_TOKEN", { value: VALUE, destinations: [{ host: "npm.secret.test", ...bearer }] }, "PUT");
    expect(r.status).toBe(503);
    expect(r.body.error.message).toContain("TOOLSHED_SECRETS_KEY");
  });

  it("a sealed value opens only for its tenant and name, and only under the key that sealed it", async () => {
    const sealed = await sealSecret(KEY, "acme", "NPM_TOKEN", VALUE);
    expect(await openSecret(KEY, "acme", "NPM_TOKEN", sealed)).toBe(VALUE);
    await expect(openSecret(KEY, "beta", "NPM_TOKEN", sealed)).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await expect(openSecret(KEY, "acme", "OTHER", sealed)).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await expect(openSecret("z".repeat(40), "acme", "NPM_TOKEN", sealed)).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });

  it("host patterns: exact hosts, *.domain below it only, no scheme or port", () => {
    expect(hostMatches("npm.example.com", "NPM.example.com.")).toBe(true);
    expect(hostMatches("npm.example.com", "x.npm.example.com")).toBe(false);
    expect(hostMatches("*.example.com", "a.b.example.com")).toBe(true);
    expect(hostMatches("*.example.com", "example.com")).toBe(false);
    expect(hostMatches("*.example.com", "badexample.com")).toBe(false);
    expect(hostPatternProblem("npm.example.com:443")).toMatch(/without scheme, port/);
    expect(hostPatternProblem("[::1]")).toBeNull();
  });
});

describe("secrets at the egress: web_fetch", () => {
  async function withSecrets() {
    const s = setup();
    const acme = await s.tenant("acme");
    const beta = await s.tenant("beta");
    expect((await acme.api("/v1/secrets/NPM_TOKEN", { value: VALUE, destinations: [{ host: "npm.secret.test", ...bearer }, { host: "hooks.secret.test", ...bearer }] }, "PUT")).status).toBe(201);
    // beta's own secret, for another host: it never goes with acme's calls, nor acme's with beta's.
    expect((await beta.api("/v1/secrets/OTHER", { value: BETA_VALUE, destinations: [{ host: "other.test", ...bearer }] }, "PUT")).status).toBe(201);
    return { ...s, acme, beta };
  }
  const authOf = (i: number) => tls.seen[i]!.headers.authorization;

  it("the request that needs the secret succeeds; the value is in no answer", async () => {
    const { acme } = await withSecrets();
    const r = await acme.call("web_fetch", { url: npm("/private") });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.content).toBe("private ok");
    expect(authOf(tls.seen.length - 1)).toBe(`Bearer ${VALUE}`);
    expect(JSON.stringify(r.body)).not.toContain(VALUE);
  });

  it("a page or an error page that echoes the header shows {{secret:NAME}}, never the value", async () => {
    const { acme } = await withSecrets();
    const ok = await acme.call("web_fetch", { url: npm("/echo") });
    expect(ok.status).toBe(200);
    expect(ok.body.output).toContain("Bearer {{secret:NPM_TOKEN}}");
    expect(ok.body.data.content).toContain("Bearer {{secret:NPM_TOKEN}}");
    const failed = await acme.call("web_fetch", { url: npm("/echo-401") });
    expect(failed.body.error.code).toBe("FETCH_FAILED");
    expect(failed.body.error.message).toContain("{{secret:NPM_TOKEN}}");
    expect(JSON.stringify([ok.body, failed.body])).not.toContain(VALUE);
  });

  it("a redirect to another host does not carry it; a host not bound never gets it; the model's own Authorization is replaced only where bound", async () => {
    const { acme } = await withSecrets();
    const before = tls.seen.length;
    const r = await acme.call("web_fetch", { url: npm(`/redirect?to=${encodeURIComponent(`https://other.test:${tls.port}/landed`)}`) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const hops = tls.seen.slice(before);
    expect(hops.map((h) => [h.host.split(":")[0], h.path])).toEqual([["npm.secret.test", "/redirect"], ["other.test", "/landed"]]);
    expect(hops[0]!.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(hops[1]!.headers.authorization).toBeUndefined();
    const direct = await acme.call("web_fetch", { url: `https://other.test:${tls.port}/private` });
    expect(direct.body.error.code).toBe("FETCH_FAILED");
    expect(authOf(tls.seen.length - 1)).toBeUndefined();
    const own = await acme.call("web_fetch", { url: `https://other.test:${tls.port}/echo`, headers: { authorization: "Bearer mine" } });
    expect(own.body.data.content).toContain("Bearer mine");
  });

  it("another tenant's secret is never injected: beta reaching acme's host gets no header, acme reaching beta's host gets no header", async () => {
    const { acme, beta } = await withSecrets();
    const b = await beta.call("web_fetch", { url: npm("/private") });
    expect(b.body.error.code).toBe("FETCH_FAILED");
    expect(authOf(tls.seen.length - 1)).toBeUndefined();
    const bOwn = await beta.call("web_fetch", { url: `https://other.test:${tls.port}/echo` });
    expect(bOwn.body.data.content).toContain("Bearer {{secret:OTHER}}");
    expect(tls.seen.at(-1)!.headers.authorization).toBe(`Bearer ${BETA_VALUE}`);
    const a = await acme.call("web_fetch", { url: `https://other.test:${tls.port}/echo` });
    expect(tls.seen.at(-1)!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(a.body)).not.toContain(BETA_VALUE);
  });

  it("plain http to a bound host is refused before anything is sent, and says why", async () => {
    const { acme } = await withSecrets();
    const before = plain.seen.length;
    const r = await acme.call("web_fetch", { url: `http://npm.secret.test:${plain.port}/` });
    expect(r.body.error.code).toBe("BLOCKED");
    expect(r.body.error.message).toContain("plain http");
    expect(r.body.error.message).toContain("{{secret:NPM_TOKEN}}");
    expect(r.body.error.message).toContain(`https://npm.secret.test:${plain.port}/`);
    expect(plain.seen.length).toBe(before);
  });

  it("the injector alone: no key, nothing read; https gets the header; http without the test's loopback switch is refused", async () => {
    const storage = memoryDriver();
    const none = secretInjector({ storage, tenant: "acme", guard: {} });
    expect(await none.headersFor(new URL("http://npm.example.com/"))).toEqual({});
    const { putSecret } = await import("../../../../lib/tools/secrets/store.js");
    await putSecret(storage, KEY, "acme", "NPM_TOKEN", { value: VALUE, destinations: [{ host: "*.example.com", header: "X-Token" }, { host: "npm.example.com", ...bearer }] });
    const inj = secretInjector({ storage, secretsKey: KEY, tenant: "acme", guard: {} });
    expect(await inj.headersFor(new URL("https://npm.example.com/x"))).toEqual({ "x-token": VALUE, authorization: `Bearer ${VALUE}` });
    expect(await inj.headersFor(new URL("https://example.com/x"))).toEqual({});
    await expect(inj.headersFor(new URL("http://a.example.com/x"))).rejects.toMatchObject({ code: "BLOCKED" });
    await expect(secretInjector({ storage, secretsKey: KEY, tenant: "acme", guard: { allowLoopback: true } }).headersFor(new URL("http://npm.example.com/"))).rejects.toMatchObject({ code: "BLOCKED" });
    expect(inj.redact(`got Bearer ${VALUE}!`)).toBe("got Bearer {{secret:NPM_TOKEN}}!");
  });
});

describe("secrets at the egress: webhooks", () => {
  it("a webhook on a bound host gets the header and answers; its error echo is redacted", async () => {
    const { tenant } = setup();
    const acme = await tenant("acme");
    await acme.api("/v1/secrets/NPM_TOKEN", { value: VALUE, destinations: [{ host: "hooks.secret.test", ...bearer }] }, "PUT");
    const schema = { type: "object", properties: { q: { type: "string" } } };
    expect((await acme.api("/v1/tools/custom", { name: "acme_hook", description: "hook", input_schema: schema, backend: { type: "webhook", url: `https://hooks.secret.test:${tls.port}/hook` } }, "POST")).status).toBe(201);
    expect((await acme.api("/v1/tools/custom", { name: "acme_echo", description: "echo", input_schema: schema, backend: { type: "webhook", url: `https://hooks.secret.test:${tls.port}/echo-401` } }, "POST")).status).toBe(201);
    const r = await acme.call("acme_hook", { q: "x" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.output).toBe("hook ok");
    expect(tls.seen.at(-1)!.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(tls.seen.at(-1)!.headers["x-toolshed-signature"]).toMatch(/^t=\d+,v1=/);
    const e = await acme.call("acme_echo", { q: "x" });
    expect(e.body.error.code).toBe("FETCH_FAILED");
    expect(e.body.error.message).toContain("{{secret:NPM_TOKEN}}");
    expect(JSON.stringify([r.body, e.body])).not.toContain(VALUE);
  });
});

describe("secrets for a command's egress proxy", () => {
  it("only a run with network gets them, only its own tenant's, in the signed invocation (an altered value is refused)", async () => {
    const { withEgressSecrets } = await import("../../../../lib/tools/secrets/egress.js");
    const { putSecret } = await import("../../../../lib/tools/secrets/store.js");
    const { signEvent, verifyEvent } = await import("../../../../lib/exec/runner-auth.js");
    const storage = memoryDriver();
    await putSecret(storage, KEY, "acme", "NPM_TOKEN", { value: VALUE, destinations: [{ host: "npm.example.com", ...bearer }] });
    const ctx = (tenant: string) => ({ deps: { storage, kv: storageKeyValue(memoryDriver(), "kv/"), secretsKey: KEY }, auth: { tenant } }) as never;
    const req = { version: 1 as const, idempotency_key: "run_1", tenant: "acme", workspace: "main", command: "true", timeout_ms: 10_000, sync: { url: "https://api.example.com", token: "t" } };
    expect((await withEgressSecrets(ctx("acme"), { ...req, network: false })).egress_secrets).toBeUndefined();
    expect((await withEgressSecrets(ctx("beta"), { ...req, tenant: "beta", network: true })).egress_secrets).toBeUndefined();
    const withSecrets = await withEgressSecrets(ctx("acme"), { ...req, network: true });
    expect(withSecrets.egress_secrets).toEqual([{ name: "NPM_TOKEN", host: "npm.example.com", header: "Authorization", value: `Bearer ${VALUE}` }]);
    expect(withSecrets.env).toBeUndefined();
    const secret = "r".repeat(32);
    const signed = await signEvent(secret, withSecrets);
    expect((await verifyEvent(secret, signed)).egress_secrets).toEqual(withSecrets.egress_secrets);
    const altered = { ...signed, egress_secrets: [{ ...signed.egress_secrets![0]!, host: "*.evil.example" }] };
    await expect(verifyEvent(secret, altered)).rejects.toMatchObject({ details: { reason: "invocation_bad_signature" } });
  });
});
