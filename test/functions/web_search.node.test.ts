/**
 * web_search: each provider's client against a local stand-in (node:http on 127.0.0.1) that answers
 * in that provider's documented format, errors and rate limits included, and the tool through the
 * HTTP API (domain filters, tenant policy, no provider configured).
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../functions/index.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { ToolError } from "../../lib/shared/errors.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import { braveProvider } from "../../lib/tools/web/search/brave.js";
import { searchProviderFromEnv } from "../../lib/tools/web/search/from-env.js";
import { commonDeps } from "../../lib/runtime/workers.js";
import { fromAwsEnv } from "../../lib/runtime/aws.js";
import { tavilyProvider } from "../../lib/tools/web/search/tavily.js";
import type { SearchProvider } from "../../lib/tools/web/search/types.js";
import { checkOutputs } from "../support/output-check.js";

const BRAVE_KEY = "brave-test-key";
const TAVILY_KEY = "tvly-test-key";

const HITS = [
  { title: "The <strong>Rust</strong> Programming Language", url: "https://doc.rust-lang.org/book/", text: "Learn <strong>Rust</strong> &amp; more." },
  { title: "Rust by Example", url: "https://doc.rust-lang.org/rust-by-example/", text: "Examples of Rust." },
  { title: "Rust (programming language) - Wikipedia", url: "https://en.wikipedia.org/wiki/Rust_(programming_language)", text: "Rust is a language." },
  { title: "r/rust", url: "https://www.reddit.com/r/rust/", text: "A forum." },
  { title: "Rust on GitHub", url: "https://github.com/rust-lang/rust", text: "Source." },
  { title: "Not a web result", url: "ftp://files.example.com/rust", text: "skip me" },
];

let server: Server;
let base = "";
const seen: { path: string; headers: IncomingMessage["headers"]; body: string; query: URLSearchParams }[] = [];

function braveAnswer(q: URLSearchParams, key: string | undefined): [number, Record<string, string>, unknown] {
  if (key !== BRAVE_KEY) return [401, {}, { type: "ErrorResponse", error: { id: "e1", status: 401, code: "SUBSCRIPTION_TOKEN_INVALID", detail: "The provided subscription token is invalid.", meta: {} }, time: 1 }];
  if (q.get("q") === "rate") return [429, { "x-ratelimit-limit": "1, 15000", "x-ratelimit-remaining": "0, 14000", "x-ratelimit-reset": "7, 1419704" }, { type: "ErrorResponse", error: { id: "e2", status: 429, code: "RATE_LIMITED", detail: "Request rate limit exceeded for plan.", meta: { plan: "Free", rate_limit: 1 } }, time: 1 }];
  if (q.get("q") === "broken") return [500, {}, { type: "ErrorResponse", error: { id: "e3", status: 500, code: "INTERNAL_ERROR", detail: "Something went wrong." } }];
  const count = Number(q.get("count"));
  return [200, {}, { type: "search", query: { original: q.get("q") }, web: { type: "search", results: HITS.slice(0, count).map((h) => ({ type: "search_result", title: h.title, url: h.url, description: h.text, family_friendly: true })) } }];
}

function tavilyAnswer(body: any, auth: string | undefined): [number, Record<string, string>, unknown] {
  if (auth !== `Bearer ${TAVILY_KEY}`) return [401, {}, { detail: { error: "Unauthorized: missing or invalid API key." } }];
  if (body.query === "rate") return [429, { "retry-after": "12" }, { detail: { error: "Your request has been blocked due to excessive requests." } }];
  if (body.query === "plan") return [432, {}, { detail: { error: "This request exceeds your plan's set usage limit." } }];
  let hits = HITS;
  if (body.include_domains) hits = hits.filter((h) => body.include_domains.some((d: string) => h.url.includes(d)));
  if (body.exclude_domains) hits = hits.filter((h) => !body.exclude_domains.some((d: string) => h.url.includes(d)));
  return [200, {}, { query: body.query, answer: null, images: [], follow_up_questions: null, results: hits.slice(0, body.max_results).map((h, i) => ({ title: h.title, url: h.url, content: h.text, score: 0.9 - i / 10, raw_content: null })), response_time: 0.42 }];
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://x");
      const body = Buffer.concat(chunks).toString();
      seen.push({ path: url.pathname, headers: req.headers, body, query: url.searchParams });
      const [status, headers, json] =
        url.pathname === "/res/v1/web/search" && req.method === "GET" ? braveAnswer(url.searchParams, req.headers["x-subscription-token"] as string | undefined)
        : url.pathname === "/search" && req.method === "POST" ? tavilyAnswer(JSON.parse(body || "{}"), req.headers.authorization)
        : [404, {}, { detail: "Not Found" }];
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(json));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const brave = (key = BRAVE_KEY) => braveProvider({ apiKey: key, endpoint: `${base}/res/v1/web/search` });
const tavily = (key = TAVILY_KEY) => tavilyProvider({ apiKey: key, endpoint: `${base}/search` });

async function toolError(p: Promise<unknown>): Promise<ToolError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ToolError) return e;
    throw e;
  }
  throw new Error("expected a ToolError");
}

describe("Brave client", () => {
  it("sends the key and count, maps web.results and strips highlight markup", async () => {
    const r = await brave().search({ query: "rust", count: 3 });
    expect(r).toEqual([
      { title: "The Rust Programming Language", url: "https://doc.rust-lang.org/book/", snippet: "Learn Rust & more." },
      { title: "Rust by Example", url: "https://doc.rust-lang.org/rust-by-example/", snippet: "Examples of Rust." },
      { title: "Rust (programming language) - Wikipedia", url: "https://en.wikipedia.org/wiki/Rust_(programming_language)", snippet: "Rust is a language." },
    ]);
    const req = seen.at(-1)!;
    expect(req.headers["x-subscription-token"]).toBe(BRAVE_KEY);
    expect(req.query.get("count")).toBe("3");
  });

  it("429 → RATE_LIMITED with retry_after from X-RateLimit-Reset", async () => {
    const e = await toolError(brave().search({ query: "rate", count: 5 }));
    expect(e.code).toBe("RATE_LIMITED");
    expect(e.details).toMatchObject({ provider: "brave", retry_after: 7 });
    expect(e.message).toMatch(/\(RATE_LIMITED: Request rate limit exceeded for plan\)\. Retry after 7 seconds/);
  });

  it("a bad key → UNAVAILABLE naming the provider's reason and who must act; never the key", async () => {
    const e = await toolError(brave("wrong-key").search({ query: "rust", count: 5 }));
    expect(e.code).toBe("UNAVAILABLE");
    expect(e.message).toMatch(/HTTP 401: SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid\..*tell the operator/);
    expect(JSON.stringify({ m: e.message, d: e.details })).not.toContain("wrong-key");
  });

  it("a server error → UNAVAILABLE, retry later", async () => {
    const e = await toolError(brave().search({ query: "broken", count: 5 }));
    expect(e.code).toBe("UNAVAILABLE");
    expect(e.message).toMatch(/HTTP 500: INTERNAL_ERROR.*Retry later/);
  });
});

describe("Tavily client", () => {
  it("POSTs query, max_results and domain filters with a bearer key; maps results", async () => {
    const r = await tavily().search({ query: "rust", count: 2, allowed_domains: ["doc.rust-lang.org"], blocked_domains: ["reddit.com"] });
    expect(r.map((x) => x.url)).toEqual(["https://doc.rust-lang.org/book/", "https://doc.rust-lang.org/rust-by-example/"]);
    expect(r[0]!.snippet).toBe("Learn Rust & more.");
    const req = seen.at(-1)!;
    expect(req.headers.authorization).toBe(`Bearer ${TAVILY_KEY}`);
    expect(JSON.parse(req.body)).toEqual({ query: "rust", max_results: 2, include_domains: ["doc.rust-lang.org"], exclude_domains: ["reddit.com"] });
  });

  it("429 → RATE_LIMITED with Retry-After; 432 plan limit and 401 → UNAVAILABLE with the detail", async () => {
    const rl = await toolError(tavily().search({ query: "rate", count: 5 }));
    expect(rl.code).toBe("RATE_LIMITED");
    expect(rl.details).toMatchObject({ provider: "tavily", retry_after: 12, status: 429 });
    const plan = await toolError(tavily().search({ query: "plan", count: 5 }));
    expect(plan.code).toBe("UNAVAILABLE");
    expect(plan.message).toMatch(/HTTP 432: This request exceeds your plan's set usage limit/);
    const auth = await toolError(tavily("tvly-wrong").search({ query: "rust", count: 5 }));
    expect(auth.message).toMatch(/HTTP 401: Unauthorized.*tell the operator/);
  });

  it("an unreachable endpoint → UNAVAILABLE", async () => {
    const closed = tavilyProvider({ apiKey: TAVILY_KEY, endpoint: "http://127.0.0.1:9/search" });
    expect((await toolError(closed.search({ query: "rust", count: 1 }))).code).toBe("UNAVAILABLE");
  });
});

describe("configuration", () => {
  it("picks the provider from env; none without a key", () => {
    expect(searchProviderFromEnv({})).toBeUndefined();
    expect(searchProviderFromEnv({ TOOLSHED_SEARCH_PROVIDER: "brave" })).toBeUndefined();
    expect(searchProviderFromEnv({ BRAVE_SEARCH_API_KEY: "k" })?.name).toBe("brave");
    expect(searchProviderFromEnv({ TAVILY_API_KEY: "k" })?.name).toBe("tavily");
    expect(searchProviderFromEnv({ TOOLSHED_SEARCH_PROVIDER: "tavily", BRAVE_SEARCH_API_KEY: "b", TAVILY_API_KEY: "t" })?.name).toBe("tavily");
  });

  it("is wired into AppDeps on Workers and Lambda; Lambda gets the resolving web transport", () => {
    expect(commonDeps({ TAVILY_API_KEY: "k" }).search?.name).toBe("tavily");
    expect(commonDeps({}).search).toBeUndefined();
    const aws = fromAwsEnv({ TOOLSHED_BUCKET: "b", BRAVE_SEARCH_API_KEY: "k" });
    expect(aws.search?.name).toBe("brave");
    expect(aws.webFetch?.fetcher).toBeDefined();
    expect(aws.webFetch?.allowLoopback).toBeUndefined();
  });

  it("TOOLSHED_SEARCH_ENDPOINT points the provider elsewhere", async () => {
    const p = searchProviderFromEnv({ TOOLSHED_SEARCH_PROVIDER: "brave", BRAVE_SEARCH_API_KEY: BRAVE_KEY, TOOLSHED_SEARCH_ENDPOINT: `${base}/res/v1/web/search` })!;
    expect((await p.search({ query: "rust", count: 1 }))[0]!.url).toBe("https://doc.rust-lang.org/book/");
  });
});

describe("the web_search tool", () => {
  const ADMIN = "admin-search";
  async function tenant(search?: SearchProvider, policy?: unknown) {
    const deps: AppDeps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, ...(search ? { search } : {}) };
    const app = checkOutputs(createApp(deps, tools), tools);
    const adm = (path: string, body: unknown, method = "POST") => app.request(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    await adm("/v1/admin/tenants", { id: "acme" });
    if (policy) await adm("/v1/admin/tenants/acme/policy", policy, "PUT");
    const key = ((await (await adm("/v1/admin/tenants/acme/keys", { scopes: ["read", "network"] })).json()) as { key: string }).key;
    // Creating a workspace needs 'write', which the key under test lacks: a setup key of the tenant makes it.
    const setup = ((await (await adm("/v1/admin/tenants/acme/keys", { name: "setup" })).json()) as { key: string }).key;
    const ws = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${setup}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
    if (ws.status !== 201) throw new Error(`workspace: ${await ws.text()}`);
    return async (args: unknown) => {
      const res = await app.request("/v1/workspaces/main/tools/web_search", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(args) });
      return { status: res.status, body: (await res.json()) as any };
    };
  }

  it("returns {query, results:[{title,url,snippet}]} and drops non-http results", async () => {
    const call = await tenant(brave());
    const r = await call({ query: "rust" });
    expect(r.status).toBe(200);
    expect(r.body.data.query).toBe("rust");
    expect(r.body.data.results).toHaveLength(5);
    expect(r.body.data.results[0]).toEqual({ title: "The Rust Programming Language", url: "https://doc.rust-lang.org/book/", snippet: "Learn Rust & more." });
    expect(r.body.output).toMatch(/^1\. The Rust Programming Language\n {3}https:\/\/doc\.rust-lang\.org\/book\/\n {3}Learn Rust & more\./);
    expect((await call({ query: "rust", max_results: 2 })).body.data.results).toHaveLength(2);
  });

  it("filters domains on our side too (a provider that ignores them, like Brave here)", async () => {
    const call = await tenant(brave());
    const only = await call({ query: "rust", allowed_domains: ["rust-lang.org"] });
    expect(only.body.data.results.map((x: any) => new URL(x.url).hostname)).toEqual(["doc.rust-lang.org", "doc.rust-lang.org"]);
    const not = await call({ query: "rust", blocked_domains: ["wikipedia.org", "*.reddit.com"] });
    expect(not.body.data.results.map((x: any) => x.url)).not.toEqual(expect.arrayContaining([expect.stringMatching(/wikipedia|reddit/)]));
    expect(not.body.data.results).toHaveLength(3);
  });

  it("the tenant's blocked_domains apply to every search", async () => {
    const call = await tenant(tavily(), { web: { blocked_domains: ["github.com"] } });
    const r = await call({ query: "rust" });
    expect(r.body.data.results.map((x: any) => x.url)).not.toContain("https://github.com/rust-lang/rust");
    expect(JSON.parse(seen.at(-1)!.body).exclude_domains).toEqual(["github.com"]);
  });

  it("RATE_LIMITED reaches the agent as 429 with retry_after", async () => {
    const call = await tenant(tavily());
    const r = await call({ query: "rate" });
    expect(r.status).toBe(429);
    expect(r.body.error).toMatchObject({ code: "RATE_LIMITED", details: { retry_after: 12 } });
  });

  it("without a provider: UNAVAILABLE saying how to configure one", async () => {
    const call = await tenant();
    const r = await call({ query: "rust" });
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe("UNAVAILABLE");
    expect(r.body.error.message).toMatch(/TOOLSHED_SEARCH_PROVIDER.*BRAVE_SEARCH_API_KEY or TAVILY_API_KEY/);
  });

  it("validates max_results and domains", async () => {
    const call = await tenant(brave());
    expect((await call({ query: "rust", max_results: 21 })).status).toBe(400);
    expect((await call({ query: "" })).status).toBe(400);
    expect((await call({ query: "rust", allowed_domains: ["bad domain"] })).status).toBe(400);
  });
});
