/**
 * A request whose path the app serves, with a method no route there takes, is 405
 * METHOD_NOT_ALLOWED with an Allow header naming the methods that are (lib/api/app.ts notFound,
 * served-routes.ts methodsAt), for every route the app serves (read from the app, not a hand-kept
 * list); a path no route serves stays 404 NOT_FOUND. The MCP endpoint's is a JSON-RPC error
 * (lib/api/routes/mcp.ts mcpMethodNotAllowed).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { isMcpPath } from "../../../../lib/api/routes/mcp-body.js";
import { servedRoutes } from "../../../../lib/api/routes/served-routes.js";
import { testApp } from "../../../helpers.js";
import { routeRequest } from "../../../support/route-request.js";

const app = testApp({ syncSecret: "method-walk-sync-secret" });
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];
let doc: any;

beforeAll(async () => {
  doc = await (await app.request("/openapi.json")).json();
});

describe("a method the path does not take", () => {
  it("every served path: 405 with Allow naming the methods it takes, before any key is asked for", async () => {
    const byUrl = new Map<string, Set<string>>();
    for (const route of servedRoutes(app)) {
      if (route.method === "ALL") continue;
      const url = routeRequest(doc, route, { ws: "probe", tenant: "t-probe", key_id: "k-probe", tool: "read", path: "a.txt", id: "x1", session: "s1" }).url.split("?")[0]!;
      byUrl.set(url, new Set([...(byUrl.get(url) ?? []), route.method]));
    }
    expect(byUrl.size).toBeGreaterThan(40);
    const refused: string[] = [];
    for (const [url, methods] of byUrl) {
      const method = METHODS.find((m) => !methods.has(m) && !(m === "GET" && methods.has("HEAD")))!;
      if (isMcpPath(url)) continue; // the MCP endpoint answers as MCP answers errors: its own test below
      const res = await app.request(url, { method });
      const body = (await res.json()) as any;
      if (res.status !== 405) {
        refused.push(`${method} ${url}: ${res.status} ${body.error?.code}`);
        continue;
      }
      const allow = res.headers.get("allow")!.split(", ");
      expect(allow, url).toEqual(expect.arrayContaining([...methods]));
      expect(body.error).toMatchObject({ code: "METHOD_NOT_ALLOWED", details: { allow } });
      expect(body.error.message).toContain(`${method} is not served on ${url}`);
    }
    expect(refused).toEqual([]);
  });

  it("a tool route's GET says to POST; a path nothing serves is 404", async () => {
    const res = await app.request("/v1/workspaces/main/tools/bash", { method: "GET" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    const none = await app.request("/v1/nothing/here", { method: "GET" });
    expect(none.status).toBe(404);
    expect(((await none.json()) as any).error.code).toBe("NOT_FOUND");
  });

  it("a served path with a trailing slash: 404 naming the path without it and what it takes (was 405 'GET is not served on /v1/workspaces/x/: it takes GET, DELETE')", async () => {
    const cases: [string, string, string[]][] = [
      ["GET", "/v1/workspaces/probe/", ["GET", "DELETE"]],
      ["GET", "/v1/workspaces/", ["POST", "GET"]],
      ["GET", "/v1/workspaces/probe/checkpoints/", ["POST", "GET"]],
      ["POST", "/v1/workspaces/probe/", ["GET", "DELETE"]],
    ];
    for (const [method, url, allow] of cases) {
      const res = await app.request(url, { method });
      const body = (await res.json()) as any;
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.headers.get("allow"), url).toBeNull();
      const trimmed = url.slice(0, -1);
      expect(body.error).toMatchObject({ code: "NOT_FOUND", details: { path: trimmed, methods: expect.arrayContaining(allow) } });
      expect(body.error.message).toContain(`${trimmed} (without the trailing slash) takes ${body.error.details.methods.join(", ")}`);
      if (allow.includes(method)) expect(body.error.message).toContain(`send ${method} ${trimmed}`);
      else expect(body.error.message).not.toContain("send ");
    }
    // A path served with its slash stays served: the files listing.
    const listing = await app.request("/v1/workspaces/probe/files/", { method: "PATCH" });
    expect(listing.status).toBe(405);
  });

  it("a trailing slash on the MCP endpoint names only the method it serves, POST (said 'takes POST, GET, DELETE': GET and DELETE are routed only to be refused, RoutePolicy.refuses)", async () => {
    for (const method of ["POST", "GET", "DELETE"]) {
      const res = await app.request("/v1/workspaces/probe/mcp/", { method });
      const body = (await res.json()) as any;
      expect(res.status, method).toBe(404);
      expect(body.error.details, method).toEqual({ path: "/v1/workspaces/probe/mcp", methods: ["POST"] });
      expect(body.error.message, method).toContain(`/v1/workspaces/probe/mcp (without the trailing slash) takes POST${method === "POST" ? ": send POST /v1/workspaces/probe/mcp" : "."}`);
    }
    // The refusing methods are still routed, and still refused after the guard (no key here: 401 before the 405).
    expect((await app.request("/v1/workspaces/probe/mcp", { method: "GET" })).status).toBe(401);
  });

  it("the MCP endpoint: a method MCP does not have (PUT, PATCH, OPTIONS), before any key, is the JSON-RPC error GET and DELETE get, 405 with Allow: POST (was the HTTP routes' envelope)", async () => {
    for (const method of ["PUT", "PATCH", "OPTIONS"]) {
      for (const headers of [{}, { "mcp-session-id": "ask-0123456789abcdefghijklmn" }] as Record<string, string>[]) {
        const res = await app.request("/v1/workspaces/probe/mcp", { method, headers });
        expect(res.status, method).toBe(405);
        expect(res.headers.get("allow"), method).toBe("POST");
        expect(res.headers.get("content-type")).toContain("application/json");
        const body = (await res.json()) as any;
        expect(body, method).toEqual({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32000, message: `METHOD_NOT_ALLOWED: Method not allowed: ${method} is not a method of MCP's Streamable HTTP transport; send JSON-RPC requests with POST.`, data: { code: "METHOD_NOT_ALLOWED", details: { allow: ["POST"] } } },
        });
      }
    }
  });
});
