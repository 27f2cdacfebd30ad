/**
 * Every route that sends a workspace's bytes back (the raw file GET and HEAD, a Range of it, the
 * export) answers with the one set of download headers (lib/api/routes/download-headers.ts):
 * `X-Content-Type-Options: nosniff` and `Content-Security-Policy: default-src 'none'; sandbox`, and a
 * stored type a browser would run or render as a page (HTML, SVG, XML, JavaScript) as an attachment.
 * Before, a file uploaded as text/html came back as text/html with none of them: an app that hands
 * such URLs to a browser served stored XSS. Other types keep their stored type, inline.
 */
import { describe, expect, it } from "vitest";
import { newTenant, type Tenant } from "../../../helpers.js";

const PAGE = "<html><body><script>fetch('/steal?c='+document.cookie)</script></body></html>";

async function put(t: Tenant, path: string, body: string, contentType: string) {
  const bytes = new TextEncoder().encode(body);
  const res = await t.req(`/v1/workspaces/${t.ws}/files/${path}`, { method: "PUT", headers: { "content-length": String(bytes.length), "content-type": contentType }, body: bytes });
  expect(res.status).toBeLessThan(300);
}

const guarded = (res: Response) => {
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
};

describe("download headers", () => {
  it("a stored text/html file is downloaded as an attachment, nosniff, in a CSP sandbox (GET, HEAD and a Range)", async () => {
    const t = await newTenant();
    await put(t, "site/index.html", PAGE, "text/html; charset=utf-8");
    for (const init of [{}, { method: "HEAD" }, { headers: { range: "bytes=0-5" } }] as RequestInit[]) {
      const res = await t.req(`/v1/workspaces/${t.ws}/files/site/index.html`, init);
      expect(res.status).toBeLessThan(300);
      guarded(res);
      expect(res.headers.get("content-disposition")).toBe(`attachment; filename="index.html"; filename*=UTF-8''index.html`);
      await res.arrayBuffer();
    }
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/site/index.html`)).text()).toBe(PAGE); // the bytes as stored
  });

  it("every active type is an attachment, whatever its case or parameters; an unparsable type too", async () => {
    const t = await newTenant();
    const active = ["image/svg+xml", "application/xhtml+xml", "text/xml", "application/xml", "application/javascript", "text/javascript; charset=utf-8", "TEXT/HTML", "application/rss+xml", "text/html;x=1", "text/xsl", "html"];
    for (const [i, type] of active.entries()) {
      await put(t, `f${i}`, PAGE, type);
      const res = await t.req(`/v1/workspaces/${t.ws}/files/f${i}`);
      guarded(res);
      expect(res.headers.get("content-disposition"), type).toMatch(/^attachment; /);
      await res.arrayBuffer();
    }
  });

  it("other types keep their stored type, inline, with nosniff and the sandbox; a name with quotes or non-ASCII is named safely", async () => {
    const t = await newTenant();
    for (const type of ["text/plain", "image/png", "application/json", "application/pdf", "application/octet-stream"]) {
      await put(t, "a.bin", "x", type);
      const res = await t.req(`/v1/workspaces/${t.ws}/files/a.bin`);
      guarded(res);
      expect(res.headers.get("content-type")).toBe(type);
      expect(res.headers.get("content-disposition")).toBeNull();
      await res.arrayBuffer();
    }
    await put(t, `${encodeURIComponent('é"x.svg')}`, PAGE, "image/svg+xml");
    const res = await t.req(`/v1/workspaces/${t.ws}/files/${encodeURIComponent('é"x.svg')}`);
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="__x.svg"; filename*=UTF-8''%C3%A9%22x.svg`);
    await res.arrayBuffer();
  });

  it("the export answers with the same headers (an attachment of its own type)", async () => {
    const t = await newTenant();
    await put(t, "index.html", PAGE, "text/html");
    const res = await t.req(`/v1/workspaces/${t.ws}/export`);
    expect(res.status).toBe(200);
    guarded(res);
    expect(res.headers.get("content-type")).toBe("application/gzip");
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${t.ws}.tar.gz"; filename*=UTF-8''${t.ws}.tar.gz`);
    await res.arrayBuffer();
  });
});
