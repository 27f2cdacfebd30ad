/**
 * Tenant secrets in workerd (R2, WebCrypto's HKDF and AES-GCM as Workers run them): stored and
 * listed without the value, read back encrypted from R2, and used by web_fetch: a plain-http URL of
 * a bound host is refused before anything is sent (the value decrypted, the header never built
 * into a request), naming the placeholder and the https URL to use; an answer's body is read
 * redacted (the Response guardedFetch hands back: its body and text()).
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { admin, newTenant, testApp } from "../../../helpers.js";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import { putSecret } from "../../../../lib/tools/secrets/store.js";
import { secretInjector } from "../../../../lib/tools/secrets/inject.js";
import { guardedFetch } from "../../../../lib/tools/web/fetch.js";
import { headBytes, requestBytes } from "../../../../lib/tools/web/net-bytes.js";
import type { WebFetcher } from "../../../../lib/tools/web/transport.js";

const KEY = "w".repeat(48);
const VALUE = "wk_tok_8d1e6f0a2b9c4735";

describe("secrets in workerd", () => {
  it("PUT stores the value encrypted in R2; GET never shows it; web_fetch refuses plain http to the bound host", async () => {
    const app = testApp({ secretsKey: KEY });
    const t = await newTenant(app, { scopes: ["read", "write", "network", "manage"] });
    const put = await admin(app, `/v1/admin/tenants/${t.tenant}/secrets/API_TOKEN`, { value: VALUE, destinations: [{ host: "93.184.215.14", header: "Authorization", format: "Bearer {value}" }] }, "PUT");
    expect(put.status).toBe(201);
    const listed = (await (await t.req("/v1/secrets")).json()) as any;
    expect(listed.secrets.map((s: any) => s.name)).toEqual(["API_TOKEN"]);
    expect(JSON.stringify([put.body, listed])).not.toContain(VALUE);
    const raw = await (await env.FILES.get(`t/${t.tenant}/secrets.json`))!.text();
    expect(raw).toContain("API_TOKEN");
    expect(raw).not.toContain(VALUE);
    const r = await t.call("web_fetch", { url: "http://93.184.215.14/private" });
    expect(r.body.error.code).toBe("BLOCKED");
    expect(r.body.error.message).toContain("{{secret:API_TOKEN}}");
    expect(r.body.error.message).toContain("https://93.184.215.14/private");
    expect(JSON.stringify(r.body)).not.toContain(VALUE);
  });

  it("an answer's body is read redacted in workerd too, by every way of reading it, with the server's status and headers; its bytes count as they came", async () => {
    // The network stands in for a bound host that echoes its credential (a real one is in secrets-echo.node.test.ts).
    const storage = r2Driver(env.FILES);
    const tenant = `t${Math.random().toString(36).slice(2, 10)}`;
    await putSecret(storage, KEY, tenant, "API_TOKEN", { value: VALUE, destinations: [{ host: "93.184.215.14", header: "Authorization" }] });
    let sent = "";
    const echo: WebFetcher = { check: async () => {}, fetch: async (_url, init) => new Response(`got ${(sent = new Headers(init.headers).get("authorization") ?? "")}!`, { status: 401, headers: { "x-kept": "yes" } }) };
    for (const read of ["body", "text"] as const) {
      const secrets = secretInjector({ storage, secretsKey: KEY, tenant, guard: {} });
      const meter = { netBytesIn: 0, netBytesOut: 0 };
      const { response } = await guardedFetch({ url: "https://93.184.215.14/echo", method: "GET", headers: {}, timeoutMs: 5000 }, { fetcher: echo, guard: {}, secrets, meter });
      expect([response.status, response.headers.get("x-kept")]).toEqual([401, "yes"]);
      const text = read === "body" ? await new Response(response.body).text() : await response.text();
      expect(text, read).toBe("got {{secret:API_TOKEN}}!");
      // Network bytes (lib/tools/web/net-bytes.ts): the body as it came, the secret's value in it, not the redacted text; the header sent with the secret counts out.
      expect(sent).toContain(VALUE);
      expect(meter.netBytesIn - headBytes(response), read).toBe(new TextEncoder().encode(`got ${sent}!`).length);
      expect(meter.netBytesOut, read).toBe(requestBytes(new URL("https://93.184.215.14/echo"), "GET", { authorization: sent }, undefined));
    }
  });

  it("without TOOLSHED_SECRETS_KEY: UNAVAILABLE, naming the variable", async () => {
    const app = testApp();
    const t = await newTenant(app, { scopes: ["read", "manage"] });
    const r = await t.req("/v1/secrets");
    expect(r.status).toBe(503);
    expect(((await r.json()) as any).error.message).toContain("TOOLSHED_SECRETS_KEY");
  });
});
