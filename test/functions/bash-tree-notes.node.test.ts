/**
 * What a command did to the tree beyond its files, said in the output the model reads (invariant 11:
 * never only in a data field): symlinks made or repointed, symlinks removed, empty directories kept,
 * directories removed, execute bits, one line each (lib/exec/write-back-notes.ts). Through the HTTP
 * tool route (bash, run_code) and MCP's tools/call, with the real sandbox (local executor). An
 * ordinary command's output has none of these lines.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../functions/bash.js";
import { tools as fileTools } from "../../functions/index.js";
import run_code from "../../functions/run_code.js";
import { localExecutor } from "../../infra/container/local-executor.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { httpSyncClient } from "../../lib/sync/http.js";
import { httpRunRecords } from "../../lib/sync/runs.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import { checkOutputs } from "../support/output-check.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const tools = [...fileTools, bash, run_code];

let app: ReturnType<typeof createApp>;
let key: string;
let root: string;
let executor: ReturnType<typeof localExecutor>;

const call = async (tool: string, args: unknown): Promise<any> => {
  const res = await app.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-tree-notes-"));
  chmodSync(root, 0o711);
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
  const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal" } as AppDeps;
  app = checkOutputs(createApp(deps, tools), tools);
  const admin = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
  expect((await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) })).status).toBe(201);
});
afterAll(async () => {
  await executor.handler.close();
  rmSync(root, { recursive: true, force: true });
});

describe("bash's output names the tree changes that are in no file list", () => {
  it("symlinks made, repointed and removed; empty directories kept and removed: one line each, data unchanged", async () => {
    await call("write", { file_path: "t1/a", content: "A\n" });
    const made = await call("bash", { command: "ln -s a t1/b && ln -s a t1/c && mkdir -p t1/empty/inner t1/gone" });
    expect(made.output).toBe("(no output)\n[symlinks made or repointed: t1/b, t1/c]\n[empty directories kept: t1/empty/inner/, t1/gone/]");
    expect(made.data).toMatchObject({ links_changed: ["t1/b", "t1/c"], dirs_created: ["t1/empty/inner", "t1/gone"] });
    expect(made.data.links_removed).toBeUndefined(); // data keeps its shape

    const changed = await call("bash", { command: "echo hi; rm t1/b && ln -sfn ../t1/a t1/c && rmdir t1/gone" });
    expect(changed.output).toBe("hi\n\n[symlinks made or repointed: t1/c]\n[symlinks removed: t1/b]\n[directories removed: t1/gone/]");
    expect(changed.data).toMatchObject({ links_changed: ["t1/b", "t1/c"], dirs_deleted: ["t1/gone"] });
  });

  it("an ordinary command's output is its own; a long list shows 20 names and counts the rest", async () => {
    expect((await call("bash", { command: "echo plain > t2.txt; cat t2.txt" })).output).toBe("plain\n");
    const many = await call("bash", { command: "mkdir t3 && cd t3 && for i in $(seq 10 34); do ln -s x l$i; done" });
    const shown = Array.from({ length: 20 }, (_, i) => `t3/l${i + 10}`).join(", ");
    expect(many.output).toBe(`(no output)\n[symlinks made or repointed: ${shown} and 5 more]`);
  });

  it("run_code says the same", async () => {
    const r = await call("run_code", { language: "python", code: "import os\nos.symlink('a', 't4link')\nos.makedirs('t4dir')\n" });
    expect(r.output).toBe("(no output)\n[symlinks made or repointed: t4link]\n[empty directories kept: t4dir/]");
  });

  it("a command's symlinks past the workspace's 8 MiB of link paths and targets: not written back, the output says what to do; a file beside them lands", async () => {
    const made = await call("bash", { command: "python3 -c \"import os\nfor i in range(2300): os.symlink('a/' * 1900 + str(i), 't5_%d' % i)\" && echo kept > t5.txt" });
    expect(made.output).toContain("[not written back: 2300 changed files");
    expect(made.output).toContain("Symlinks past 8 MiB: remove unneeded links (find . -type l) or shorten targets.");
    expect((await call("bash", { command: "find . -maxdepth 1 -type l -name 't5_*' | wc -l; cat t5.txt" })).output).toBe("0\nkept\n");
  }, 120_000);

  it("MCP's tools/call renders the same text as its content", async () => {
    const client = new Client({ name: "t", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL("http://127.0.0.1/v1/workspaces/main/mcp"), { requestInit: { headers: { authorization: `Bearer ${key}` } }, fetch: async (input, init) => app.request(String(input), init as RequestInit) }));
    const r = await client.callTool({ name: "bash", arguments: { command: "ln -s a t5link && rm t5link2 2>/dev/null; mkdir t5dir" } });
    const text = (r.content as { type: string; text: string }[]).map((c) => c.text).join("\n");
    expect(text).toContain("[symlinks made or repointed: t5link]\n[empty directories kept: t5dir/]");
    await client.close();
  });
});
