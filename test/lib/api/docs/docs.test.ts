/**
 * /docs from the real app in workerd: the page and everything it loads come from this API (no other
 * origin, a CSP that allows none), vendored files are cached for good under their digest, and a
 * wrong asset URL is a NOT_FOUND that says what to do. The browser check (offline, real Chromium)
 * is test/infra/docs-browser.node.test.ts.
 */
import { describe, expect, it } from "vitest";
import { DOCS_CSP } from "../../../../lib/api/docs/page.js";
import { SWAGGER_UI_DIGEST, SWAGGER_UI_FILES } from "../../../../lib/api/docs/swagger-ui.generated.js";
import { testApp } from "../../../helpers.js";

const app = testApp();
const BASE = "http://toolshed.test";

/** Every URL an HTML page names in src= or href=, resolved against the page. */
const referencedUrls = (html: string, page: string) => [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => new URL(m[1]!.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n))), page));

describe("GET /docs", () => {
  it("is an HTML page whose every reference is this origin (or data:), each served with the type it needs", async () => {
    const r = await app.request(`${BASE}/docs`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(r.headers.get("cache-control")).toBe("no-cache");
    const html = await r.text();
    expect(html).toContain('data-spec-url="/openapi.json"');
    const urls = referencedUrls(html, `${BASE}/docs`);
    expect(urls.map((u) => u.protocol === "data:" ? "data:" : u.pathname)).toEqual([
      "data:",
      `/docs/assets/${SWAGGER_UI_DIGEST}/swagger-ui.css`,
      "/openapi.json",
      `/docs/assets/${SWAGGER_UI_DIGEST}/swagger-ui-bundle.js`,
      "/docs/init.js",
    ]);
    const expectedType: Record<string, RegExp> = { css: /^text\/css/, js: /^text\/javascript/, json: /^application\/json/ };
    for (const u of urls.filter((u) => u.protocol !== "data:")) {
      expect(u.origin, u.href).toBe(BASE);
      const a = await app.request(u.href);
      expect(a.status, u.pathname).toBe(200);
      expect(a.headers.get("content-type"), u.pathname).toMatch(expectedType[u.pathname.split(".").pop()!]!);
      await a.arrayBuffer();
    }
  });

  it("sends a CSP that names no other origin and allows no inline script", async () => {
    const r = await app.request("/docs");
    const csp = r.headers.get("content-security-policy")!;
    expect(csp).toBe(DOCS_CSP);
    const directives = Object.fromEntries(csp.split(";").map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]));
    expect(directives["default-src"]).toEqual(["'none'"]);
    expect(directives["script-src"]).toEqual(["'self'"]);
    expect(directives["connect-src"]).toEqual(["'self'"]);
    for (const values of Object.values(directives)) {
      for (const v of values as string[]) expect(["'self'", "'none'", "data:"], csp).toContain(v);
    }
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await r.text();
    expect(html).not.toMatch(/<script>|<style|\sstyle=|\son[a-z]+=/i); // nothing inline for the CSP to refuse
  });

  it("starts Swagger UI without its online validator, on the document of this API", async () => {
    const r = await app.request("/docs/init.js");
    expect(r.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(r.headers.get("cache-control")).toBe("no-cache");
    const js = await r.text();
    expect(js).toContain("validatorUrl: null");
    expect(js).toContain("root.dataset.specUrl");
    expect(js).not.toMatch(/https?:/);
  });
});

describe("GET /docs/assets/{digest}/{file}", () => {
  it("serves the vendored files byte for byte, cached for a year", async () => {
    for (const [name, file] of Object.entries(SWAGGER_UI_FILES)) {
      const r = await app.request(`/docs/assets/${SWAGGER_UI_DIGEST}/${name}`);
      expect(r.status, name).toBe(200);
      expect(r.headers.get("content-type")).toBe(file.type);
      expect(r.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(await r.text()).toBe(file.body);
    }
    const bundle = SWAGGER_UI_FILES["swagger-ui-bundle.js"]!.body;
    expect(bundle).toContain("SwaggerUIBundle");
    expect(bundle.length).toBeGreaterThan(1_000_000);
  });

  it("serves the licence file the bundle's first line points to, at the URL it resolves to", async () => {
    const bundleUrl = `${BASE}/docs/assets/${SWAGGER_UI_DIGEST}/swagger-ui-bundle.js`;
    const first = SWAGGER_UI_FILES["swagger-ui-bundle.js"]!.body.split("\n")[0]!;
    const named = first.match(/see (\S+) \*\//)![1]!;
    const r = await app.request(new URL(named, bundleUrl).href);
    expect(r.status).toBe(200);
    expect(await r.text()).toContain("license");
  });

  it("answers NOT_FOUND, with what to do, for another digest, an unknown file or an inherited property name", async () => {
    for (const path of [
      `/docs/assets/0000000000000000/swagger-ui-bundle.js`,
      `/docs/assets/${SWAGGER_UI_DIGEST}/swagger-ui-bundle.js.map`,
      `/docs/assets/${SWAGGER_UI_DIGEST}/constructor`,
      `/docs/assets/${SWAGGER_UI_DIGEST}/__proto__`,
      `/docs/assets/${SWAGGER_UI_DIGEST}/hasOwnProperty`,
    ]) {
      const r = await app.request(path);
      expect(r.status, path).toBe(404);
      const body = (await r.json()) as { ok: boolean; error: { code: string; message: string } };
      expect(body.ok).toBe(false);
      expect(body.error.code).toBe("NOT_FOUND");
      expect(body.error.message).toContain("Reload /docs");
    }
  });
});
