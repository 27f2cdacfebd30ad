/**
 * web_fetch through the HTTP API, in Node (the Lambda transport: lib/tools/web/node-fetcher.ts resolves,
 * checks and pins addresses), against a real HTTP server on 127.0.0.1 serving real documents.
 * The app is built with the test-only loopback switch, except where a test proves the default.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../functions/index.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import { nodeFetcher } from "../../lib/tools/web/node-fetcher.js";
import type { Resolver } from "../../lib/shared/ssrf.js";
import { ACCEPT } from "../../functions/web_fetch.js";
import { DOCS, startWebServer, type WebServer } from "../support/web-server.js";
import { freePort } from "../support/wrangler-dev.js";
import { checkOutputs } from "../support/output-check.js";
import { readEvents, statusEvents } from "../support/sse-events.js";

const ADMIN = "admin-web-fetch-test";
let server: WebServer;

/** A DNS stand-in: names under .test answer what the test needs; the rest fail like NXDOMAIN. */
const fakeDns: Resolver = async (name) => {
  const table: Record<string, { address: string; family: number }[]> = {
    "site.test": [{ address: "127.0.0.1", family: 4 }],
    "metadata.test": [{ address: "169.254.169.254", family: 4 }],
    "mixed.test": [{ address: "127.0.0.1", family: 4 }, { address: "10.0.0.7", family: 4 }],
    "v6private.test": [{ address: "fd00:ec2::254", family: 6 }],
  };
  const hit = table[name];
  if (!hit) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
  return hit;
};

function app(extra: Partial<AppDeps> = {}) {
  const deps: AppDeps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, webFetch: { fetcher: nodeFetcher({ resolve: fakeDns }), allowLoopback: true }, ...extra };
  return checkOutputs(createApp(deps, tools), tools);
}

async function tenant(a: ReturnType<typeof app>, scopes = ["read", "network"]) {
  const adm = (path: string, body: unknown, method = "POST") => a.request(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const id = `t${Math.random().toString(36).slice(2, 10)}`;
  await adm("/v1/admin/tenants", { id });
  const key = ((await (await adm(`/v1/admin/tenants/${id}/keys`, { scopes })).json()) as { key: string }).key;
  // Creating a workspace needs 'write', which the key under test need not have: a setup key of the tenant makes it.
  const setup = ((await (await adm(`/v1/admin/tenants/${id}/keys`, { name: "setup" })).json()) as { key: string }).key;
  const ws = await a.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${setup}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  if (ws.status !== 201) throw new Error(`workspace: ${await ws.text()}`);
  const call = async (args: unknown, tool = "web_fetch") => {
    const res = await a.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(args) });
    return { status: res.status, body: (await res.json()) as any };
  };
  /** The call with Accept: text/event-stream: its events (progress, then the result). */
  const stream = async (args: unknown) => {
    const res = await a.request("/v1/workspaces/main/tools/web_fetch", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify(args) });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    return readEvents(res);
  };
  const pending = async () => ((await (await a.request("/v1/workspaces/main/pending", { headers: { authorization: `Bearer ${key}` } })).json()) as { pending: unknown[] }).pending;
  return { id, call, stream, pending, policy: (body: unknown) => adm(`/v1/admin/tenants/${id}/policy`, body, "PUT") };
}

let t: Awaited<ReturnType<typeof tenant>>;
beforeAll(async () => {
  server = await startWebServer();
  t = await tenant(app());
});
afterAll(() => server?.close());

const ok = (r: { status: number; body: any }) => {
  expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
  return r.body;
};
const fails = (r: { status: number; body: any }, code: string, status: number) => {
  expect(r.body.error?.code, JSON.stringify(r.body).slice(0, 500)).toBe(code);
  expect(r.status).toBe(status);
  return r.body.error as { code: string; message: string; details: any };
};

describe("real documents become markdown", () => {
  it("rustdoc book (mdBook): headings, rust code blocks with nested fences, links; chrome removed", async () => {
    const b = ok(await t.call({ url: `${server.url}/docs/${DOCS.rustdoc}` }));
    const md: string = b.data.content;
    expect(b.data.title).toBe("Documentation tests - The rustdoc book");
    expect(md).toMatch(/^# \[Documentation tests\]\(#documentation-tests\)/m);
    expect(md).toMatch(/\[the rustdoc book's section on attributes\]|\]\(http:\/\/127\.0\.0\.1:\d+\/docs\/[\w/-]+\.html(#[\w-]+)?\)/);
    expect(md).toMatch(/^## \[Passing or failing a doctest\]/m);
    expect(md).toContain("````rust\n#![allow(unused)]\nfn main() {\n/// # Examples\n///\n/// ```\n/// let x = 5;\n/// ```");
    expect(md).toMatch(/````markdown\n```rust\nlet x = 5;\n```\n````/);
    expect(md).toContain("`rustdoc --test foo.rs`");
    expect(md).not.toMatch(/Keyboard shortcuts|Press ← or →|<script|function\(|\.css/);
    expect(b.output).toContain("# Documentation tests - The rustdoc book\nURL: ");
  });

  it("the Rust book: tables, console blocks, absolute links", async () => {
    const md: string = ok(await t.call({ url: `${server.url}/docs/${DOCS.book}` })).data.content;
    expect(md).toMatch(/^#{2,3} \[Scalar Types\]/m);
    expect(md).toMatch(/\| Length +\| Signed \| Unsigned \|/);
    expect(md).toMatch(/\| 8-bit +\| i8 +\| u8 +\|/);
    expect(md).toContain("```console\n$ cargo build");
    expect(md).toContain("```rust\n");
    expect(md).toMatch(/\[“Comparing the Guess to the Secret Number”\]\(http:\/\/127\.0\.0\.1:\d+\/docs\/ch02-00-guessing-game-tutorial\.html#comparing-the-guess-to-the-secret-number\)/);
    expect(md).toContain("[two’s complement](https://en.wikipedia.org/wiki/Two%27s%5Fcomplement)");
  });

  it("Python's IDLE help (Sphinx): headings, lists, python3 code block, external links", async () => {
    const b = ok(await t.call({ url: `${server.url}/docs/${DOCS.idle}` }));
    const md: string = b.data.content;
    expect(b.data.title).toMatch(/^IDLE — Python 3\.13/);
    expect(md).toMatch(/^# IDLE/m);
    expect(md).toMatch(/^## Menus/m);
    expect(md).toMatch(/^- cross-platform: works mostly the same on Windows, Unix, and macOS$/m);
    expect(md).toMatch(/```python3\n/);
    expect(md).toContain("[Lib/idlelib/](https://github.com/python/cpython/tree/main/Lib/idlelib/)");
  });

  it("format text and html", async () => {
    const text = ok(await t.call({ url: `${server.url}/docs/${DOCS.book}`, format: "text" })).data;
    expect(text.content).toContain("Scalar Types");
    expect(text.content).toContain("Unrecoverable Errors with panic!");
    expect(text.content).toContain("$ cargo build\n   Compiling no_type_annotations");
    expect(text.content).not.toMatch(/\]\(|```|<\/?(div|span|p|a|code|pre|table)\b/);
    const html = ok(await t.call({ url: `${server.url}/docs/${DOCS.book}`, format: "html", max_bytes: 102400 })).data;
    expect(html.content.startsWith("<!DOCTYPE HTML>") || html.content.startsWith("<!DOCTYPE html>")).toBe(true);
    expect(html.title).toBe("Data Types - The Rust Programming Language");
  });
});

describe("other content", () => {
  it("JSON and markdown pass through; the Accept header asks for markdown first", async () => {
    const j = ok(await t.call({ url: `${server.url}/data.json` })).data;
    expect(JSON.parse(j.content)).toEqual({ name: "toolshed", items: [1, 2, 3], nested: { ok: true } });
    expect(j).toMatchObject({ status: 200, content_type: "application/json", truncated: false });
    const m = ok(await t.call({ url: `${server.url}/notes.md` })).data;
    expect(m.content).toBe("# Notes\n\n- one\n- two\n\n```js\nconsole.log(1)\n```\n");
    expect(server.seen.at(-1)!.headers.accept).toBe(ACCEPT);
  });

  it("binary gives BINARY_FILE with its type and size, declared or sniffed", async () => {
    const e = fails(await t.call({ url: `${server.url}/image.png` }), "BINARY_FILE", 415);
    expect(e.message).toMatch(/image\/png, 2016 bytes/);
    expect(e.details).toMatchObject({ content_type: "image/png", bytes: 2016 });
    const u = fails(await t.call({ url: `${server.url}/unknown-binary` }), "BINARY_FILE", 415);
    expect(u.message).toMatch(/application\/octet-stream/);
  });

  it("POST with headers and a body; GET with a body is refused", async () => {
    const b = ok(await t.call({ url: `${server.url}/echo`, method: "POST", headers: { "X-Token": "abc", "content-type": "text/plain" }, body: "hello" }));
    const echo = JSON.parse(b.data.content);
    expect(echo).toMatchObject({ method: "POST", body: "hello", headers: { "x-token": "abc" } });
    fails(await t.call({ url: `${server.url}/echo`, body: "x" }), "INVALID_ARGUMENT", 400);
    fails(await t.call({ url: `${server.url}/echo`, headers: { Host: "evil" } }), "INVALID_ARGUMENT", 400);
  });
});

describe("cuts and bounds", () => {
  it("a huge HTML page is cut at max_bytes with a note that says how to get more", async () => {
    const b = ok(await t.call({ url: `${server.url}/huge.html`, max_bytes: 10000 }));
    expect(b.data.truncated).toBe(true);
    expect(new TextEncoder().encode(b.data.content).length).toBeLessThanOrEqual(10000);
    expect(b.data.bytes).toBe(2 * 1024 * 1024);
    expect(b.output).toMatch(/\[Content cut at \d+ of more than \d+ bytes \(only the first 2097152 bytes of the page were read\)\. To see more: call again with max_bytes: 102400; use format: "text"/);
    expect(b.data.content).toContain("## Part 1");
  });

  it("a huge text body is read only up to max_bytes (+1), not buffered whole", async () => {
    const b = ok(await t.call({ url: `${server.url}/huge.txt`, max_bytes: 5000 }));
    expect(b.data).toMatchObject({ truncated: true, bytes: 5001 });
    expect(b.data.content.length).toBeLessThanOrEqual(5000);
    expect(b.data.content.endsWith("xyz")).toBe(true);
  });

  it("at max_bytes 102400 the data holds it all; the output (capped for every tool) keeps the head and says what the model can do for the rest", async () => {
    const b = ok(await t.call({ url: `${server.url}/huge.txt`, max_bytes: 102400 }));
    expect(new TextEncoder().encode(b.data.content).length).toBeGreaterThan(100_000);
    // What the model lost and what it can do: not a data field it never reads.
    expect(b.output).toMatch(/\[The output shows the first \d+ of the \d+ bytes returned \(one output holds at most 100000 characters\); the last \d+ are not shown\. To see them, fetch a narrower URL\.\]/);
    expect(b.output).not.toContain("data.content");
    expect(b.output).not.toMatch(/removed|left out/);
  });

  it("max_bytes above 102400 is refused by the schema", async () => {
    fails(await t.call({ url: `${server.url}/data.json`, max_bytes: 102401 }), "INVALID_ARGUMENT", 400);
  });

  it("a slow answer gives TIMEOUT within the timeout, headers or body", async () => {
    const started = Date.now();
    const e = fails(await t.call({ url: `${server.url}/slow?ms=5000`, timeout: 1 }), "TIMEOUT", 408);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(e.message).toMatch(/did not answer within 1 s.*larger timeout/);
    fails(await t.call({ url: `${server.url}/slow-body?ms=5000`, timeout: 1 }), "TIMEOUT", 408);
  });
});

describe("progress over SSE (the default 250 ms throttle)", () => {
  const withoutUsage = (e: any) => {
    const { usage: _u, ...rest } = e;
    return rest;
  };

  it("a body that comes slowly reports bytes received of its Content-Length, throttled, before the result a plain call answers", async () => {
    const url = `${server.url}/chunked?n=20&size=2048&ms=50`; // 40 KB over about 1 s
    const events = await t.stream({ url });
    const status = statusEvents(events);
    // Unthrottled it would be 20 events (one per chunk): about one per 250 ms, and the last count.
    expect(status.length).toBeGreaterThanOrEqual(2);
    expect(status.length).toBeLessThanOrEqual(7);
    expect(status.every((s) => s.total === 40960 && s.done! > 0)).toBe(true);
    expect(status.at(-1)).toEqual({ kind: "status", message: "fetched 40 KB of 40 KB", done: 40960, total: 40960 });
    const result = events.at(-1)!.data;
    expect(result).toMatchObject({ ok: true, data: { bytes: 40960, truncated: false } });
    const plain = ok(await t.call({ url }));
    expect(withoutUsage(plain)).toEqual(withoutUsage(result));
  });

  it("without a Content-Length the events have no total; a quick fetch sends no progress at all", async () => {
    const status = statusEvents(await t.stream({ url: `${server.url}/chunked?n=12&size=1024&ms=50&len=0` }));
    expect(status.length).toBeGreaterThanOrEqual(1);
    expect(status.every((s) => s.total === undefined)).toBe(true);
    expect(status.at(-1)).toEqual({ kind: "status", message: "fetched 12 KB", done: 12288 });
    const quick = await t.stream({ url: `${server.url}/data.json` });
    expect(quick.map((e) => e.event)).toEqual(["result"]);
    expect(quick[0]!.data).toMatchObject({ ok: true, data: { content_type: "application/json" } });
  });
});

describe("the site's errors are FETCH_FAILED, not ours", () => {
  it("a bot wall says so", async () => {
    const e = fails(await t.call({ url: `${server.url}/bot-wall` }), "FETCH_FAILED", 502);
    expect(e.message).toMatch(/refused automated access \(HTTP 403, a bot wall/);
    expect(e.message).toMatch(/not a Toolshed permission error/);
    expect(e.details).toMatchObject({ status: 403, bot_wall: true });
    expect(e.details.excerpt).toMatch(/Checking your browser/);
  });

  it("403, 404, 500, 429 with the status and the start of the answer", async () => {
    expect(fails(await t.call({ url: `${server.url}/forbidden` }), "FETCH_FAILED", 502).message).toMatch(/HTTP 403.*not a Toolshed permission error.*You do not have access/);
    const nf = fails(await t.call({ url: `${server.url}/missing` }), "FETCH_FAILED", 502);
    expect(nf.message).toMatch(/does not exist \(HTTP 404\).*The page \/missing is not here/);
    expect(fails(await t.call({ url: `${server.url}/broken` }), "FETCH_FAILED", 502).message).toMatch(/server error \(HTTP 500\).*database connection lost/);
    const rl = fails(await t.call({ url: `${server.url}/too-many` }), "FETCH_FAILED", 502);
    expect(rl.message).toMatch(/rate-limiting us \(HTTP 429\); it asks to retry after 30 s/);
  });

  it("a name that does not resolve is UNAVAILABLE with the reason and what to do", async () => {
    const e = fails(await t.call({ url: "http://nowhere.test/" }), "UNAVAILABLE", 503);
    expect(e.message).toBe("Could not reach http://nowhere.test/: the host name does not resolve (DNS: not found). Check the host name and that the host is reachable from the public internet; if both are right, retry later.");
    // The system resolver (getaddrinfo) and a name under .invalid (RFC 2606: never resolves).
    const real = await tenant(app({ webFetch: { fetcher: nodeFetcher(), allowLoopback: true } }));
    const inv = fails(await real.call({ url: "https://nothing.invalid/" }), "UNAVAILABLE", 503);
    expect(inv.message).toMatch(/^Could not reach https:\/\/nothing\.invalid\/: the (host name does not resolve|DNS lookup failed for now)[^.]*\. Check the host name and that the host is reachable/);
  });

  it("a refused connection is UNAVAILABLE", async () => {
    const e = fails(await t.call({ url: `http://127.0.0.1:${await freePort()}/` }), "UNAVAILABLE", 503);
    expect(e.message).toMatch(/the host refused the connection \(nothing listens on that port\)\. Check the host name/);
  });
});

describe("redirects", () => {
  it("are followed and reported (at most 5)", async () => {
    const b = ok(await t.call({ url: `${server.url}/chain?n=5` }));
    expect(b.data.redirects).toHaveLength(5);
    expect(b.data.final_url).toBe(`${server.url}/data.json`);
    const e = fails(await t.call({ url: `${server.url}/chain?n=6` }), "FETCH_FAILED", 502);
    expect(e.message).toMatch(/more than 5 times/);
  });

  it("to 169.254.169.254, in any spelling, are refused at the hop", async () => {
    for (const to of ["http://169.254.169.254/latest/meta-data/", "http://2852039166/", "http://[::ffff:a9fe:a9fe]/", "http://[fd00:ec2::254]/", "http://metadata.google.internal/"]) {
      const before = server.seen.length;
      const e = fails(await t.call({ url: `${server.url}/redirect?to=${encodeURIComponent(to)}` }), "BLOCKED", 403);
      expect(e.message).toMatch(/link-local|unique-local|internal/);
      expect(server.seen.length).toBe(before + 1);
    }
  });

  it("to a non-http URL is FETCH_FAILED (the site's doing), not INVALID_ARGUMENT", async () => {
    const e = fails(await t.call({ url: `${server.url}/redirect?to=${encodeURIComponent("file:///etc/passwd")}` }), "FETCH_FAILED", 502);
    expect(e.message).toMatch(/redirected to a URL web_fetch does not follow \(Only http and https/);
  });

  it("to a name that resolves to a private address are refused (the Node transport checks what DNS says)", async () => {
    const e = fails(await t.call({ url: `${server.url}/redirect?to=${encodeURIComponent("http://metadata.test/")}` }), "BLOCKED", 403);
    expect(e.message).toMatch(/metadata\.test: it resolves to 169\.254\.169\.254/);
    expect(fails(await t.call({ url: "http://mixed.test/" }), "BLOCKED", 403).message).toMatch(/10\.0\.0\.7.*private/);
    expect(fails(await t.call({ url: "http://v6private.test/" }), "BLOCKED", 403).message).toMatch(/unique-local/);
  });

  it("a name is fetched at the address that was checked", async () => {
    const b = ok(await t.call({ url: `http://site.test:${server.port}/data.json` }));
    expect(b.data.final_url).toBe(`http://site.test:${server.port}/data.json`);
    expect(server.seen.at(-1)!.headers.host).toBe(`site.test:${server.port}`);
  });

  it("303 turns POST into GET; credentials are not carried to another origin", async () => {
    const to = `http://site.test:${server.port}/echo`;
    const b = ok(await t.call({ url: `${server.url}/redirect?status=303&to=${encodeURIComponent(to)}`, method: "POST", body: "secret body", headers: { authorization: "Bearer tok", "x-keep": "1" } }));
    const echo = JSON.parse(b.data.content);
    expect(echo.method).toBe("GET");
    expect(echo.body).toBe("");
    expect(echo.headers.authorization).toBeUndefined();
    expect(echo.headers["x-keep"]).toBe("1");
  });
});

describe("the default deployment refuses loopback", () => {
  it("without the test switch, the same server is BLOCKED, directly and after a redirect from a public-looking name", async () => {
    const strict = await tenant(app({ webFetch: { fetcher: nodeFetcher({ resolve: fakeDns }) } }));
    const before = server.seen.length;
    for (const url of [`${server.url}/data.json`, `http://localhost:${server.port}/`, `http://[::ffff:7f00:1]:${server.port}/`, `http://0x7f.1:${server.port}/`, `http://2130706433:${server.port}/`]) {
      const e = fails(await strict.call({ url }), "BLOCKED", 403);
      expect(e.message).toMatch(/loopback/);
    }
    // site.test resolves to 127.0.0.1: refused before any connection.
    expect(fails(await strict.call({ url: `http://site.test:${server.port}/` }), "BLOCKED", 403).message).toMatch(/resolves to 127\.0\.0\.1/);
    expect(server.seen.length).toBe(before);
  });

  it("a redirect from an allowed host to 127.0.0.1 is refused when loopback is not allowed", async () => {
    // The transport plays the internet: public.test is "a public site" (served by our local server);
    // every other URL goes to the real Node transport under the real guard (no loopback).
    const hops: string[] = [];
    const real = nodeFetcher({ resolve: fakeDns });
    const strict = await tenant(app({
      webFetch: {
        fetcher: {
          check: real.check,
          fetch(url, init, host, guard) {
            hops.push(url.href);
            if (url.hostname !== "public.test") return real.fetch(url, init, host, guard);
            return real.fetch(new URL(url.pathname + url.search, server.url), init, host, { ...guard, allowLoopback: true });
          },
        },
      },
    }));
    const first = ok(await strict.call({ url: "http://public.test/data.json" }));
    expect(JSON.parse(first.data.content).name).toBe("toolshed");
    for (const to of [`${server.url}/data.json`, `http://[::ffff:7f00:1]:${server.port}/`, `http://localhost:${server.port}/`, `http://site.test:${server.port}/`]) {
      hops.length = 0;
      const before = server.seen.length;
      const e = fails(await strict.call({ url: `http://public.test/redirect?to=${encodeURIComponent(to)}` }), "BLOCKED", 403);
      expect(e.message).toMatch(/loopback|resolves to 127\.0\.0\.1/);
      expect(server.seen.length).toBe(before + 1);
      expect(hops.length).toBeLessThanOrEqual(2);
    }
  });
});

describe("tenant web policy", () => {
  it("blocked_domains and allowed_domains (outside: NEEDS_APPROVAL, nothing fetched), also on a redirect hop", async () => {
    const p = await tenant(app());
    expect((await p.policy({ web: { blocked_domains: ["site.test"] } })).status).toBe(200);
    const e = fails(await p.call({ url: `http://site.test:${server.port}/data.json` }), "BLOCKED", 403);
    expect(e.message).toMatch(/site\.test is blocked by this tenant's web policy/);
    const hop = fails(await p.call({ url: `${server.url}/redirect?to=${encodeURIComponent(`http://sub.site.test:${server.port}/`)}` }), "BLOCKED", 403);
    expect(hop.details.domain).toBe("site.test");
    await p.policy({ web: { allowed_domains: ["127.0.0.1"] } });
    ok(await p.call({ url: `${server.url}/data.json` }));
    const seen = server.seen.length;
    const na = fails(await p.call({ url: `http://site.test:${server.port}/data.json` }), "NEEDS_APPROVAL", 202);
    expect(na.details).toMatchObject({ tool: "web_fetch", args: { url: `http://site.test:${server.port}/data.json` } });
    expect(na.details.pending_id).toMatch(/^p[a-z2-7]{24}$/);
    expect(na.message).toMatch(/outside this tenant's allowed domains; fetching it needs a human's approval/);
    // A redirect from an allowed host to one outside: BLOCKED (only a URL asked for directly can be approved).
    const hop2 = fails(await p.call({ url: `${server.url}/redirect?to=${encodeURIComponent(`http://site.test:${server.port}/`)}` }), "BLOCKED", 403);
    expect(hop2.details).toMatchObject({ host: "site.test", policy: "allowed_domains" });
    expect(server.seen.length).toBe(seen + 1); // the redirect itself, never site.test
  });

  it("with both lists set, a blocked domain is BLOCKED at once: no pending call, nothing fetched", async () => {
    const p = await tenant(app());
    await p.policy({ web: { allowed_domains: ["docs.example.org"], blocked_domains: ["site.test"] } });
    const seen = server.seen.length;
    const e = fails(await p.call({ url: `http://sub.site.test:${server.port}/data.json` }), "BLOCKED", 403);
    expect(e.details).toMatchObject({ domain: "site.test", policy: "blocked_domains" });
    expect(e.message).toMatch(/blocked by this tenant's web policy \(blocked_domains\)/);
    expect(await p.pending()).toEqual([]);
    // A gate that holds every web_fetch call does not hold a blocked one either.
    await p.policy({ web: { blocked_domains: ["site.test"] }, gate: [{ tool: "web_fetch" }] });
    fails(await p.call({ url: `http://site.test:${server.port}/` }), "BLOCKED", 403);
    expect(await p.pending()).toEqual([]);
    expect(server.seen.length).toBe(seen);
    // Outside allowed_domains and not blocked: still held for approval.
    await p.policy({ web: { allowed_domains: ["docs.example.org"], blocked_domains: ["site.test"] } });
    fails(await p.call({ url: `${server.url}/data.json` }), "NEEDS_APPROVAL", 202);
    expect(await p.pending()).toHaveLength(1);
  });

  it("the policy route validates and reads back", async () => {
    const a = app();
    const p = await tenant(a);
    expect((await p.policy({ web: { blocked_domains: ["not a domain!"] } })).status).toBe(400);
    const put = await p.policy({ web: { allowed_domains: ["Docs.Example.COM."] } });
    expect(await put.json()).toEqual({ web: { allowed_domains: ["docs.example.com"] } });
    const got = await a.request(`/v1/admin/tenants/${p.id}/policy`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(await got.json()).toEqual({ web: { allowed_domains: ["docs.example.com"] } });
    const none = await a.request(`/v1/admin/tenants/nope/policy`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(none.status).toBe(404);
  });
});

it("needs the network scope", async () => {
  const a = app();
  const noNet = await tenant(a, ["read", "write", "execute"]);
  const e = fails(await noNet.call({ url: `${server.url}/data.json` }), "PERMISSION_DENIED", 403);
  expect(e.message).toMatch(/network/);
});

it("bad URLs are INVALID_ARGUMENT", async () => {
  fails(await t.call({ url: "file:///etc/passwd" }), "INVALID_ARGUMENT", 400);
  fails(await t.call({ url: "not a url" }), "INVALID_ARGUMENT", 400);
});
