/**
 * Tenant isolation (issue 2, "Done when"): tenant B's key on every route of tenant A's workspace
 * gets 404, learns nothing of A, and A's storage (objects and their etags) and A's KV records are
 * byte-for-byte what they were before.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { z } from "@hono/zod-openapi";
import { newTenant, testApp, type Tenant, type TestApp } from "../../helpers.js";
import type { Tool } from "../../../lib/contract/tool.js";
import { tarHeader } from "../../../lib/archive/tar-writer.js";
import { sample } from "../../support/json-sample.js";
import { routeRequest } from "../../support/route-request.js";
import { docPathOf, servedRoutes } from "../../../lib/api/routes/served-routes.js";

const A_WS = "a-private";
const SECRET = "top secret of tenant A";

/** Plausible arguments per tool, aimed at A's files. Unknown tools get arguments built from their schema. */
const ARGS: Record<string, unknown[]> = {
  read: [{ file_path: "secret.txt" }, { file_path: "/dir/nested/deep.txt", offset: 1, limit: 10 }, { file_path: "bin.dat", encoding: "base64" }],
  write: [{ file_path: "secret.txt", content: "pwned" }, { file_path: "new-by-b.txt", content: "pwned" }],
  edit: [{ file_path: "secret.txt", old_string: "top", new_string: "pwned" }, { file_path: "created-by-b.txt", old_string: "", new_string: "pwned" }],
  multi_edit: [{ file_path: "secret.txt", edits: [{ old_string: "top", new_string: "pwned" }] }],
  ls: [{}, { path: "/", recursive: true, show_hidden: true }, { path: "dir" }],
  delete: [{ path: "secret.txt" }, { path: "dir", recursive: true }],
  move: [{ from: "secret.txt", to: "stolen.txt" }, { from: "dir", to: "elsewhere", overwrite: true }],
  copy: [{ from: "secret.txt", to: "stolen.txt" }, { from: "dir", to: "elsewhere", overwrite: true }],
  glob: [{ pattern: "**/*" }],
  grep: [{ pattern: "secret" }, { pattern: "top", path: "/", output_mode: "content" }],
  bash: [{ command: "cat secret.txt; ls -la; rm -rf ./*" }],
};

function argsFor(tool: Tool): unknown[] {
  const list = ARGS[tool.name] ?? [sample(z.toJSONSchema(tool.input, { io: "input" }))];
  for (const a of list) {
    const ok = tool.input.safeParse(a);
    if (!ok.success) throw new Error(`isolation test: arguments for ${tool.name} do not validate (${ok.error.message}); add valid ones to ARGS`);
  }
  return list;
}

async function storage(tenant: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix: `t/${tenant}/`, ...(cursor ? { cursor } : {}) });
    out.push(...page.objects.map((o) => `${o.key} ${o.etag} ${o.size}`));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out.sort();
}

/** KV entries that belong to a tenant: its record, its keys' ids, its session records (with values). */
async function kvState(tenant: string): Promise<string[]> {
  const out: string[] = [];
  for (const prefix of [`tenant/${tenant}`, `keyid/${tenant}/`, `rec/${tenant}/`]) {
    let cursor: string | undefined;
    do {
      const page = await env.KV.list({ prefix, ...(cursor ? { cursor } : {}) });
      for (const k of page.keys) out.push(`${k.name} ${await env.KV.get(k.name)}`);
      cursor = page.list_complete ? undefined : page.cursor;
    } while (cursor);
  }
  return out.sort();
}

async function callTool(t: Tenant, ws: string, tool: string, args: unknown, session = "s1") {
  const res = await t.req(`/v1/workspaces/${ws}/tools/${tool}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
  return { status: res.status, text: await res.text() };
}

async function rawPut(t: Tenant, ws: string, path: string, body: string | Uint8Array, headers: Record<string, string> = {}) {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  return t.req(`/v1/workspaces/${ws}/files/${path}`, { method: "PUT", headers: { "content-length": String(bytes.length), ...headers }, body: bytes });
}

describe("tenant isolation", () => {
  let app: TestApp;
  let a: Tenant;
  let b: Tenant;
  let etags: Record<string, string>;

  beforeAll(async () => {
    app = testApp();
    a = await newTenant(app);
    b = await newTenant(app, { scopes: ["read", "write", "execute", "network"] });
    expect((await a.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: A_WS }) })).status).toBe(201);
    // A's files, through the raw route and through the tools.
    etags = {};
    for (const [p, body] of [
      ["secret.txt", `${SECRET}\nline two\n`],
      ["dir/nested/deep.txt", `${SECRET} (deep)\n`],
      ["dir/other.md", "# notes\n"],
      [".env", "API_KEY=a-only\n"],
      ["café.txt", "unicode\n"],
    ] as const) {
      const r = await rawPut(a, A_WS, p.split("/").map(encodeURIComponent).join("/"), body);
      expect(r.status).toBe(201);
      etags[p] = ((await r.json()) as any).etag;
    }
    expect((await rawPut(a, A_WS, "bin.dat", new Uint8Array([0, 1, 2, 255]))).status).toBe(201);
    expect((await callTool(a, A_WS, "write", { file_path: "by-tool.txt", content: `${SECRET} via write\n` })).status).toBe(200);
    expect((await callTool(a, A_WS, "read", { file_path: "secret.txt" })).status).toBe(200);
    expect((await callTool(a, A_WS, "edit", { file_path: "secret.txt", old_string: "line two", new_string: "line 2" })).status).toBe(200);
    // A also has files in "main"; B has a "main" of its own.
    expect((await rawPut(a, a.ws, "a-main.txt", SECRET)).status).toBe(201);
    // A's workspace is layered: a checkpoint sealed its files into a pack; one more file is upper.
    const cp = await a.req(`/v1/workspaces/${A_WS}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "a-cp" }) });
    expect(cp.status).toBe(201);
    aCheckpoint = ((await cp.json()) as any).id;
    expect((await rawPut(a, A_WS, "after-cp.txt", `${SECRET} upper\n`)).status).toBe(201);
  });
  let aCheckpoint: string;

  /** Runs one request as B and checks the answer: 404 NOT_FOUND, nothing of A in it. */
  async function expectHidden(what: string, res: { status: number; text: string }, method = "") {
    expect(res.status, what).toBe(404);
    if (method === "HEAD") return;
    const body = JSON.parse(res.text);
    // The MCP route answers as MCP answers errors: a JSON-RPC error carrying the code in data (docs/mcp-and-providers.md, Refusals).
    const mcp = what.endsWith("/mcp");
    expect(mcp ? body.jsonrpc : body.ok, what).toBe(mcp ? "2.0" : false);
    expect((mcp ? body.error.data : body.error).code, what).toBe("NOT_FOUND");
    expect(res.text, what).not.toContain(a.tenant);
    expect(res.text, what).not.toContain(SECRET);
    expect(res.text, what).not.toContain("secret.txt\""); // no similar-path hints from A's tree
  }

  it("B's key on every route of A's workspace → 404, and A's storage is identical before and after", async () => {
    const beforeFiles = await storage(a.tenant);
    const beforeKv = await kvState(a.tenant);
    expect(beforeFiles.length).toBeGreaterThanOrEqual(9);
    expect(beforeKv.some((k) => k.startsWith(`rec/${a.tenant}/`))).toBe(true);

    let requests = 0;
    const run = async (what: string, method: string, path: string, init: RequestInit = {}) => {
      const res = await b.req(path, { method, ...init });
      requests++;
      await expectHidden(what, { status: res.status, text: await res.text() }, method);
    };

    // The workspace itself.
    await run("GET workspace", "GET", `/v1/workspaces/${A_WS}`);
    await run("DELETE workspace", "DELETE", `/v1/workspaces/${A_WS}`);

    // Raw files, existing and not, with and without conditions.
    const filePaths = ["secret.txt", "dir/nested/deep.txt", "caf%C3%A9.txt", ".env", "bin.dat", "by-tool.txt", "missing.txt", "dir"];
    for (const p of filePaths) {
      const url = `/v1/workspaces/${A_WS}/files/${p}`;
      await run(`GET ${p}`, "GET", url);
      await run(`GET ${p} range`, "GET", url, { headers: { range: "bytes=0-3" } });
      await run(`GET ${p} if-none-match`, "GET", url, { headers: { "if-none-match": `"${etags["secret.txt"]}"` } });
      await run(`HEAD ${p}`, "HEAD", url);
      await run(`PUT ${p}`, "PUT", url, { headers: { "content-length": "5" }, body: "pwned" });
      await run(`PUT ${p} if-match`, "PUT", url, { headers: { "content-length": "5", "if-match": `"${etags["secret.txt"]}"` }, body: "pwned" });
      await run(`PUT ${p} create`, "PUT", url, { headers: { "content-length": "5", "if-none-match": "*" }, body: "pwned" });
      await run(`DELETE ${p}`, "DELETE", url);
      await run(`DELETE ${p} if-match`, "DELETE", url, { headers: { "if-match": `"${etags["secret.txt"]}"` } });
    }

    // Versions (lib/api/routes/versions.ts): checkpoint, list, get, delete, restore, diff; a fork of A's workspace.
    const json = { "content-type": "application/json" };
    await run("POST checkpoints", "POST", `/v1/workspaces/${A_WS}/checkpoints`, { headers: json, body: JSON.stringify({ name: "b" }) });
    await run("GET checkpoints", "GET", `/v1/workspaces/${A_WS}/checkpoints`);
    await run("POST restore", "POST", `/v1/workspaces/${A_WS}/checkpoints/${aCheckpoint}/restore`);
    await run("GET checkpoint", "GET", `/v1/workspaces/${A_WS}/checkpoints/${aCheckpoint}`);
    await run("DELETE checkpoint", "DELETE", `/v1/workspaces/${A_WS}/checkpoints/${aCheckpoint}`);
    await run("GET diff", "GET", `/v1/workspaces/${A_WS}/diff?from=${aCheckpoint}`);
    await run("GET diff to", "GET", `/v1/workspaces/${A_WS}/diff?from=${aCheckpoint}&to=${aCheckpoint}`);
    for (const body of [{ id: "b-fork", from_workspace: A_WS }, { id: "b-fork2", from_workspace: A_WS, checkpoint: aCheckpoint }]) {
      await run(`POST fork ${JSON.stringify(body)}`, "POST", "/v1/workspaces", { headers: json, body: JSON.stringify(body) });
    }

    // Archive import and export (lib/api/routes/archive.ts): a replace that would empty A's workspace, a zip, exports.
    const archive = new Uint8Array([...tarHeader({ name: "secret.txt", size: 5 }), ...new TextEncoder().encode("pwned"), ...new Uint8Array(507), ...new Uint8Array(1024)]);
    for (const q of ["", "?mode=replace", "?prefix=dir&mode=replace"]) {
      await run(`POST import${q}`, "POST", `/v1/workspaces/${A_WS}/import${q}`, { headers: { "content-type": "application/x-tar" }, body: archive });
    }
    await run("POST import zip", "POST", `/v1/workspaces/${A_WS}/import`, { headers: { "content-type": "application/zip", "content-length": "22" }, body: new Uint8Array([0x50, 0x4b, 5, 6, ...new Uint8Array(18)]) });
    for (const q of ["", "?path=dir", "?path=secret.txt"]) await run(`GET export${q}`, "GET", `/v1/workspaces/${A_WS}/export${q}`);

    // Every tool, with plausible arguments, in B's default session and in the session A used.
    expect(tools.length).toBeGreaterThanOrEqual(4);
    for (const tool of tools) {
      for (const args of argsFor(tool)) {
        for (const session of ["default", "s1"]) {
          const res = await callTool(b, A_WS, tool.name, args, session);
          requests++;
          await expectHidden(`tool ${tool.name} ${JSON.stringify(args)}`, res);
          expect(JSON.parse(res.text).tool).toBe(tool.name);
        }
      }
    }

    // The provider-native compat routes (lib/api/routes/compat.ts): every command aimed at A's files.
    const compatCalls: [string, unknown][] = [
      ["anthropic/str_replace_based_edit_tool", { command: "view", path: "secret.txt" }],
      ["anthropic/str_replace_based_edit_tool", { command: "view", path: "/" }],
      ["anthropic/str_replace_based_edit_tool", { command: "create", path: "new-by-b.txt", file_text: "pwned" }],
      ["anthropic/str_replace_based_edit_tool", { command: "str_replace", path: "secret.txt", old_str: "top", new_str: "pwned" }],
      ["anthropic/str_replace_based_edit_tool", { command: "insert", path: "secret.txt", insert_line: 0, insert_text: "pwned" }],
      ["anthropic/str_replace_editor", { type: "tool_use", id: "toolu_1", name: "str_replace_editor", input: { command: "view", path: "secret.txt" } }],
      ["anthropic/bash", { command: "cat secret.txt; rm -rf ./*" }],
      ["openai/apply_patch", { type: "apply_patch_call", call_id: "c1", operation: { type: "delete_file", path: "secret.txt" } }],
      ["openai/apply_patch", { patch: "*** Begin Patch\n*** Update File: secret.txt\n@@\n-top secret of tenant A\n+pwned\n*** End Patch" }],
      ["openai/shell", { type: "shell_call", call_id: "c2", action: { commands: ["cat secret.txt", "rm -rf ./*"] } }],
    ];
    for (const [route, body] of compatCalls) {
      for (const session of ["default", "s1"]) {
        await run(`compat ${route} ${JSON.stringify(body)}`, "POST", `/v1/workspaces/${A_WS}/compat/${route}`, { headers: { "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(body) });
      }
    }

    // Workspace ids that try to name A's tenant or climb out of B's: refused as unknown workspaces,
    // with the very answer a made-up tenant id gets (B typed A's id itself; it is only echoed back).
    const madeUp = "t-zzzzzzzz";
    for (const tmpl of ["..%2F..%2F{T}%2Fw%2Fa-private", "{T}", "{T}%2Fa-private", "..%2F{T}", "%2e%2e", "a-private%2F..", "A-PRIVATE"]) {
      const answer = async (tenant: string) => {
        const ws = tmpl.replace("{T}", tenant);
        const out: string[] = [];
        for (const path of [`/v1/workspaces/${ws}`, `/v1/workspaces/${ws}/files/secret.txt`]) {
          const res = await b.req(path);
          out.push(`${res.status} ${await res.text()}`);
        }
        const t = await callTool(b, ws, "read", { file_path: "secret.txt" });
        out.push(`${t.status} ${t.text}`);
        requests += 3;
        // The time a call took (usage.ms) is the one figure allowed to differ.
        return out.map((o) => o.replaceAll(tenant, "<T>").replace(/"ms":\d+/g, '"ms":0'));
      };
      const real = await answer(a.tenant);
      expect(real, tmpl).toEqual(await answer(madeUp));
      for (const r of real) {
        expect(r.startsWith("404 "), `${tmpl}: ${r}`).toBe(true);
        expect(JSON.parse(r.slice(4)).error.code).toBe("NOT_FOUND");
        expect(r).not.toContain(SECRET);
      }
    }

    expect(requests).toBeGreaterThan(100);
    expect(await storage(a.tenant)).toEqual(beforeFiles);
    expect(await kvState(a.tenant)).toEqual(beforeKv);

    // A still works, and sees its own content unchanged.
    const r = await callTool(a, A_WS, "read", { file_path: "secret.txt" });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).output).toContain(SECRET);
    expect(await (await a.req(`/v1/workspaces/${A_WS}/files/by-tool.txt`)).text()).toBe(`${SECRET} via write\n`);
  });

  it("every route of a workspace the app serves, read from the app (no hand-kept list), answers B 404 on A's workspace and changes nothing", async () => {
    const doc = await (await app.request("/openapi.json")).json();
    const wsRoutes = servedRoutes(app).filter((r) => docPathOf(r).includes("{ws}"));
    expect(wsRoutes.length).toBeGreaterThan(15);
    const beforeFiles = await storage(a.tenant);
    const beforeKv = await kvState(a.tenant);
    const params = { ws: A_WS, id: aCheckpoint, path: "secret.txt", tool: "read", session: "s1" };
    const walked: string[] = [];
    for (const route of wsRoutes) {
      const r = routeRequest(doc, route, params);
      // GET/DELETE of the MCP route speak its own protocol: an Accept it understands, so the answer is its, not a 406.
      const headers = { ...r.headers, "x-session-id": "s1", ...(r.url.endsWith("/mcp") ? { accept: "application/json, text/event-stream" } : {}) };
      const send = async (url: string) => {
        const res = await b.req(url, { method: r.method, headers, ...(r.body !== undefined ? { body: r.body } : {}) });
        return { status: res.status, text: await res.text() };
      };
      const what = `${route.method} ${docPathOf(route)}`;
      const res = await send(r.url);
      if (res.status === 403) {
        // B's key lacks the route's scope: refused before any workspace is looked at, exactly as for a workspace that never existed.
        const none = await send(r.url.replace(`/workspaces/${A_WS}`, "/workspaces/never-made"));
        expect(res.text.replace(/"ms":\d+/g, ""), what).toBe(none.text.replace(/"ms":\d+/g, "").replaceAll("never-made", A_WS));
        expect(JSON.parse(res.text).error.code, what).toBe("PERMISSION_DENIED");
      } else {
        await expectHidden(what, res, r.method);
      }
      walked.push(`${route.method} ${docPathOf(route)}`);
    }
    expect(walked).toContain("POST /v1/workspaces/{ws}/undo");
    expect(await storage(a.tenant)).toEqual(beforeFiles);
    expect(await kvState(a.tenant)).toEqual(beforeKv);
  });

  it("B's workspace list shows none of A's workspaces", async () => {
    const res = await b.req("/v1/workspaces");
    expect(res.status).toBe(200);
    const text = await res.text();
    const body = JSON.parse(text);
    expect(body.workspaces.map((w: any) => w.id)).toEqual([b.ws]);
    expect(text).not.toContain(A_WS);
    expect(text).not.toContain(a.tenant);
    // And A's shows both of A's.
    const mine = (await (await a.req("/v1/workspaces")).json()) as any;
    expect(mine.workspaces.map((w: any) => w.id).sort()).toEqual([A_WS, a.ws].sort());
  });

  it("B's 'main' is B's own: same id as A's, different files", async () => {
    // B reads "a-main.txt" in its own "main": it is not there.
    const res = await b.req(`/v1/workspaces/${b.ws}/files/a-main.txt`);
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain(SECRET);
    const r = await callTool(b, b.ws, "read", { file_path: "a-main.txt" });
    expect(r.status).toBe(404);
    expect(r.text).not.toContain(a.tenant);
  });

  it("B creating a workspace with the same id as A's works and is separate", async () => {
    const beforeA = await storage(a.tenant);
    const c = await b.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: A_WS }) });
    expect(c.status).toBe(201);
    // Fresh and empty for B.
    expect((await b.req(`/v1/workspaces/${A_WS}/files/secret.txt`)).status).toBe(404);
    const ls = await callTool(b, A_WS, "ls", { path: "/", recursive: true, show_hidden: true });
    if (tools.some((t) => t.name === "ls")) {
      expect(ls.status).toBe(200);
      expect(JSON.parse(ls.text).data.entries).toEqual([]);
    }
    // B writes its own secret.txt, by both routes.
    expect((await rawPut(b, A_WS, "secret.txt", "B's own")).status).toBe(201);
    expect((await callTool(b, A_WS, "write", { file_path: "by-tool.txt", content: "B via write" })).status).toBe(200);
    expect(await (await b.req(`/v1/workspaces/${A_WS}/files/secret.txt`)).text()).toBe("B's own");
    // A's files are untouched; A's workspace still A's.
    expect(await storage(a.tenant)).toEqual(beforeA);
    expect(await (await a.req(`/v1/workspaces/${A_WS}/files/secret.txt`)).text()).toContain(SECRET);
    expect(await (await a.req(`/v1/workspaces/${A_WS}/files/by-tool.txt`)).text()).toBe(`${SECRET} via write\n`);
    const aRead = await callTool(a, A_WS, "read", { file_path: "by-tool.txt" });
    expect(JSON.parse(aRead.text).output).toContain(SECRET);
    // Deleting B's copy leaves A's.
    expect((await b.req(`/v1/workspaces/${A_WS}`, { method: "DELETE" })).status).toBe(200);
    expect(await storage(a.tenant)).toEqual(beforeA);
    expect((await a.req(`/v1/workspaces/${A_WS}`)).status).toBe(200);
    // B's objects live only under B's prefix.
    expect((await storage(b.tenant)).every((k) => k.startsWith(`t/${b.tenant}/`))).toBe(true);
  });
});
