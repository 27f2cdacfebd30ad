/**
 * Presets and tool lists on keys and workspaces (lib/run/toolset.ts): every door applies one rule.
 * A tool outside the set is absent from listings and PERMISSION_DENIED when called, with storage unchanged.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { tools as allTools } from "../../../../functions/index.js";
import { PRESETS } from "../../../../lib/run/toolset.js";
import { admin, newTenant, testApp, upload, type Tenant } from "../../../helpers.js";
import { tar } from "../../archive/archives.js";
import { compat } from "./compat-helpers.js";

const READONLY: string[] = [...PRESETS.readonly];

/** Minimal valid-looking arguments per tool: refusal must come before argument checks anyway. */
const ARGS: Record<string, unknown> = {
  read: { file_path: "a.txt" }, write: { file_path: "new.txt", content: "x" }, edit: { file_path: "a.txt", old_string: "hello", new_string: "bye" },
  multi_edit: { file_path: "a.txt", edits: [{ old_string: "hello", new_string: "bye" }] }, insert: { file_path: "a.txt", insert_line: 0, text: "x" },
  apply_patch: { patch: "*** Begin Patch\n*** Add File: p.txt\n+x\n*** End Patch" }, ls: {}, delete: { path: "a.txt" }, move: { source: "a.txt", destination: "b.txt" },
  copy: { source: "a.txt", destination: "c.txt" }, glob: { pattern: "*" }, grep: { pattern: "hello" }, find: {}, bash: { command: "touch z.txt" },
  run_code: { language: "python", code: "open('z.txt','w')" }, bash_output: { shell_id: "x" }, kill_shell: { shell_id: "x" },
  todo_write: { todos: [{ content: "x", status: "pending" }] }, todo_read: {}, ask_user: { question: "ok?" }, pending_result: { pending_id: "paaaaaaaaaaaaaaaaaaaaaaaa" }, web_fetch: { url: "http://127.0.0.1:9/" }, web_search: { query: "x" }, task: { prompt: "x" }, task_output: { task_id: "x" },
};

async function keyWith(t: Tenant, body: Record<string, unknown>) {
  const r = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const key = r.body.key as string;
  const req = async (path: string, init: RequestInit = {}): Promise<Response> => t.app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(init.headers as Record<string, string> | undefined) } });
  return { key, record: r.body, req, call: async (ws: string, tool: string, args: unknown) => { const res = await req(`/v1/workspaces/${ws}/tools/${tool}`, { method: "POST", body: JSON.stringify(args) }); return { status: res.status, body: (await res.json()) as any }; } };
}

const names = (tools: { name: string }[]) => tools.map((x) => x.name).sort();

/** Every object of the tenant's workspace with its etag: "storage unchanged" means this is equal. */
async function snapshot(t: Tenant, ws = t.ws) {
  const res = await t.req(`/v1/workspaces/${ws}/files/?recursive=true`);
  expect(res.status).toBe(200);
  return (await res.text()).replace(/"(modified|last_modified|generated_at)":"[^"]*"/g, "");
}

async function mcp(req: (p: string, i?: RequestInit) => Response | Promise<Response>, ws: string, method: string, params: unknown = {}) {
  const res = await req(`/v1/workspaces/${ws}/mcp`, { method: "POST", headers: { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  return (await res.json()) as any;
}

describe("presets on keys", () => {
  it("a readonly key lists only readonly tools, in every format and over MCP, and shows its tools in key listings", async () => {
    const t = await newTenant();
    const k = await keyWith(t, { name: "ro", tools: "readonly" });
    expect(k.record.tools).toBe("readonly");
    for (const format of ["toolshed", "openai", "anthropic", "mcp"]) {
      const r = await k.req(`/v1/tools?format=${format}`);
      expect(names(((await r.json()) as any).tools), format).toEqual([...READONLY].sort());
    }
    const listed = await mcp(k.req, t.ws, "tools/list");
    expect(names(listed.result.tools)).toEqual([...READONLY].sort());
    const keys = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, undefined, "GET");
    const byId = Object.fromEntries(keys.body.keys.map((x: any) => [x.key_id, x.tools]));
    // KV listings may lag; the keys that show carry their tools.
    if (byId[k.record.key_id]) expect(byId[k.record.key_id]).toBe("readonly");
    // Tenant B (and this tenant's unlimited key) see everything their scopes allow.
    const b = await newTenant(t.app);
    const all = ((await (await b.req("/v1/tools")).json()) as any).tools;
    expect(all.length).toBeGreaterThan(READONLY.length);
    expect(all.some((x: any) => x.name === "bash")).toBe(true);
  });

  it("walks every tool route with a readonly key: each tool outside readonly is PERMISSION_DENIED with storage unchanged", async () => {
    const t = await newTenant(testApp(), { scopes: ["read", "write", "execute", "network"] });
    await upload(t, "a.txt", "hello\n");
    // A readonly key is read-only (its scopes derived from its tools); asking it for more is refused (keys-matrix.test.ts).
    const k = await keyWith(t, { tools: "readonly" });
    expect(k.record.scopes).toEqual(["read"]);
    const before = await snapshot(t);
    expect(Object.keys(ARGS).sort()).toEqual(names(allTools as never)); // a new tool must be added here
    for (const tool of allTools) {
      const r = await k.call(t.ws, tool.name, ARGS[tool.name]);
      if (READONLY.includes(tool.name)) {
        expect(r.body.error?.code, `${tool.name}: ${JSON.stringify(r.body)}`).not.toBe("PERMISSION_DENIED");
      } else {
        expect(r.status, tool.name).toBe(403);
        expect(r.body.error.code, tool.name).toBe("PERMISSION_DENIED");
        expect(r.body.error.message, tool.name).toContain("preset 'readonly'");
        expect(r.body.error.details.refused_by).toBe("key");
      }
    }
    expect(await snapshot(t)).toBe(before);
    // The same key over MCP and the compat routes: refused alike, nothing written.
    const called = await mcp(k.req, t.ws, "tools/call", { name: "write", arguments: { file_path: "m.txt", content: "x" } });
    expect(called.result.isError).toBe(true);
    expect(called.result.content[0].text).toMatch(/^PERMISSION_DENIED/);
    const created = await compat({ req: k.req, ws: t.ws }, "anthropic", "str_replace_based_edit_tool", { command: "create", path: "/c.txt", file_text: "x" });
    expect(created.body.is_error).toBe(true);
    expect(created.code).toBe("PERMISSION_DENIED");
    const viewed = await compat({ req: k.req, ws: t.ws }, "anthropic", "str_replace_based_edit_tool", { command: "view", path: "/a.txt" });
    expect(viewed.body.is_error, JSON.stringify(viewed.body)).toBe(false);
    const shell = await compat({ req: k.req, ws: t.ws }, "openai", "shell", { type: "shell_call", call_id: "c1", action: { commands: ["touch s.txt"] } });
    expect(shell.code).toBe("PERMISSION_DENIED");
    expect(await snapshot(t)).toBe(before);
    // The unknown-tool answer lists only what this key may use.
    const unknown = await k.call(t.ws, "wirte", {});
    expect(unknown.body.error.code).toBe("NOT_FOUND");
    expect([...unknown.body.error.details.available].sort()).toEqual([...READONLY].sort());
  });

  it("an explicit list (names and presets) works; unknown names and presets are INVALID_ARGUMENT with did-you-mean", async () => {
    const t = await newTenant();
    const k = await keyWith(t, { tools: ["read", "web"] });
    expect(names(((await (await k.req("/v1/tools")).json()) as any).tools)).toEqual(["read"]); // web_fetch and web_search need 'network', which this key lacks
    const bad = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { tools: "redonly" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("INVALID_ARGUMENT");
    expect(bad.body.error.message).toContain("Did you mean 'readonly'");
    const badName = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { tools: ["read", "gerp"] });
    expect(badName.body.error.message).toContain("Did you mean 'grep'");
    const single = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { tools: "read" });
    expect(single.body.error.message).toContain('["read"]');
    // A key with no tool could do nothing: refused, saying why.
    const none = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { tools: "none" });
    expect(none.status).toBe(400);
    expect(none.body.error.message).toContain("could do nothing");
  });
});

describe("tool lists on workspaces", () => {
  it("a workspace's list narrows every caller; the effective set is its intersection with the key's", async () => {
    const t = await newTenant(testApp(), { scopes: ["read", "write", "execute", "network"] });
    // No route writes to a workspace whose tools need no 'write': it is loaded at creation, from an archive.
    const mk = await t.req("/v1/workspaces?id=ro&tools=readonly,todo_read,bash", { method: "POST", headers: { "content-type": "application/x-tar" }, body: tar([{ name: "a.txt", body: "hello\n" }]) });
    expect(mk.status, await mk.clone().text()).toBe(201);
    expect(((await mk.json()) as any).tools).toEqual(["readonly", "todo_read", "bash"]);
    const before = await snapshot(t, "ro");
    // An unlimited key: the workspace refuses write, allows read.
    expect((await t.call("write", { file_path: "w.txt", content: "x" })).status).toBe(200); // "main" has no list: unaffected
    const unlimited = await keyWith(t, { scopes: ["read", "write", "execute", "network"] });
    const refused = await unlimited.call("ro", "write", { file_path: "x.txt", content: "x" });
    expect(refused.status).toBe(403);
    expect(refused.body.error.details.refused_by).toBe("workspace");
    expect((await unlimited.call("ro", "read", { file_path: "a.txt" })).status).toBe(200);
    // A coding key on this workspace: read, grep, ... and bash (in both); todo_read is in both too; web_fetch in neither.
    const coding = await keyWith(t, { tools: "coding" });
    const listed = await mcp(coding.req, "ro", "tools/list");
    expect(names(listed.result.tools)).toEqual([...READONLY, "todo_read", "bash"].sort());
    const web = await keyWith(t, { tools: "web", scopes: ["network"] });
    expect((await mcp(web.req, "ro", "tools/list")).result.tools).toEqual([]);
    expect((await web.call("ro", "web_fetch", { url: "http://127.0.0.1:9/" })).body.error.code).toBe("PERMISSION_DENIED");
    expect(await snapshot(t, "ro")).toBe(before);
    // A fork keeps its origin's tools; tools with from_workspace is refused. The origin, which no key may write to
    // (nor checkpoint), is not written to by its fork: no checkpoint in it, its objects as they were; the fork has its files.
    const stored = async () => (await env.FILES.list({ prefix: `t/${t.tenant}/w/ro/` })).objects.map((o) => `${o.key} ${o.etag}`).filter((k) => !k.includes("/x/audit/")).sort();
    const objectsBefore = await stored();
    const fork = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "ro2", from_workspace: "ro" }) });
    const forked = (await fork.json()) as any;
    expect(fork.status, JSON.stringify(forked)).toBe(201);
    expect(forked.tools).toEqual(["readonly", "todo_read", "bash"]);
    expect(forked.checkpoint).toBeUndefined();
    expect(await stored()).toEqual(objectsBefore);
    expect(((await (await t.req("/v1/workspaces/ro/checkpoints")).json()) as any).checkpoints).toEqual([]);
    expect(await snapshot(t, "ro2")).toBe(before.replaceAll('"workspace":"ro"', '"workspace":"ro2"'));
    expect((await unlimited.call("ro2", "write", { file_path: "x.txt", content: "x" })).body.error.code).toBe("PERMISSION_DENIED");
    const bad = await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "w3", tools: ["reed"] }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toContain("Did you mean 'read'");
  });
});
