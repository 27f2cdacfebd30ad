/**
 * Undo of bash/run_code write-back through the real app and the real sandbox (local executor):
 * the sync token names the call (claim u), every sync write request journals under that call's
 * id (lib/sync/journal.ts), and POST /v1/workspaces/{ws}/undo puts the run back whole.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../functions/bash.js";
import bash_output from "../../functions/bash_output.js";
import { tools as fileTools } from "../../functions/index.js";
import run_code from "../../functions/run_code.js";
import { localExecutor } from "../../infra/container/local-executor.js";
import { createApp } from "../../lib/api/app.js";
import type { AppDeps } from "../../lib/api/deps.js";
import { httpSyncClient } from "../../lib/sync/http.js";
import { httpRunRecords } from "../../lib/sync/runs.js";
import { searchIndexer } from "../../lib/search/indexer.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";
import { checkOutputs } from "../support/output-check.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const tools = [...fileTools, bash, run_code, bash_output];

type Res = { status: number; body: any };
let app: ReturnType<typeof createApp>;
let key: string;
let root: string;
let executor: ReturnType<typeof localExecutor>;
let storage: ReturnType<typeof memoryDriver>;
/** Runs once, just before the next write of a workspace's links table (x/modes.json): steers a writer into undo's window. */
let beforeModesPut: (() => Promise<unknown>) | null = null;

const req = async (path: string, init: RequestInit = {}, session = "s1"): Promise<Res> => {
  const res = await app.request(path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": session, ...(init.headers ?? {}) } });
  const t = await res.text();
  return { status: res.status, body: t ? JSON.parse(t) : null };
};
const call = (tool: string, args: unknown, session = "s1") => req(`/v1/workspaces/main/tools/${tool}`, { method: "POST", body: JSON.stringify(args) }, session);
const undo = (body: unknown, session = "s1") => req("/v1/workspaces/main/undo", { method: "POST", body: JSON.stringify(body) }, session);
const text = async (path: string): Promise<string | null> => {
  const r = await app.request(`/v1/workspaces/main/files/${path}`, { headers: { authorization: `Bearer ${key}` } });
  return r.status === 200 ? r.text() : null;
};
const ok = (r: Res) => {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-bash-undo-"));
  chmodSync(root, 0o711);
  const raw = memoryDriver();
  storage = {
    ...raw,
    put: async (k, body, opts) => {
      const hook = k.endsWith("/x/modes.json") ? beforeModesPut : null;
      if (hook) {
        beforeModesPut = null;
        await hook();
      }
      return raw.put(k, body, opts);
    },
  };
  const viaApp = ((u: string, i: RequestInit) => app.request(u, i)) as typeof fetch;
  executor = localExecutor({ root, syncClient: (r) => httpSyncClient({ ...r.sync, fetch: viaApp }), runRecords: (r) => httpRunRecords({ ...r.sync, fetch: viaApp }) });
  const deps = { storage, kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal", listeners: [searchIndexer()] } as AppDeps;
  app = checkOutputs(createApp(deps, tools), tools);
  const admin = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  key = (await admin("/v1/admin/tenants/acme/keys", {})).key;
  expect((await req("/v1/workspaces", { method: "POST", body: JSON.stringify({ id: "main" }) })).status).toBe(201);
});
afterAll(async () => {
  await executor.handler.close();
  rmSync(root, { recursive: true, force: true });
});

describe("undo of bash / run_code write-back", () => {
  it("a bash run that creates, changes and deletes files is undone whole (one call_id, search follows)", async () => {
    ok(await call("write", { file_path: "src/a.txt", content: "alpha\n" }));
    ok(await call("write", { file_path: "old.txt", content: "old zebra\n" }));
    const r = ok(await call("bash", { command: "sed -i s/alpha/ALPHA/ src/a.txt && echo new > src/b.txt && rm old.txt" }));
    expect(r.data).toMatchObject({ files_changed: ["src/a.txt", "src/b.txt"], files_deleted: ["old.txt"] });
    expect(typeof r.call_id).toBe("string");
    expect(r.data.call_id).toBe(r.call_id);
    expect(r.call_id.startsWith("s1~")).toBe(true);

    const list = ok(await req("/v1/workspaces/main/undo?session=s1&limit=5"));
    expect(list.calls[0]).toMatchObject({ call_id: r.call_id, tool: "bash", paths: ["old.txt", "src/a.txt", "src/b.txt"], undone: false });

    const u = ok(await undo({ call_id: r.call_id }));
    expect(u.restored.map((x: any) => `${x.path}:${x.action}`).sort()).toEqual(["old.txt:recreated", "src/a.txt:restored", "src/b.txt:deleted"]);
    expect(await text("src/a.txt")).toBe("alpha\n");
    expect(await text("src/b.txt")).toBe(null);
    expect(await text("old.txt")).toBe("old zebra\n");
    expect(ok(await call("grep", { pattern: "zebra" })).data.files).toEqual(["old.txt"]);
    // The next command sees the restored files.
    expect(ok(await call("bash", { command: "cat src/a.txt old.txt; ls src" })).output).toBe("alpha\nold zebra\na.txt\n");
    expect((await undo({ call_id: r.call_id })).body.error.code).toBe("CONFLICT");
  });

  it("undo is refused, nothing written, when a tool changed one of the run's files since", async () => {
    const r = ok(await call("bash", { command: "echo one > x.txt && echo two > y.txt" }));
    expect(typeof r.call_id).toBe("string");
    ok(await call("read", { file_path: "y.txt" }));
    ok(await call("write", { file_path: "y.txt", content: "by a tool\n" }));
    const u = await undo({ call_id: r.call_id });
    expect(u.status, JSON.stringify(u.body)).toBe(409);
    expect(u.body.error).toMatchObject({ code: "FILE_MODIFIED", details: { files: ["y.txt"] } });
    expect(await text("x.txt")).toBe("one\n");
    expect(await text("y.txt")).toBe("by a tool\n");
  });

  it("a background run's write-back is journaled under the starting call; bash_output's result names its call_id", async () => {
    const start = ok(await call("bash", { command: "echo bg > bg.txt", run_in_background: true }, "s3"));
    expect(start.call_id).toBeUndefined();
    const done = ok(await call("bash_output", { task_id: start.data.task_id, wait: true, timeout: 60 }, "s3"));
    expect(done.data.status).toBe("completed");
    expect(done.data.result.files_changed).toEqual(["bg.txt"]);
    const id = done.data.result.call_id;
    expect(id.startsWith("s3~")).toBe(true);
    const list = ok(await req("/v1/workspaces/main/undo?session=s3"));
    expect(list.calls.map((c: any) => [c.call_id, c.tool])).toEqual([[id, "bash"]]);
    ok(await undo({ call_id: id }, "s3"));
    expect(await text("bg.txt")).toBe(null);
  });

  it("a run that changes nothing has no call_id; run_code's write-back is undone too", async () => {
    const none = ok(await call("bash", { command: "echo hi" }));
    expect(none.call_id).toBeUndefined();
    expect(none.data.call_id).toBeUndefined();
    ok(await call("write", { file_path: "r.txt", content: "before\n" }));
    const r = ok(await call("run_code", { language: "python", code: "open('r.txt','w').write('after\\n')\nopen('made.txt','w').write('m')\n" }, "s2"));
    expect(r.data.files_changed).toEqual(["made.txt", "r.txt"]);
    expect(r.call_id.startsWith("s2~")).toBe(true);
    ok(await undo({}, "s2"));
    expect(await text("r.txt")).toBe("before\n");
    expect(await text("made.txt")).toBe(null);
  });
});

describe("undo carries symlinks (docs/symlinks.md)", () => {
  /** The links directly in `dir`, name → target, as ls shows them. */
  const links = async (dir: string): Promise<Record<string, string>> => {
    const r = ok(await call("ls", { path: dir }));
    return Object.fromEntries(r.data.entries.filter((e: any) => e.type === "symlink").map((e: any) => [e.name, e.target]));
  };
  const actions = (u: any) => u.restored.map((x: any) => `${x.path}:${x.action}`).sort();

  it("a link bash made is removed; a link it removed comes back with its target; a repoint is put back", async () => {
    ok(await call("write", { file_path: "l1/a", content: "A\n" }));
    const made = ok(await call("bash", { command: "ln -s a l1/b" }, "ln"));
    // A run that changed only a link says so, and is undoable by its call_id.
    expect(made.data).toMatchObject({ files_changed: [], files_deleted: [], links_changed: ["l1/b"] });
    expect(made.call_id.startsWith("ln~")).toBe(true);
    expect(await links("l1")).toEqual({ b: "a" });
    expect(actions(ok(await undo({ call_id: made.call_id }, "ln")))).toEqual(["l1/b:deleted"]);
    expect(await links("l1")).toEqual({});
    // The next run does not see it either.
    expect(ok(await call("bash", { command: "ls l1" })).output).toBe("a\n");

    ok(await call("bash", { command: "ln -s a l1/c && ln -s ../l1/a l1/d" }));
    expect(ok(await call("bash", { command: "rm l1/c && ln -sfn /etc/hostname l1/d" }, "rm")).data.links_changed).toEqual(["l1/c", "l1/d"]);
    expect(await links("l1")).toEqual({ d: "/etc/hostname" });
    expect(actions(ok(await undo({}, "rm")))).toEqual(["l1/c:recreated", "l1/d:restored"]);
    expect(await links("l1")).toEqual({ c: "a", d: "../l1/a" });
    expect(ok(await call("bash", { command: "readlink l1/c l1/d; cat l1/c" })).output).toBe("a\n../l1/a\nA\n");
  });

  it("run_code shows links_changed as bash does; a run that changed only a link is undoable", async () => {
    ok(await call("write", { file_path: "l5/a", content: "A\n" }));
    const r = ok(await call("run_code", { language: "python", code: "import os\nos.symlink('a', 'l5/b')\n" }, "rc"));
    expect(r.data).toMatchObject({ exit_code: 0, links_changed: ["l5/b"] });
    expect(r.data.files_changed).toBeUndefined();
    expect(r.call_id.startsWith("rc~")).toBe(true);
    expect(await links("l5")).toEqual({ b: "a" });
    expect(actions(ok(await undo({ call_id: r.call_id }, "rc")))).toEqual(["l5/b:deleted"]);
    expect(await links("l5")).toEqual({});
    // No link changed: no links_changed.
    expect(ok(await call("run_code", { language: "bash", code: "echo hi" })).data.links_changed).toBeUndefined();
  });

  it("a file bash replaced by a link comes back as the file, the link gone", async () => {
    ok(await call("write", { file_path: "l2/f", content: "file\n" }));
    ok(await call("bash", { command: "rm l2/f && ln -s elsewhere l2/f" }, "swap"));
    expect(await links("l2")).toEqual({ f: "elsewhere" });
    expect(actions(ok(await undo({}, "swap")))).toEqual(["l2/f:deleted", "l2/f:recreated"]);
    expect(await links("l2")).toEqual({});
    expect(await text("l2/f")).toBe("file\n");
  });

  it("delete of a link is undoable (the tool's call_id)", async () => {
    ok(await call("write", { file_path: "l3/target", content: "t\n" }));
    ok(await call("bash", { command: "ln -s target l3/x" }));
    const d = ok(await call("delete", { path: "l3/x" }, "del"));
    expect(typeof d.call_id).toBe("string");
    expect(await links("l3")).toEqual({});
    const list = ok(await req("/v1/workspaces/main/undo?session=del"));
    expect(list.calls[0]).toMatchObject({ call_id: d.call_id, tool: "delete", paths: ["l3/x"] });
    expect(actions(ok(await undo({ call_id: d.call_id }, "del")))).toEqual(["l3/x:recreated"]);
    expect(await links("l3")).toEqual({ x: "target" });
  });

  it("a link changed since is named, and nothing of the call is undone", async () => {
    ok(await call("write", { file_path: "l4/keep.txt", content: "old\n" }));
    ok(await call("bash", { command: "ln -s one l4/p && echo new > l4/keep.txt" }, "cf"));
    ok(await call("bash", { command: "ln -sfn two l4/p" }));
    const u = await undo({}, "cf");
    expect(u.status, JSON.stringify(u.body)).toBe(409);
    expect(u.body.error).toMatchObject({ code: "FILE_MODIFIED", details: { files: ["l4/p"] } });
    expect(await links("l4")).toEqual({ p: "two" });
    expect(await text("l4/keep.txt")).toBe("new\n");
    // The claim was released: once the link is as the call left it, the undo goes through.
    ok(await call("bash", { command: "ln -sfn one l4/p" }));
    expect(actions(ok(await undo({}, "cf")))).toEqual(["l4/keep.txt:restored", "l4/p:deleted"]);
    expect(await links("l4")).toEqual({});
    expect(await text("l4/keep.txt")).toBe("old\n");
  });

  it("a link changed between undo's check and its write: CONFLICT, nothing written, the undo can be sent again", async () => {
    ok(await call("write", { file_path: "l5/keep.txt", content: "old\n" }));
    ok(await call("bash", { command: "ln -s one l5/q && echo new > l5/keep.txt" }, "win"));
    let raced = false;
    beforeModesPut = async () => {
      raced = true;
      ok(await call("bash", { command: "ln -sfn two l5/q" }));
    };
    const u = await undo({}, "win");
    expect(raced).toBe(true);
    expect(u.status, JSON.stringify(u.body)).toBe(409);
    expect(u.body.error).toMatchObject({ code: "CONFLICT", details: { restored: [] } });
    expect(u.body.error.message).toContain("l5/q");
    expect(await links("l5")).toEqual({ q: "two" });
    expect(await text("l5/keep.txt")).toBe("new\n");
    ok(await call("bash", { command: "ln -sfn one l5/q" }));
    expect(actions(ok(await undo({}, "win")))).toEqual(["l5/keep.txt:restored", "l5/q:deleted"]);
  });
});

describe("undo carries execute bits (x/modes.json)", () => {
  const actions = (u: any) => u.restored.map((x: any) => `${x.path}:${x.action}`).sort();
  const bits = async (cmd: string) => ok(await call("bash", { command: cmd })).output;

  it("chmod -x is undone: the bit comes back, and the next bash sees it", async () => {
    ok(await call("bash", { command: "mkdir -p m1/bin && printf '#!/bin/sh\\necho hi\\n' > m1/bin/run.sh && chmod +x m1/bin/run.sh" }));
    const r = ok(await call("bash", { command: "chmod -x m1/bin/run.sh" }, "mx"));
    // A run that changed only a mode says so (data and the text the model reads), and is undoable by its call_id.
    expect(r.data).toMatchObject({ files_changed: [], files_deleted: [], modes_changed: ["m1/bin/run.sh"] });
    expect(r.output).toContain("[execute bit changed: m1/bin/run.sh]");
    expect(r.call_id.startsWith("mx~")).toBe(true);
    expect(ok(await req("/v1/workspaces/main/undo?session=mx")).calls[0]).toMatchObject({ call_id: r.call_id, paths: ["m1/bin/run.sh"] });
    expect(actions(ok(await undo({ call_id: r.call_id }, "mx")))).toEqual(["m1/bin/run.sh:exec_bit_set"]);
    expect(await bits("test -x m1/bin/run.sh && echo x || echo no; ./m1/bin/run.sh")).toBe("x\nhi\n");
  });

  it("chmod +x of a file is undone: the bit is cleared", async () => {
    ok(await call("write", { file_path: "m2/tool.sh", content: "echo t\n" }));
    const r = ok(await call("bash", { command: "chmod +x m2/tool.sh" }, "px"));
    expect(r.data.modes_changed).toEqual(["m2/tool.sh"]);
    expect(actions(ok(await undo({}, "px")))).toEqual(["m2/tool.sh:exec_bit_cleared"]);
    expect(await bits("test -x m2/tool.sh && echo x || echo no")).toBe("no\n");
  });

  it("a new executable file is undone whole: deleted, and a file made again there is not executable", async () => {
    const r = ok(await call("bash", { command: "mkdir -p m3 && printf 'echo n\\n' > m3/new.sh && chmod +x m3/new.sh" }, "nx"));
    expect(r.data).toMatchObject({ files_changed: ["m3/new.sh"], modes_changed: ["m3/new.sh"] });
    expect(actions(ok(await undo({}, "nx")))).toEqual(["m3/new.sh:deleted", "m3/new.sh:exec_bit_cleared"]);
    expect(await text("m3/new.sh")).toBe(null);
    ok(await call("write", { file_path: "m3/new.sh", content: "echo again\n" }));
    expect(await bits("test -x m3/new.sh && echo x || echo no")).toBe("no\n");
  });

  it("an execute bit changed since by another call is named, and nothing of the call is undone", async () => {
    ok(await call("write", { file_path: "m4/keep.txt", content: "old\n" }));
    ok(await call("write", { file_path: "m4/s.sh", content: "echo s\n" }));
    ok(await call("bash", { command: "chmod +x m4/s.sh && echo new > m4/keep.txt" }, "mc"));
    ok(await call("bash", { command: "chmod -x m4/s.sh" }));
    const u = await undo({}, "mc");
    expect(u.status, JSON.stringify(u.body)).toBe(409);
    expect(u.body.error).toMatchObject({ code: "FILE_MODIFIED", details: { files: ["m4/s.sh"] } });
    expect(u.body.error.message).toContain("execute bit");
    expect(await text("m4/keep.txt")).toBe("new\n");
    expect(await bits("test -x m4/s.sh && echo x || echo no")).toBe("no\n");
    // Once the bit is as the call left it, the undo goes through.
    ok(await call("bash", { command: "chmod +x m4/s.sh" }));
    expect(actions(ok(await undo({}, "mc")))).toEqual(["m4/keep.txt:restored", "m4/s.sh:exec_bit_cleared"]);
    expect(await bits("test -x m4/s.sh && echo x || echo no; cat m4/keep.txt")).toBe("no\nold\n");
  });
});

describe("undo carries explicit directories (empty ones, kept as markers)", () => {
  const actions = (u: any) => u.restored.map((x: any) => `${x.path}:${x.action}`).sort();
  const sh = async (cmd: string) => ok(await call("bash", { command: cmd })).output;

  it("mkdir of an empty directory is undone: its marker is removed, and the next bash does not see it", async () => {
    ok(await call("write", { file_path: "d1/keep.txt", content: "k\n" }));
    const r = ok(await call("bash", { command: "mkdir d1/newdir" }, "mk"));
    // A run that only made a directory has a call_id.
    expect(r.data.dirs_created).toEqual(["d1/newdir"]);
    expect(r.call_id.startsWith("mk~")).toBe(true);
    expect(actions(ok(await undo({ call_id: r.call_id }, "mk")))).toEqual(["d1/newdir/:deleted"]);
    expect(await sh("test -d d1/newdir && echo dir || echo none")).toBe("none\n");
  });

  it("rmdir of an empty directory is undone: it is made again", async () => {
    ok(await call("bash", { command: "mkdir -p d2/empty" }));
    const r = ok(await call("bash", { command: "rmdir d2/empty" }, "rd"));
    expect(r.data.dirs_deleted).toEqual(["d2/empty"]);
    expect(r.call_id.startsWith("rd~")).toBe(true);
    // d2, left empty, got a marker of its own in that run: undone with it.
    expect(r.data.dirs_created).toEqual(["d2"]);
    expect(actions(ok(await undo({}, "rd")))).toEqual(["d2/:deleted", "d2/empty/:recreated"]);
    expect(await sh("test -d d2/empty && echo dir || echo none")).toBe("dir\n");
  });

  it("a directory removed since by another call is named, and nothing of the call is undone", async () => {
    ok(await call("write", { file_path: "d3/keep.txt", content: "old\n" }));
    ok(await call("bash", { command: "mkdir d3/made && echo new > d3/keep.txt" }, "dc"));
    ok(await call("bash", { command: "rmdir d3/made" }));
    const u = await undo({}, "dc");
    expect(u.status, JSON.stringify(u.body)).toBe(409);
    expect(u.body.error).toMatchObject({ code: "FILE_MODIFIED", details: { files: ["d3/made/"] } });
    expect(await text("d3/keep.txt")).toBe("new\n");
  });
});
