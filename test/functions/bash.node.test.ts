/**
 * bash, run_code, bash_output, kill_shell through the real app and the real sandbox, with
 * both executors: local (handler in process) and lambda (InvokeCommand → local Invoke
 * stand-in → handler). The runner reaches the workspace only through the app's /v1/sync.
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../functions/bash.js";
import bash_output from "../../functions/bash_output.js";
import { tools as fileTools } from "../../functions/index.js";
import kill_shell from "../../functions/kill_shell.js";
import run_code from "../../functions/run_code.js";
import { localExecutor } from "../../infra/container/local-executor.js";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../infra/container/local-server.js";
import { RUNNER_SECRET } from "../infra/container/helpers.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { lambdaExecutor } from "../../lib/exec/lambda.js";
import { httpSyncClient } from "../../lib/sync/http.js";
import { httpRunRecords } from "../../lib/sync/runs.js";
import type { Executor } from "../../lib/exec/types.js";
import { searchIndexer } from "../../lib/search/indexer.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import { checkOutputs } from "../support/output-check.js";
import { IsolateCache } from "../../lib/shared/isolate-cache.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const tools = [...fileTools, bash, run_code, bash_output, kill_shell];

interface Env {
  storage: ReturnType<typeof memoryDriver>;
  kv: AppDeps["kv"];
  call: (tool: string, args: unknown, session?: string) => Promise<{ status: number; body: any }>;
  /** An admin call (the admin token). */
  admin: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;
  /** A raw request to the app. */
  request: (path: string, init: RequestInit) => Promise<Response>;
  /** A GET with the tenant's key. */
  get: (path: string) => Promise<Response>;
  /** Moves the clock of the isolate's cache of tenant settings (deps.policies) forward. */
  passTime: (ms: number) => void;
  /** Stops (true) or restarts (false) the real clock under the caches' time: only passTime moves it while stopped. */
  freezeTime: (frozen: boolean) => void;
  close: () => Promise<void>;
}

/** An app over memory storage whose /v1/sync serves the runner, with one tenant + workspace. */
async function makeEnv(kind: "local" | "lambda", extra: Partial<AppDeps> = {}): Promise<Env> {
  const root = mkdtempSync(join(tmpdir(), `toolshed-tools-${kind}-`));
  chmodSync(root, 0o711);
  const storage = memoryDriver();
  let app: ReturnType<typeof createApp>;
  let server: Server | null = null;
  let invoke: LocalInvokeServer | null = null;
  let executor: Executor;
  let syncUrl: string;
  if (kind === "local") {
    syncUrl = "http://toolshed.internal";
    const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
    executor = localExecutor({ root, syncClient: (req) => httpSyncClient({ ...req.sync, fetch: viaApp }), runRecords: (req) => httpRunRecords({ ...req.sync, fetch: viaApp }) });
  } else {
    server = createServer(async (req, res) => {
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      const r = await app.request(`http://127.0.0.1${req.url}`, { method: req.method!, headers: req.headers as Record<string, string>, ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}) } as RequestInit);
      res.writeHead(r.status, Object.fromEntries(r.headers));
      if (r.body) for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) res.write(c);
      res.end();
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    syncUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    invoke = await startLocalInvokeServer({ secret: RUNNER_SECRET, root, functionName: "runner" });
    executor = lambdaExecutor({ secret: RUNNER_SECRET, client: new LambdaClient({ endpoint: invoke.url, region: "us-east-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } }), functionName: "runner" });
  }
  let skew = 0;
  let frozenAt: number | null = null;
  const policies = new IsolateCache(5_000, 10_000, () => (frozenAt ?? Date.now()) + skew);
  const deps = { storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl, listeners: [searchIndexer()], policies, ...extra } as AppDeps;
  app = checkOutputs(createApp(deps, tools), tools);

  const adminCall = async (path: string, body: unknown) =>
    (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await adminCall("/v1/admin/tenants", { id: "acme" });
  const { key } = await adminCall("/v1/admin/tenants/acme/keys", {});
  const ws = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) });
  expect(ws.status).toBe(201);
  const call = async (tool: string, args: unknown, session = "s1") => {
    const res = await app.request(`/v1/workspaces/main/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(args) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (await res.json()) as any };
  };
  return {
    storage,
    kv: deps.kv,
    call,
    admin,
    request: (path, init) => Promise.resolve(app.request(path, init)),
    get: (path) => Promise.resolve(app.request(path, { headers: { authorization: `Bearer ${key}` } })),
    passTime: (ms) => void (skew += ms),
    freezeTime: (frozen) => void (frozenAt = frozen ? Date.now() : null),
    close: async () => {
      await invoke?.close();
      server?.close();
      if (kind === "local") await (executor as ReturnType<typeof localExecutor>).handler.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

const ok = (r: { status: number; body: any }) => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
const err = (r: { status: number; body: any }, code: string) => {
  expect(r.body.ok, JSON.stringify(r.body)).toBe(false);
  expect(r.body.error.code).toBe(code);
  return r.body.error;
};

describe.each(["local", "lambda"] as const)("bash tools (%s executor)", (kind) => {
  let env: Env;
  beforeAll(async () => {
    env = await makeEnv(kind);
  });
  afterAll(() => env.close());

  it("an executable script stays executable after the edit tool changes it", async () => {
    ok(await env.call("bash", { command: "printf '#!/bin/sh\\necho one\\n' > s.sh && chmod +x s.sh && ./s.sh" }));
    ok(await env.call("read", { file_path: "s.sh" }));
    ok(await env.call("edit", { file_path: "s.sh", old_string: "one", new_string: "two" }));
    const r = ok(await env.call("bash", { command: "./s.sh && stat -c %a s.sh" }));
    expect(r.output).toBe("two\n755\n");
  });

  it("a command edits, creates and deletes; read, ls and grep see it right after", async () => {
    ok(await env.call("write", { file_path: "src/a.txt", content: "alpha\n" }));
    ok(await env.call("write", { file_path: "old.txt", content: "old\n" }));
    expect(ok(await env.call("grep", { pattern: "old" })).data.files).toEqual(["old.txt"]);
    const r = ok(await env.call("bash", { command: "sed -i s/alpha/ALPHA/ src/a.txt && echo new > src/b.txt && rm old.txt && echo done" }));
    expect(r.output).toBe("done\n");
    expect(r.data).toMatchObject({ exit_code: 0, files_changed: ["src/a.txt", "src/b.txt"], files_deleted: ["old.txt"], conflicts: [] });
    expect(ok(await env.call("read", { file_path: "src/a.txt" })).output).toContain("ALPHA");
    expect(ok(await env.call("read", { file_path: "src/b.txt" })).output).toContain("new");
    err(await env.call("read", { file_path: "old.txt" }), "NOT_FOUND");
    const names = ok(await env.call("ls", { path: "src" })).data.entries.map((e: any) => e.name);
    expect(names).toEqual(["a.txt", "b.txt"]);
    // The search index saw the write-back: the new content is found, the deleted file is not.
    expect(ok(await env.call("grep", { pattern: "ALPHA|new|old" })).data.files).toEqual(expect.arrayContaining(["src/a.txt", "src/b.txt"]));
    expect(ok(await env.call("grep", { pattern: "ALPHA|new|old" })).data.files).not.toContain("old.txt");
    expect(ok(await env.call("grep", { pattern: "alpha" })).data.files).toEqual([]);
  });

  it("an empty directory a command makes stays: the next call, ls, glob, find and delete see it", async () => {
    const r = ok(await env.call("bash", { command: "mkdir -p empty/inner && mkdir gone && rmdir gone" }));
    expect(r.data.dirs_created).toEqual(["empty/inner"]);
    expect(ok(await env.call("bash", { command: "test -d empty/inner && echo kept" })).output).toBe("kept\n");
    expect(ok(await env.call("ls", { path: "empty" })).data.entries).toEqual([{ name: "inner", path: "empty/inner", type: "directory" }]);
    expect(ok(await env.call("glob", { pattern: "empty/**/" })).data.matches).toEqual(["empty/", "empty/inner/"].map((path) => ({ path, type: "directory" }))); // as bash's globstar
    expect(ok(await env.call("find", { type: "dir", pattern: "inner" })).data.matches).toEqual([{ path: "empty/inner/", type: "dir" }]);
    // A directory the delete tool removes is gone in the next call (its parent was implied by it: gone too).
    ok(await env.call("delete", { path: "empty/inner" }));
    // An empty directory a command makes, or removes, is named in its output (the model reads no data field).
    expect(ok(await env.call("bash", { command: "test -e empty || echo removed; mkdir solo" })).output).toBe("removed\n\n[empty directories kept: solo/]");
    // rmdir in a command removes a directory's marker.
    ok(await env.call("ls", { path: "solo" }));
    const rm = ok(await env.call("bash", { command: "rmdir solo" }));
    expect(rm.data.dirs_deleted).toEqual(["solo"]);
    expect(rm.output).toBe("(no output)\n[directories removed: solo/]");
    err(await env.call("ls", { path: "solo" }), "NOT_FOUND");
  });

  it("the working directory persists between the commands of a session (not variables); another session, working_dir and restart start elsewhere", async () => {
    expect(bash.description).toMatch(/working directory persists between the commands of a session/);
    ok(await env.call("bash", { command: "mkdir -p sub/deeper && cd sub && export NOT_KEPT=1" }, "cwd-a"));
    expect(ok(await env.call("bash", { command: "pwd; echo \"[$NOT_KEPT]\"" }, "cwd-a")).output).toBe("/workspace/sub\n[]\n");
    expect(ok(await env.call("bash", { command: "pwd" }, "cwd-b")).output).toBe("/workspace\n");
    // working_dir wins for its command, and where that command ends is kept.
    expect(ok(await env.call("bash", { command: "pwd", working_dir: "sub/deeper" }, "cwd-a")).output).toBe("/workspace/sub/deeper\n");
    expect(ok(await env.call("bash", { command: "pwd" }, "cwd-a")).output).toBe("/workspace/sub/deeper\n");
    expect(ok(await env.call("bash", { command: "pwd", restart: true }, "cwd-a")).output).toBe("/workspace\n");
    expect(ok(await env.call("bash", { command: "pwd" }, "cwd-a")).output).toBe("/workspace\n");
    // restart alone only forgets the shell; no command and no restart is a clear error.
    ok(await env.call("bash", { command: "cd sub" }, "cwd-a"));
    expect(ok(await env.call("bash", { restart: true }, "cwd-a")).output).toMatch(/^Shell restarted/);
    expect(ok(await env.call("bash", { command: "pwd" }, "cwd-a")).output).toBe("/workspace\n");
    expect(err(await env.call("bash", {}, "cwd-a"), "INVALID_ARGUMENT").message).toMatch(/Missing required argument command/);
  });

  it("after a command changed a file, an edit needs a fresh read", async () => {
    ok(await env.call("read", { file_path: "src/a.txt" }));
    ok(await env.call("bash", { command: "echo more >> src/a.txt" }));
    err(await env.call("edit", { file_path: "src/a.txt", old_string: "ALPHA", new_string: "beta" }), "FILE_MODIFIED");
    ok(await env.call("read", { file_path: "src/a.txt" }));
    ok(await env.call("edit", { file_path: "src/a.txt", old_string: "ALPHA", new_string: "beta" }));
  });

  it("exit code appended when non-zero; long output cut in the middle with the full output saved", async () => {
    const failed = ok(await env.call("bash", { command: "echo oops >&2; exit 4" }));
    expect(failed.output).toBe("oops\n[exit code 4]");
    expect(failed.data.exit_code).toBe(4);
    const long = ok(await env.call("bash", { command: "seq 1 100000" }));
    expect(long.output.length).toBeLessThan(31_000);
    expect(long.data.truncated).toBe(true);
    expect(long.output).toContain(long.data.output_file);
    const full = ok(await env.call("bash_output", { output_file: long.data.output_file, offset: 99_999, limit: 5 }));
    expect(full.output).toContain("100000");
  });

  it("seq 1 200000 (1.26 MB): one note with the real totals, on line boundaries, saying where the full output is; run_code alike", async () => {
    const note = (file: string) =>
      `3221\n[... output cut: 1,258,903 of 1,288,895 bytes omitted, lines 3,222–197,858 of 200,000. The full output is saved as ${file} (not a workspace file): read it with bash_output (output_file: "${file}", offset: 3222, limit: 2000). ...]\n197859\n`;
    const cut = { total_bytes: 1_288_895, total_lines: 200_000, omitted_bytes: 1_258_903, omitted_from_line: 3222, omitted_to_line: 197_858, within_line: false };
    const r = ok(await env.call("bash", { command: "seq 1 200000" }));
    expect(r.output.match(/output cut/g)).toHaveLength(1);
    expect(r.output).toContain(note(r.data.output_file));
    expect(r.output.startsWith("1\n2\n3\n")).toBe(true);
    expect(r.output.endsWith("199999\n200000\n")).toBe(true);
    expect(r.data.output_cut).toEqual(cut);
    // Where the note says to read, the log has the first omitted line.
    expect(ok(await env.call("bash_output", { output_file: r.data.output_file, offset: 3222, limit: 1 })).output).toMatch(/^\s+3222\t3222\n\n\[Showing from line 3222\. Call bash_output with output_file: ".+", offset: 3223 to continue\.\]$/);
    // The full outputs are service logs, not the customer's files: no listing, search or export holds them.
    expect(JSON.stringify(ok(await env.call("ls", { path: "" })).data)).not.toContain(".toolshed");
    expect(ok(await env.call("grep", { pattern: "^197859$" })).data.files).toEqual([]);
    ok(await env.call("write", { file_path: "kept.txt", content: "mine\n" }));
    const ex = await env.get("/v1/workspaces/main/export");
    expect(ex.status).toBe(200);
    const tar = gunzipSync(Buffer.from(await ex.arrayBuffer())).toString("latin1");
    expect(tar).toContain("kept.txt");
    expect(tar).not.toContain(".toolshed");
    expect(tar).not.toContain(r.data.output_file);
    const py = ok(await env.call("run_code", { language: "python", code: "for i in range(1, 200001):\n    print(i)" }));
    expect(py.output.match(/output cut/g)).toHaveLength(1);
    expect(py.output).toContain(note(py.data.output_file));
    expect(py.data.output_cut).toEqual(cut);
  });

  it("run_code runs python and node", async () => {
    const py = ok(await env.call("run_code", { language: "python", code: "import sys\nprint(sum(range(10)), sys.argv[1:])", args: ["a b", "it's"] }));
    expect(py.data).toMatchObject({ stdout: "45 ['a b', \"it's\"]\n", exit_code: 0 });
    const js = ok(await env.call("run_code", { language: "node", code: "console.log(process.env.GREETING, [1,2,3].map(x => x * 2).join())", env: { GREETING: "hi" } }));
    expect(js.data.stdout).toBe("hi 2,4,6\n");
  });

  it("timeout gives TIMEOUT with the output so far, in the message the model reads too, and writes nothing back", async () => {
    const e = err(await env.call("bash", { command: "echo started; echo x > timed.txt; sleep 30", timeout: 1 }), "TIMEOUT");
    expect(e.details.output).toContain("started");
    // MCP and the provider doors show the model the message alone (details stay in _meta): the output must be in it.
    expect(e.message).toMatch(/Its output so far:\nstarted\n$/);
    expect(e.details.discarded).toEqual(["timed.txt"]);
    expect(e.message).toContain("were not written back. Use a larger timeout (max 600) or run_in_background: true. Not in the workspace: timed.txt. Its output so far:");
    err(await env.call("read", { file_path: "timed.txt" }), "NOT_FOUND");
  });

  it("guard rails: BLOCKED; caution commands held (confirmed: true or not, by default); a self-confirmed run, where the tenant allows it, supersedes the held call, whose approval then runs nothing", async () => {
    err(await env.call("bash", { command: "rm -rf /" }), "BLOCKED");
    err(await env.call("bash", { command: "rm -rf /", confirmed: true }), "BLOCKED");
    ok(await env.call("bash", { command: "mkdir -p junk && echo x > junk/f" }));
    const held = err(await env.call("bash", { command: "rm -rf junk" }), "NEEDS_APPROVAL");
    expect(held.message).not.toMatch(/confirmed/i);
    // Self-confirmation is off by default: the same call with confirmed: true is the same held call.
    expect(err(await env.call("bash", { command: "rm -rf junk", confirmed: true }), "NEEDS_APPROVAL").details.pending_id).toBe(held.details.pending_id);
    ok(await env.call("bash", { command: "test -f junk/f && echo still-there" })); // nothing ran
    expect((await env.admin("PUT", "/v1/admin/tenants/acme/policy", { self_confirm: true })).status).toBe(200);
    try {
      const r = ok(await env.call("bash", { command: "rm -rf junk", confirmed: true }));
      expect(r.data.files_deleted).toEqual(["junk/f"]);
      ok(await env.call("bash", { command: "mkdir -p junk && echo again > junk/f" })); // the user puts it back
      const approver = (await env.admin("POST", "/v1/admin/tenants/acme/keys", { name: "app", scopes: ["read", "approve"] })).body.key as string;
      const a = await env.request(`/v1/workspaces/main/pending/${held.details.pending_id}`, { method: "POST", headers: { authorization: `Bearer ${approver}`, "content-type": "application/json" }, body: JSON.stringify({ approved: true }) });
      const body = (await a.json()) as any;
      expect(a.status, JSON.stringify(body)).toBe(409);
      expect(body.error.details.status).toBe("superseded");
      expect(ok(await env.call("read", { file_path: "junk/f" })).output).toContain("again"); // the approval ran nothing
    } finally {
      await env.admin("PUT", "/v1/admin/tenants/acme/policy", {});
    }
  });

  it("a symlink to /etc/passwd made by a command is kept as a link, not uploaded and not readable through read", async () => {
    const r = ok(await env.call("bash", { command: "ln -s /etc/passwd pw; echo made" }));
    expect(r.data.skipped ?? []).toEqual([]);
    expect(ok(await env.call("bash", { command: "readlink pw" })).output).toContain("/etc/passwd");
    err(await env.call("read", { file_path: "pw" }), "SYMLINK_REFUSED"); // it leads outside the workspace: never followed
  });

  it("a FIFO and a file whose name is not UTF-8 are not in the workspace, and the output the model reads says so", async () => {
    const r = ok(await env.call("bash", { command: "mkdir -p odd && mkfifo odd/pipe && touch odd/$(printf 'bad\\377') && echo made" }));
    expect(r.data.skipped).toEqual(expect.arrayContaining([expect.objectContaining({ path: "odd/pipe", reason: "special_file" }), expect.objectContaining({ reason: "invalid_name" })]));
    expect(r.output).toContain("[not synced: ");
    expect(r.output).toMatch(/1 socket, FIFO or device: the workspace keeps only files, directories and symlinks, so these are not in it: odd\/pipe/);
    expect(r.output).toContain("1 name the workspace cannot hold (not valid UTF-8, a control character or a backslash, not in Unicode NFC, a name over 255 bytes or a path over 768 bytes: each says which): not in the workspace; rename them: odd/bad\\xff (the name is not valid UTF-8)");
    err(await env.call("read", { file_path: "odd/pipe" }), "NOT_FOUND");
    ok(await env.call("bash", { command: "rm odd/* && rmdir odd" }));
  });

  it("a name in NFD beside its NFC twin (two files on disk, one name in the workspace): the output names the NFD one and why", async () => {
    const r = ok(await env.call("bash", { command: "mkdir -p nf && printf nfc > nf/$(printf 'caf\\303\\251') && printf nfd > nf/$(printf 'cafe\\314\\201') && echo made" }));
    expect(r.output).toContain("rename them: nf/cafe\u0301 (not in Unicode NFC (the workspace holds names composed, as nf/caf\u00e9): rename it to that spelling)]");
    expect(ok(await env.call("read", { file_path: "nf/caf\u00e9" })).output).toContain("nfc");
    ok(await env.call("bash", { command: "rm nf/* && rmdir nf" }));
  });

  it("a link a command makes is seen by the tools: ls shows it, read and edit act on its target, the next command sees the edit", async () => {
    ok(await env.call("bash", { command: "mkdir -p lnk && echo one > lnk/real.txt && ln -s real.txt lnk/alias && echo made" }));
    expect(ok(await env.call("ls", { path: "lnk" })).data.entries).toContainEqual({ name: "alias", path: "lnk/alias", type: "symlink", target: "real.txt" });
    expect(ok(await env.call("read", { file_path: "lnk/alias" })).data.file_path).toBe("lnk/real.txt");
    expect(ok(await env.call("edit", { file_path: "lnk/alias", old_string: "one", new_string: "two" })).data.file_path).toBe("lnk/real.txt");
    expect(ok(await env.call("bash", { command: "cat lnk/alias; readlink lnk/alias" })).data.stdout).toBe("two\nreal.txt\n");
  });

  it("a tool write racing a running command: neither change is lost", async () => {
    ok(await env.call("write", { file_path: "race.txt", content: "v0\n" }));
    const running = env.call("bash", { command: "sleep 2; echo from-command > race.txt" });
    await new Promise((r) => setTimeout(r, 800));
    ok(await env.call("read", { file_path: "race.txt" }));
    ok(await env.call("write", { file_path: "race.txt", content: "from-tool\n" }));
    const r = ok(await running);
    expect(r.data.conflicts).toHaveLength(1);
    expect(r.data.conflicts[0]).toMatchObject({ path: "race.txt", change: "modified" });
    expect(r.output).toContain("[conflict: race.txt");
    expect(ok(await env.call("read", { file_path: "race.txt" })).output).toContain("from-tool");
    expect(ok(await env.call("read", { file_path: r.data.conflicts[0].saved_as })).output).toContain("from-command");
  });

  it("background: start, poll with bash_output until completed; kill_shell a long one", async () => {
    const started = ok(await env.call("bash", { command: "sleep 2; echo done", run_in_background: true }));
    const id = started.data.task_id;
    expect(ok(await env.call("bash_output", { task_id: id })).data.status).toBe("running");
    const done = ok(await env.call("bash_output", { task_id: id, wait: true, timeout: 20 }));
    expect(done.data).toMatchObject({ status: "completed", exit_code: 0 });
    expect(done.output).toContain("done\n");
    const long = ok(await env.call("bash", { command: "sleep 1000", run_in_background: true }));
    expect(ok(await env.call("kill_shell", { task_id: long.data.task_id })).data.status).toBe("killed");
    const again = ok(await env.call("kill_shell", { task_id: long.data.task_id }));
    expect(again.data.status).toBe("already_completed");
    expect(again.output).toContain("an earlier kill_shell stopped it");
    expect(ok(await env.call("bash_output", { task_id: long.data.task_id })).data.status).toBe("killed");
    err(await env.call("kill_shell", { task_id: "bg_unknown" }), "NOT_FOUND");
  });

  it("run records: a foreground run's is gone once answered, a background task's stays for bash_output", async () => {
    const runs = async () => (await env.storage.list({ prefix: "t/acme/w/main/x/runs/" })).objects.map((o) => o.key);
    const before = await runs();
    ok(await env.call("bash", { command: "echo fg" }));
    ok(await env.call("run_code", { language: "python", code: "print(1)" }));
    expect(await runs()).toEqual(before);
    const bg = ok(await env.call("bash", { command: "echo bg", run_in_background: true })).data.task_id;
    expect(ok(await env.call("bash_output", { task_id: bg, wait: true, timeout: 20 })).data.status).toBe("completed");
    const left = (await runs()).filter((k) => !before.includes(k));
    expect(left).toEqual(expect.arrayContaining([`t/acme/w/main/x/runs/${bg}/result.json`, `t/acme/w/main/x/runs/${bg}/task.json`]));
    expect(left.every((k) => k.startsWith(`t/acme/w/main/x/runs/${bg}/`) && !k.includes("/out/"))).toBe(true);
    expect(ok(await env.call("bash_output", { task_id: bg })).data.status).toBe("completed");
    // Eight tasks that still run (their markers, fresh): a ninth is refused before it starts.
    const markers = Array.from({ length: 8 }, (_, i) => `t/acme/w/main/x/runs/r${String(i).padStart(15, "f")}/task.json`);
    for (const k of markers) await env.storage.put(k, "{}");
    const refused = err(await env.call("bash", { command: "echo never > never.txt", run_in_background: true }), "RATE_LIMITED");
    expect(refused.message).toContain("at most 8");
    await env.storage.delete(markers);
    err(await env.call("read", { file_path: "never.txt" }), "NOT_FOUND");
  });

  it("git commits as Toolshed Agent by default, as the tenant's identity once set (KV git/<tenant>)", async () => {
    const cmd = "g=$(mktemp -d ./g.XXXXXX) && cd $g && git init -q && echo x > f && git add -A && git commit -qm x && git log --format='%an <%ae>'";
    env.freezeTime(true); // a slow machine must not let the 5 s cache lapse between two calls
    try {
      expect(ok(await env.call("bash", { command: cmd })).output).toBe("Toolshed Agent <agent@toolshed.invalid>\n");
      // The operator sets it in KV; an isolate reads it again once its cache of tenant settings (5 s) let it go.
      await env.kv.put("git/acme", JSON.stringify({ name: "Acme Bot", email: "bot@acme.example" }));
      expect(ok(await env.call("bash", { command: cmd })).output).toBe("Toolshed Agent <agent@toolshed.invalid>\n");
      env.passTime(5_001);
      expect(ok(await env.call("bash", { command: cmd })).output).toBe("Acme Bot <bot@acme.example>\n");
      await env.kv.put("git/acme", "{broken");
      env.passTime(5_001);
      expect(ok(await env.call("bash", { command: cmd })).output).toBe("Toolshed Agent <agent@toolshed.invalid>\n");
      await env.kv.delete("git/acme");
      env.passTime(5_001);
    } finally {
      env.freezeTime(false);
    }
  });

  it("no network without the network scope", async () => {
    const r = ok(await env.call("bash", { command: "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 2)\" 2>&1 | tail -1" }));
    expect(r.output).toMatch(/Network is unreachable|unreachable|Errno/);
  });
});

describe("bash tools over the disk quota (runLimits: 20 MiB)", () => {
  let env: Env;
  beforeAll(async () => {
    env = await makeEnv("local", { runLimits: { disk_mb: 20 } });
  });
  afterAll(() => env.close());

  it("bash and run_code: QUOTA_EXCEEDED with the output so far; nothing written back", async () => {
    const e = err(await env.call("bash", { command: "echo before; echo x > small.txt; head -c 30M /dev/zero > big.bin; echo after" }), "QUOTA_EXCEEDED");
    expect(e.message).toContain("20 MiB");
    expect(e.details.output).toContain("before");
    expect(e.message).toMatch(/Its output so far:\nbefore\n/);
    expect(e.details.discarded).toEqual(["big.bin", "small.txt"]);
    expect(e.message).toContain("Not in the workspace: big.bin, small.txt. Its output so far:");
    err(await env.call("read", { file_path: "small.txt" }), "NOT_FOUND");
    err(await env.call("run_code", { language: "python", code: "open('big.bin', 'wb').write(b'0' * (25 << 20))" }), "QUOTA_EXCEEDED");
    expect(ok(await env.call("ls", { path: "" })).data.entries).toEqual([]);
    // Under the quota, the same tools work.
    expect(ok(await env.call("bash", { command: "head -c 5M /dev/zero > ok.bin && echo fine" })).output).toBe("fine\n");
  });

  it("a background task over the quota is stopped: bash_output says killed, QUOTA_EXCEEDED", async () => {
    const bg = ok(await env.call("bash", { command: "for i in 1 2 3 4 5 6; do head -c 5M /dev/zero > f$i; sleep 0.3; done; echo done", run_in_background: true })).data.task_id;
    const p = ok(await env.call("bash_output", { task_id: bg, wait: true, timeout: 30 }));
    expect(p.data.status).toBe("killed");
    expect(p.data.error.code).toBe("QUOTA_EXCEEDED");
    expect(p.output).toContain("QUOTA_EXCEEDED");
    err(await env.call("read", { file_path: "f1" }), "NOT_FOUND");
  });
});

describe("bash tools over max_writeback_files (runLimits: 3 files)", () => {
  let env: Env;
  beforeAll(async () => {
    env = await makeEnv("local", { runLimits: { max_writeback_files: 3 } });
  });
  afterAll(() => env.close());

  it("bash, run_code and bash_output say which changes were not written back, and that they are not in the workspace", async () => {
    const r = ok(await env.call("bash", { command: "for i in 1 2 3 4 5; do echo $i > f$i.txt; done" }));
    expect(r.data.files_changed).toEqual(["f1.txt", "f2.txt", "f3.txt"]);
    expect(r.data.unsynced).toEqual({ count: 2, paths: ["f4.txt", "f5.txt"], reasons: ["limit"] });
    expect(r.output).toContain("[not written back: 2 changed files (f4.txt, f5.txt): more files changed than one call writes back. These changes are NOT in the workspace");
    err(await env.call("read", { file_path: "f4.txt" }), "NOT_FOUND");
    const code = ok(await env.call("run_code", { language: "python", code: "for i in range(6, 11): open(f'g{i}.txt', 'w').write('x')" }));
    expect(code.output).toContain("[not written back: 2 changed files (g8.txt, g9.txt)");
    const bg = ok(await env.call("bash", { command: "for i in 1 2 3 4 5; do echo $i > h$i.txt; done", run_in_background: true })).data.task_id;
    const p = ok(await env.call("bash_output", { task_id: bg, wait: true, timeout: 30 }));
    expect(p.output).toContain("[not written back: 2 changed files (h4.txt, h5.txt)");
    expect(p.data.result.unsynced.count).toBe(2);
  });
});

describe.each(["local", "lambda"] as const)("a sync route's refusal through the %s executor (lib/sync/refusal.ts)", (kind) => {
  let env: Env;
  beforeAll(async () => {
    env = await makeEnv(kind);
  });
  afterAll(() => env.close());

  it("the workspace deleted and made again through another app while this one knows its record: bash answers 404 NOT_FOUND with the API's message, not 500 INTERNAL", async () => {
    ok(await env.call("bash", { command: "echo one > one.txt" }));
    // Another app (another isolate) over the same storage and KV deletes the workspace and makes it again.
    const other = createApp({ storage: env.storage, kv: env.kv, adminToken: ADMIN, syncSecret: SECRET, syncUrl: "http://unused.internal" } as AppDeps, tools);
    const key = (await env.admin("POST", "/v1/admin/tenants/acme/keys", {})).body.key as string;
    const viaOther = (path: string, method: string, body?: unknown) => Promise.resolve(other.request(path, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, ...(body ? { body: JSON.stringify(body) } : {}) }));
    expect((await viaOther("/v1/workspaces/main", "DELETE")).status).toBe(200);
    expect((await viaOther("/v1/workspaces", "POST", { id: "main" })).status).toBe(201);
    const r = await env.call("bash", { command: "echo two > two.txt" });
    const e = err(r, "NOT_FOUND");
    expect(r.status).toBe(404);
    expect(e.message).toMatch(/^Workspace main no longer exists \(it was deleted, perhaps made again since this run started\); nothing (was read or written back|of the run is kept)\.$/);
    expect(e.details.workspace).toBe("main");
    expect((await (await viaOther("/v1/workspaces/main/files/", "GET")).json() as any).entries).toEqual([]);
  });
});
