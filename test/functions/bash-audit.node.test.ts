/**
 * The audit entry of a bash run (issue #28 §4, docs/audit.md), through the real app and the real
 * sandbox (local executor), by the tool route and the Anthropic compat route: the command's size,
 * never its text; the files its write-back changed; its call_id. And its usage: the workspace bytes the
 * sandbox fetched and wrote back are the call's bytes_read and bytes_written (tool-support.ts takeRun).
 * And what the log never names: a background task's id or a cut output's file name, which are what
 * reads that output (docs/shell-sessions.md: only the call that made them is told).
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../functions/bash.js";
import { tools as fileTools } from "../../functions/index.js";
import { localExecutor } from "../../infra/container/local-executor.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { httpSyncClient } from "../../lib/sync/http.js";
import { httpRunRecords } from "../../lib/sync/runs.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import type { UsageRecord } from "../../lib/run/metering/record.js";

const ADMIN = "admin-token-for-tests";
const tools = [...fileTools, bash];
let app: ReturnType<typeof createApp>;
let key: string;
let root: string;
let executor: ReturnType<typeof localExecutor>;
const usage: UsageRecord[] = [];

const post = async (path: string, body: unknown) => {
  const res = await app.request(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-bash-audit-"));
  chmodSync(root, 0o711);
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
  const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal", onUsage: (u: UsageRecord) => void usage.push(u) } as AppDeps;
  app = createApp(deps, tools);
  const admin = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  key = (await admin("/v1/admin/tenants/acme/keys", { scopes: ["read", "write", "execute", "manage"] })).key;
  expect((await post("/v1/workspaces", { id: "main" })).status).toBe(201);
});
afterAll(async () => {
  await executor.handler.close();
  rmSync(root, { recursive: true, force: true });
});

describe("the audit entry of a bash run", () => {
  it("by the tool route and the compat route: the command's size, not its text; the files written back; the call_id", async () => {
    const SECRET = "TOKEN-3b7f9e1c";
    const command = `echo ${SECRET} > out.txt && echo again > two.txt`;
    const r = await post("/v1/workspaces/main/tools/bash", { command });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const c = await post("/v1/workspaces/main/compat/anthropic/bash", { command: `rm two.txt # ${SECRET}` });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    const res = await app.request("/v1/workspaces/main/audit", { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain(SECRET);
    const entries = (JSON.parse(text) as { entries: any[] }).entries.filter((e) => e.tool === "bash");
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({ door: "http", session: "s1", args: { command_bytes: command.length }, outcome: { ok: true, status: 200 }, call_id: r.body.call_id });
    expect([...entries[0].files].sort()).toEqual(["out.txt", "two.txt"]);
    expect(entries[1]).toMatchObject({ door: "compat-anthropic", files: ["two.txt"], outcome: { ok: true } });
    expect(entries[1].args.command_bytes).toBeGreaterThan(0);
  });
});

describe("what a bash run's entries never name", () => {
  it("a background task's id and a cut output's file name (bash_output, kill_shell): another key reading the log could read that output with them", async () => {
    const cut = await post("/v1/workspaces/main/tools/bash", { command: "seq 1 20000" });
    expect(cut.status, JSON.stringify(cut.body)).toBe(200);
    const outputFile = cut.body.data.output_file as string;
    expect(outputFile).toMatch(/\.log$/);
    const bg = await post("/v1/workspaces/main/tools/bash", { command: "echo BG-OUTPUT; sleep 30", run_in_background: true });
    expect(bg.status, JSON.stringify(bg.body)).toBe(200);
    const taskId = bg.body.data.task_id as string;
    expect((await post("/v1/workspaces/main/tools/bash_output", { output_file: outputFile, offset: 10, limit: 3 })).status).toBe(200);
    expect((await post("/v1/workspaces/main/tools/bash_output", { task_id: taskId })).status).toBe(200);
    expect((await post("/v1/workspaces/main/tools/kill_shell", { task_id: taskId })).status).toBe(200);
    const res = await app.request("/v1/workspaces/main/audit?limit=200", { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain(taskId);
    expect(text).not.toContain(outputFile);
    const entries = (JSON.parse(text) as { entries: any[] }).entries;
    expect(entries.find((e) => e.tool === "kill_shell")?.args).toEqual({ task_id_bytes: taskId.length });
    expect(entries.find((e) => e.tool === "bash_output" && e.args.offset === 10)?.args).toEqual({ output_file_bytes: outputFile.length, offset: 10, limit: 3 });
  });
});

describe("the usage of a bash run", () => {
  it("bytes_read and bytes_written are the workspace bytes its sandbox fetched and wrote back (they were 0 whatever it wrote)", async () => {
    expect((await post("/v1/workspaces/main/tools/write", { file_path: "big.txt", content: "b".repeat(5000) })).status).toBe(200);
    usage.length = 0;
    const r = await post("/v1/workspaces/main/tools/bash", { command: "cat big.txt > copy.txt && head -c 3000 /dev/zero > zeros.bin" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const rec = usage.find((u) => u.tool === "bash")!;
    // Fetched: big.txt at least (written since the slot last synced); written back: copy.txt and zeros.bin.
    expect(rec.bytes_read).toBeGreaterThanOrEqual(5000);
    expect(rec.bytes_written).toBeGreaterThanOrEqual(8000);
    expect(r.body.usage).toMatchObject({ bytes_read: rec.bytes_read, bytes_written: rec.bytes_written });
    // A command that changes nothing on a warm slot moves no bytes.
    usage.length = 0;
    expect((await post("/v1/workspaces/main/tools/bash", { command: "true" })).status).toBe(200);
    expect(usage.find((u) => u.tool === "bash")).toMatchObject({ bytes_read: 0, bytes_written: 0 });
  });
});
