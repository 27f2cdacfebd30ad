/** Plugin custom tools in the real bubblewrap sandbox (local executor): Python and Node plugins written into the workspace, and the failure cases. */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { tools } from "../../../../functions/index.js";
import { localExecutor } from "../../../../infra/container/local-executor.js";
import { createApp } from "../../../../lib/api/app.js";
import type { AppDeps } from "../../../../lib/api/deps.js";
import { httpSyncClient } from "../../../../lib/sync/http.js";
import { httpRunRecords } from "../../../../lib/sync/runs.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";

const ADMIN = "admin-token";
const PY = `import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "init":
        print(json.dumps({"type": "init", "tools": []}), flush=True)
    elif m["type"] == "call":
        print(json.dumps({"type": "result", "call_id": m["call_id"], "content": [{"type": "text", "text": "py: " + m["params"]["message"]}]}), flush=True)
`;
const NODE = `const rl = require("readline").createInterface({ input: process.stdin });
rl.on("line", (l) => { const m = JSON.parse(l);
  if (m.type === "call") console.log(JSON.stringify({ type: "result", call_id: m.call_id, content: [{ type: "text", text: "node: " + m.params.message.toUpperCase() }], is_error: m.params.message === "fail" }));
});`;

let root = "";
let executor: ReturnType<typeof localExecutor>;
let app: ReturnType<typeof createApp>;
let key = "";

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-plugin-"));
  chmodSync(root, 0o711);
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  executor = localExecutor({ root, syncClient: (req) => httpSyncClient({ ...req.sync, fetch: viaApp }), runRecords: (req) => httpRunRecords({ ...req.sync, fetch: viaApp }) });
  const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal" } as AppDeps;
  app = createApp(deps, tools);
  const adm = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await adm("/v1/admin/tenants", { id: "acme" });
  key = (await adm("/v1/admin/tenants/acme/keys", {})).key;
  await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  for (const [path, body] of [["tools/echo.py", PY], ["tools/echo.js", NODE]]) {
    const w = await app.request("/v1/workspaces/main/tools/write", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ file_path: path, content: body }) });
    expect(w.status).toBe(200);
  }
  const schema = { type: "object", properties: { message: { type: "string" } }, required: ["message"] };
  const add = async (name: string, backend: unknown) => expect((await app.request("/v1/admin/tenants/acme/tools/custom", { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ name, description: name, input_schema: schema, backend }) })).status).toBe(201);
  await add("py_echo", { type: "plugin", command: "python3 tools/echo.py" });
  await add("node_echo", { type: "plugin", command: "node tools/echo.js" });
  await add("crasher", { type: "plugin", command: "echo oops >&2; exit 3" });
  await add("hanger", { type: "plugin", command: "sleep 30", timeout: 2 });
  await add("garbage", { type: "plugin", command: "cat >/dev/null; echo not json" });
  await add("wrong_id", { type: "plugin", command: `cat >/dev/null; echo '{"type":"result","call_id":"nope","content":[]}'` });
  await add("too_big", { type: "plugin", command: "cat >/dev/null; head -c 400000 /dev/zero | tr '\\\\0' a" });
}, 60_000);
afterAll(async () => {
  await executor?.handler.close();
  rmSync(root, { recursive: true, force: true });
});

const call = async (name: string, args: unknown) => {
  const r = await app.request(`/v1/workspaces/main/tools/${name}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(args) });
  return { status: r.status, body: (await r.json()) as any };
};

describe("plugin custom tools in the sandbox", () => {
  it("a Python plugin and a Node plugin answer through HTTP", async () => {
    const py = await call("py_echo", { message: "hi" });
    expect(py.body.output, JSON.stringify(py.body)).toBe("py: hi");
    const nd = await call("node_echo", { message: "hi" });
    expect(nd.body.output, JSON.stringify(nd.body)).toBe("node: HI");
    const f = await call("node_echo", { message: "fail" });
    expect(f.body.error.code).toBe("TOOL_REPORTED_ERROR");
  });
  it("crash, hang, garbage, wrong call_id and oversize output get clear errors", async () => {
    const reason = async (name: string) => {
      const r = await call(name, { message: "x" });
      return [r.body.error?.code, r.body.error?.details?.reason];
    };
    expect(await reason("crasher")).toEqual(["PLUGIN_FAILED", "crashed"]);
    expect((await reason("hanger"))[0]).toBe("TIMEOUT");
    expect(await reason("garbage")).toEqual(["PLUGIN_FAILED", "invalid_output"]);
    expect(await reason("wrong_id")).toEqual(["PLUGIN_FAILED", "wrong_call_id"]);
    expect(await reason("too_big")).toEqual(["PLUGIN_FAILED", "output_too_large"]);
  });
});

describe("plugin custom tools over MCP (official SDK client)", () => {
  it("tools/list shows them; tools/call runs them; errors are isError results", async () => {
    const client = new Client({ name: "t", version: "1" });
    const transport = new StreamableHTTPClientTransport(new URL("http://toolshed.test/v1/workspaces/main/mcp"), {
      fetch: ((u: string | URL, i?: RequestInit) => app.request(String(u), i)) as typeof fetch,
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    });
    await client.connect(transport);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain("py_echo");
    expect(names).toContain("node_echo");
    const r = (await client.callTool({ name: "py_echo", arguments: { message: "mcp" } })) as any;
    expect(r.content[0].text).toBe("py: mcp");
    const bad = (await client.callTool({ name: "crasher", arguments: { message: "x" } })) as any;
    expect(bad.isError).toBe(true);
    expect(bad.content[0].text).toMatch(/^PLUGIN_FAILED/);
    await client.close();
  });
});
