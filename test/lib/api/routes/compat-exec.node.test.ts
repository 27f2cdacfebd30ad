/**
 * The command tools of the compat routes in the real bubblewrap sandbox (local executor, the
 * runner reaching the workspace through the app's /v1/sync): Anthropic's bash tool and OpenAI's
 * shell tool (two commands, a failing one, a timeout, max_output_length).
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tools } from "../../../../functions/index.js";
import { localExecutor } from "../../../../infra/container/local-executor.js";
import { createApp } from "../../../../lib/api/app.js";
import type { AppDeps } from "../../../../lib/api/deps.js";
import { httpSyncClient } from "../../../../lib/sync/http.js";
import { httpRunRecords } from "../../../../lib/sync/runs.js";
import { memoryDriver } from "../../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../../lib/storage/kv-over-storage.js";
import { compat, textOf } from "./compat-helpers.js";
import { checkOutputs } from "../../../support/output-check.js";

const ADMIN = "admin-token-for-tests";

let app: ReturnType<typeof createApp>;
let executor: ReturnType<typeof localExecutor>;
let root: string;
let key: string;
const t = { ws: "main", req: async (path: string, init: RequestInit = {}) => app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } }) };

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-compat-"));
  chmodSync(root, 0o711);
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  executor = localExecutor({ root, syncClient: (req) => httpSyncClient({ ...req.sync, fetch: viaApp }), runRecords: (req) => httpRunRecords({ ...req.sync, fetch: viaApp }) });
  const deps = { storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal" } as AppDeps;
  app = checkOutputs(createApp(deps, tools), tools);
  const admin = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
  expect((await t.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) })).status).toBe(201);
});

afterAll(async () => {
  await executor.handler.close();
  rmSync(root, { recursive: true, force: true });
});

describe("Anthropic's bash tool", () => {
  it("runs the command in the workspace; its files are written back and the text editor sees them", async () => {
    const r = await compat(t, "anthropic", "bash", { command: "mkdir -p src && printf 'hello\\n' > src/a.txt && cat src/a.txt && echo oops >&2" }, { headers: { "x-tool-use-id": "toolu_b" } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ type: "tool_result", tool_use_id: "toolu_b", is_error: false });
    expect(textOf(r)).toContain("hello");
    expect(textOf(r)).toContain("oops");
    const view = await compat(t, "anthropic", "str_replace_based_edit_tool", { command: "view", path: "/src/a.txt" });
    expect(textOf(view)).toContain("     1\thello");
  });

  it("a non-zero exit is output, not an error; a timeout-free restart is a no-op", async () => {
    const r = await compat(t, "anthropic", "bash", { command: "echo before; exit 3" });
    expect(r.body.is_error).toBe(false);
    expect(textOf(r)).toContain("before");
    expect(textOf(r)).toMatch(/exit code[: ]+3/i);
    expect(textOf(await compat(t, "anthropic", "bash", { restart: true }))).toBe("tool has been restarted.");
  });
});

describe("Anthropic's bash tool: a persistent shell per X-Session-Id", () => {
  const bash = (body: unknown, session: string) => compat(t, "anthropic", "bash", body, { session });

  it("cwd, exported variables and functions carry over to the session's next call; another session sees none of them; restart resets them", async () => {
    const first = await bash({ command: "mkdir -p deep/er && cd deep/er && export GREETING='hi there' && greet() { echo \"$GREETING from $(basename \"$PWD\")\"; } && NOT_EXPORTED=1" }, "shell-a");
    expect(first.body.is_error).toBe(false);
    const next = textOf(await bash({ command: "pwd; greet; echo \"[$NOT_EXPORTED]\"" }, "shell-a"));
    expect(next).toContain("/workspace/deep/er\n");
    expect(next).toContain("hi there from er");
    expect(next).toContain("[]"); // only exported variables are kept
    const other = textOf(await bash({ command: "pwd; echo \"[$GREETING]\"; type greet 2>&1 || true" }, "shell-b"));
    expect(other).toContain("/workspace\n");
    expect(other).toContain("[]");
    expect(other).toMatch(/greet: not found/);
    expect(textOf(await bash({ restart: true }, "shell-a"))).toBe("tool has been restarted.");
    const after = textOf(await bash({ command: "pwd; echo \"[$GREETING]\"; type greet 2>&1 || true" }, "shell-a"));
    expect(after).toContain("/workspace\n");
    expect(after).toContain("[]");
    expect(after).toMatch(/greet: not found/);
  });

  it("a removed directory falls back to the root with a note; the runner's variables are never replayed", async () => {
    await bash({ command: "mkdir -p gone && cd gone && export HOME=/nowhere TOOLSHED_X=1 MINE=kept" }, "shell-c");
    await t.req("/v1/workspaces/main/tools/bash", { method: "POST", headers: { "content-type": "application/json", "x-session-id": "other" }, body: JSON.stringify({ command: "rmdir gone" }) }).then(async (res) => expect(res.status).toBe(200));
    const r = textOf(await bash({ command: "pwd; echo \"$HOME|${TOOLSHED_X-unset}|$MINE\"" }, "shell-c"));
    expect(r).toContain("[toolshed: the working directory /workspace/gone of this session's previous command no longer exists; this command runs in the workspace root]\n"); // the path pwd showed
    expect(r).toContain("/workspace\n");
    expect(r).toContain("/tmp|unset|kept");
  });

  it("state past 64 KiB keeps only the cwd, with a note; a state file the command turned into a link to a host file is not read", async () => {
    const big = textOf(await bash({ command: "mkdir -p bigdir && cd bigdir && export SMALL=1 && export BIG=$(head -c 70000 /dev/zero | tr '\\0' x)" }, "shell-e"));
    expect(big).toMatch(/take more than 64 KiB; they are NOT kept/);
    expect(textOf(await bash({ command: "pwd; echo \"[${SMALL-}]\"" }, "shell-e"))).toBe("/workspace/bigdir\n[]\n");
    // The scratch directory is the command's to write; the runner never follows a link out of it.
    const r = textOf(await bash({ command: "trap - EXIT; for f in cwd root env base functions; do ln -sf /etc/passwd /run/toolshed-shell/$f; done; echo linked" }, "shell-e"));
    expect(r).toBe("linked\n");
    const next = textOf(await bash({ command: "pwd" }, "shell-e"));
    expect(next).not.toContain("root:");
    expect(next).toBe("/workspace/bigdir\n"); // nothing saved: the session's state stays as it was
  });

  it("exit and set -e still save the state; the exit code is the command's", async () => {
    const r = textOf(await bash({ command: "mkdir -p ex && cd ex && export E=1 && exit 5" }, "shell-d"));
    expect(r).toMatch(/exit code[: ]+5/i);
    expect(textOf(await bash({ command: "pwd; echo \"E=$E\"" }, "shell-d"))).toMatch(/\/workspace\/ex\n[^]*E=1/);
  });
});

describe("OpenAI's shell tool", () => {
  it("each command starts in the workspace root: a cd does not carry over, as OpenAI's shell runs them", async () => {
    const r = await compat(t, "openai", "shell", { type: "shell_call", call_id: "call_cd", action: { commands: ["mkdir -p oa && cd oa && pwd", "pwd"], timeout_ms: 20_000, max_output_length: null } }, { session: "oa" });
    expect(r.body.output.map((o: { stdout: string }) => o.stdout)).toEqual(["/workspace/oa\n", "/workspace\n"]);
    const next = await compat(t, "openai", "shell", { type: "shell_call", call_id: "call_cd2", action: { commands: ["pwd"], timeout_ms: 20_000, max_output_length: null } }, { session: "oa" });
    expect(next.body.output[0].stdout).toBe("/workspace\n");
  });

  it("two commands: one output entry each, with stdout, stderr and the exit code", async () => {
    const r = await compat(t, "openai", "shell", { type: "shell_call", call_id: "call_sh", action: { commands: ["echo one && echo two > two.txt", "cat two.txt; echo bad >&2; exit 4"], timeout_ms: 20_000, max_output_length: null } });
    expect(r.status).toBe(200);
    expect(r.code).toBeNull();
    expect(r.body).toEqual({
      type: "shell_call_output",
      call_id: "call_sh",
      max_output_length: null,
      output: [
        { stdout: "one\n", stderr: "", outcome: { type: "exit", exit_code: 0 } },
        { stdout: "two\n", stderr: "bad\n", outcome: { type: "exit", exit_code: 4 } },
      ],
    });
  });

  it("a command past timeout_ms answers outcome timeout; the next command still runs", async () => {
    const started = Date.now();
    const r = await compat(t, "openai", "shell", { commands: ["echo started; sleep 30", "echo after"], timeout_ms: 1500 }, { headers: { "x-call-id": "call_t" } });
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(r.code).toBe("TIMEOUT");
    expect(r.body.call_id).toBe("call_t");
    expect(r.body.output[0].outcome).toEqual({ type: "timeout" });
    expect(r.body.output[0].stdout).toContain("started");
    expect(r.body.output[1]).toEqual({ stdout: "after\n", stderr: "", outcome: { type: "exit", exit_code: 0 } });
  });

  it("max_output_length keeps the head and tail of each stream", async () => {
    const r = await compat(t, "openai", "shell", { commands: ["seq 1 2000"], max_output_length: 200 });
    const out = r.body.output[0].stdout as string;
    expect(out.length).toBeLessThanOrEqual(200);
    expect(out.startsWith("1\n2\n")).toBe(true);
    expect(out.endsWith("1999\n2000\n")).toBe(true);
    expect(out).toContain("characters cut");
    expect(r.body.max_output_length).toBe(200);
  });

  it("a refused command is exit 126 with the guard's reason in stderr", async () => {
    const r = await compat(t, "openai", "shell", { commands: ["rm -rf /"] });
    expect(r.code).toBe("BLOCKED");
    expect(r.body.output[0].outcome).toEqual({ type: "exit", exit_code: 126 });
    expect(r.body.output[0].stderr).toContain("toolshed: BLOCKED");
  });
});
