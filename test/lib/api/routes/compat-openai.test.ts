/**
 * POST /v1/workspaces/{ws}/compat/openai/{tool}: OpenAI's apply_patch (and shell without an
 * executor) through HTTP, on the real app with local R2 and KV; and the apply_patch tool on its
 * own route. Cases follow OpenAI's apply_patch documentation (create_file / update_file /
 * delete_file operations with V4A diffs) and codex's scenarios (moves, multi-file patches).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { r2Driver } from "../../../../lib/storage/drivers/r2.js";
import type { StorageDriver } from "../../../../lib/storage/types.js";
import { expectError, expectOk, keyWithScopes, rawGet, rawText } from "../../../functions/file-helpers.js";
import { newTenant, testApp, upload, type Tenant, UNGATED } from "../../../helpers.js";
import { compat, type CompatResult } from "./compat-helpers.js";

const patchCall = (t: Tenant, body: unknown, opts: Parameters<typeof compat>[4] = {}) => compat(t, "openai", "apply_patch", body, opts);
const op = (operation: Record<string, unknown>, call_id = "call_1") => ({ type: "apply_patch_call", call_id, status: "completed", operation });

function completed(r: CompatResult): string {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body, JSON.stringify(r.body)).toMatchObject({ type: "apply_patch_call_output", status: "completed" });
  expect(r.code).toBeNull();
  return r.body.output;
}

function failedWith(r: CompatResult, code: string): string {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body).toMatchObject({ type: "apply_patch_call_output", status: "failed" });
  expect(r.code).toBe(code);
  expect(r.body.output.startsWith(`${code}: `)).toBe(true);
  return r.body.output;
}

describe("apply_patch operations (apply_patch_call items)", () => {
  it("create_file: the + lines become the file; call_id is echoed", async () => {
    const t = await newTenant(undefined, UNGATED);
    const r = await patchCall(t, op({ type: "create_file", path: "src/hello.py", diff: '+def hello():\n+    print("hi")\n' }, "call_abc"));
    expect(completed(r)).toBe("Success. Updated the following files:\nA src/hello.py");
    expect(r.body.call_id).toBe("call_abc");
    expect(await rawText(t, "src/hello.py")).toBe('def hello():\n    print("hi")\n');
  });

  it("update_file: a V4A diff with an anchor, on a file the session never read", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "fib.py", "def fib(n):\n    if n <= 1:\n        return n\n    return fib(n - 1) + fib(n - 2)\n");
    completed(await patchCall(t, op({ type: "update_file", path: "fib.py", diff: "@@ def fib(n):\n-    if n <= 1:\n+    if n < 2:\n         return n\n" })));
    expect(await rawText(t, "fib.py")).toBe("def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n");
  });

  it("update_file on a CRLF file keeps CRLF; unicode lines match and are written as given", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "win.txt", "Grüße\r\nnaïve café\r\n日本\r\n");
    completed(await patchCall(t, op({ type: "update_file", path: "win.txt", diff: "@@\n Grüße\n-naïve café\n+naïve café ☕\n 日本" })));
    expect(await rawText(t, "win.txt")).toBe("Grüße\r\nnaïve café ☕\r\n日本\r\n");
  });

  it("delete_file removes the file", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "old.txt", "bye\n");
    expect(completed(await patchCall(t, op({ type: "delete_file", path: "old.txt" })))).toContain("D old.txt");
    expect((await rawGet(t, "old.txt")).status).toBe(404);
  });

  it("the operation alone, with the call id in X-Call-Id", async () => {
    const t = await newTenant(undefined, UNGATED);
    const r = await patchCall(t, { type: "create_file", path: "a.txt", diff: "+a" }, { headers: { "x-call-id": "call_h" } });
    completed(r);
    expect(r.body.call_id).toBe("call_h");
  });

  it("errors are failed items the model can act on: no match (nearest lines), missing file, existing file, bad diff", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.py", "x = 1\ny = 2\n");
    const nm = failedWith(await patchCall(t, op({ type: "update_file", path: "a.py", diff: "@@\n-y = 3\n+y = 4" })), "NO_MATCH");
    expect(nm).toContain("Hunk 1 of 1 in a.py");
    expect(nm).toContain("2: y·=·2");
    expect(failedWith(await patchCall(t, op({ type: "update_file", path: "b.py", diff: "@@\n-a\n+b" })), "NOT_FOUND")).toContain("b.py");
    expect(failedWith(await patchCall(t, op({ type: "create_file", path: "a.py", diff: "+z" })), "ALREADY_EXISTS")).toContain("*** Update File: a.py");
    expect(failedWith(await patchCall(t, op({ type: "create_file", path: "c.py", diff: "no plus" })), "INVALID_ARGUMENT")).toContain("does not start with '+'");
    expect(failedWith(await patchCall(t, op({ type: "delete_file", path: "../etc/passwd" })), "INVALID_PATH")).toBeTruthy();
    // codex 007 and 012: deleting a missing file, or a directory, is refused.
    expect(failedWith(await patchCall(t, op({ type: "delete_file", path: "gone.py" })), "NOT_FOUND")).toContain("gone.py");
    await upload(t, "dir/inner.py", "z = 0\n");
    expect(failedWith(await patchCall(t, op({ type: "delete_file", path: "dir" })), "IS_DIRECTORY")).toContain("delete tool");
    expect(await rawText(t, "dir/inner.py")).toBe("z = 0\n");
    expect(await rawText(t, "a.py")).toBe("x = 1\ny = 2\n");
  });
});

describe("apply_patch with a whole V4A patch", () => {
  it("add, update, move and delete in one patch", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "old/name.txt", "from\n");
    await upload(t, "modify.txt", "line1\nline2\n");
    await upload(t, "delete.txt", "obsolete\n");
    const patch = [
      "*** Begin Patch",
      "*** Add File: nested/new.txt",
      "+created",
      "*** Delete File: delete.txt",
      "*** Update File: modify.txt",
      "@@",
      "-line2",
      "+changed",
      "*** Update File: old/name.txt",
      "*** Move to: renamed/dir/name.txt",
      "@@",
      "-from",
      "+new",
      "*** End Patch",
    ].join("\n");
    const out = completed(await patchCall(t, { patch }));
    expect(out).toBe("Success. Updated the following files:\nA nested/new.txt\nD delete.txt\nM modify.txt\nM old/name.txt -> renamed/dir/name.txt");
    expect(await rawText(t, "nested/new.txt")).toBe("created\n");
    expect(await rawText(t, "modify.txt")).toBe("line1\nchanged\n");
    expect(await rawText(t, "renamed/dir/name.txt")).toBe("new\n");
    expect((await rawGet(t, "old/name.txt")).status).toBe(404);
    expect((await rawGet(t, "delete.txt")).status).toBe(404);
  });

  it("all or nothing: the second file's hunk fails → the first file is unchanged", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "alpha\n");
    await upload(t, "b.txt", "beta\ngamma\n");
    const before = await rawGet(t, "a.txt");
    const patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Add File: c.txt\n+new\n*** Update File: b.txt\n@@\n beta\n-delta\n+DELTA\n*** End Patch";
    const out = failedWith(await patchCall(t, { patch }), "NO_MATCH");
    expect(out).toContain("Hunk 1 of 1 in b.txt (patch line 9)");
    expect(out).toContain("Its first line: 'beta'");
    const after = await rawGet(t, "a.txt");
    expect(after.etag).toBe(before.etag);
    expect(await rawText(t, "a.txt")).toBe("alpha\n");
    expect((await rawGet(t, "c.txt")).status).toBe(404);
  });

  it("a write that fails midway puts back what was already written (conditionally)", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "alpha\n");
    await upload(t, "f.txt", "a file, not a directory\n");
    // Planning passes (nothing at f.txt/new.txt); writing it fails (its parent is a file) after a.txt was written.
    const patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Add File: f.txt/new.txt\n+x\n*** End Patch";
    const out = failedWith(await patchCall(t, { patch }), "NOT_A_DIRECTORY");
    expect(out).toContain("was put back: nothing was changed");
    expect(await rawText(t, "a.txt")).toBe("alpha\n");
  });

  it("a file in two sections, and an empty patch, are refused before anything is written", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", "a\n");
    expect(failedWith(await patchCall(t, { patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Delete File: /a.txt\n*** End Patch" }), "INVALID_ARGUMENT")).toContain("appears in two sections");
    expect(failedWith(await patchCall(t, { patch: "*** Begin Patch\n*** End Patch" }), "INVALID_ARGUMENT")).toContain("no file sections");
    expect(await rawText(t, "a.txt")).toBe("a\n");
  });
});

describe("apply_patch as a tool on its own route", () => {
  it("answers the usual envelope; added and updated files count as read for later edits", async () => {
    const t = await newTenant(undefined, UNGATED);
    const data = expectOk(await t.call("apply_patch", { patch: "*** Begin Patch\n*** Add File: n.txt\n+one\n*** End Patch" }));
    expect(data).toMatchObject({ added: 1, updated: 0, deleted: 0, files: [{ path: "n.txt", action: "add" }] });
    expect(typeof data.files[0].etag).toBe("string");
    expectOk(await t.call("edit", { file_path: "n.txt", old_string: "one", new_string: "two" }));
    expect(await rawText(t, "n.txt")).toBe("two\n");
    expectError(await t.call("apply_patch", { patch: "nope" }), 400, "INVALID_ARGUMENT", "apply_patch");
  });

  it("a loose match is reported", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "s.py", "    value = 1   \n");
    const r = expectOk(await t.call("apply_patch", { patch: "*** Begin Patch\n*** Update File: s.py\n@@\n-value = 1\n+    value = 2\n*** End Patch" }));
    expect(r.files[0].hunks).toEqual([{ hunk: 1, line: 1, fuzz: 2 }]);
    expect(await rawText(t, "s.py")).toBe("    value = 2\n");
  });
});

describe("scopes, isolation, shell without an executor", () => {
  it("a read-only key's patch fails with PERMISSION_DENIED and changes nothing", async () => {
    const t = await newTenant(undefined, UNGATED);
    const key = await keyWithScopes(t, ["read"]);
    failedWith(await patchCall(t, op({ type: "create_file", path: "x.txt", diff: "+x" }), { headers: { authorization: `Bearer ${key}` } }), "PERMISSION_DENIED");
    expect((await rawGet(t, "x.txt")).status).toBe(404);
  });

  it("another tenant's workspace is 404 for apply_patch and shell", async () => {
    const app = testApp();
    const a = await newTenant(app, UNGATED);
    expect((await a.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "a-private" }) })).status).toBe(201);
    await upload({ ...a, ws: "a-private" }, "keep.txt", "A's\n");
    const b = await newTenant(app, UNGATED);
    for (const [tool, body] of [
      ["apply_patch", op({ type: "delete_file", path: "keep.txt" })],
      ["shell", { type: "shell_call", call_id: "c", action: { commands: ["rm -f keep.txt"] } }],
    ] as const) {
      const r = await compat(b, "openai", tool, body, { ws: "a-private" });
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("NOT_FOUND");
    }
    expect(await rawText({ ...a, ws: "a-private" }, "keep.txt")).toBe("A's\n");
  });

  it("shell without an executor: each command answers exit 126 with the reason in stderr", async () => {
    const t = await newTenant(undefined, UNGATED);
    const r = await compat(t, "openai", "shell", { type: "shell_call", call_id: "call_s", action: { commands: ["ls", "pwd"], timeout_ms: 5000, max_output_length: 4096 } });
    expect(r.status).toBe(200);
    expect(r.code).toBe("UNAVAILABLE");
    expect(r.body).toMatchObject({ type: "shell_call_output", call_id: "call_s", max_output_length: 4096 });
    expect(r.body.output).toHaveLength(2);
    for (const o of r.body.output) {
      expect(o.outcome).toEqual({ type: "exit", exit_code: 126 });
      expect(o.stderr).toContain("toolshed: UNAVAILABLE");
    }
  });

  it("a command that is `apply_patch <<'EOF'` (Codex's way) runs apply_patch: its output on stdout, exit 0; a failed patch on stderr, exit 1; other commands still go to bash", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "src/app.py", "print('old')\n");
    const patch = "*** Begin Patch\n*** Update File: app.py\n@@\n-print('old')\n+print('new')\n*** Add File: util.py\n+X = 1\n*** End Patch";
    const r = await compat(t, "openai", "shell", { type: "shell_call", call_id: "c1", action: { commands: [`cd src && apply_patch <<'EOF'\n${patch}\nEOF\n`, "ls"] } });
    expect(r.status).toBe(200);
    const [patched, ls] = r.body.output;
    expect(patched).toEqual({ stdout: "Success. Updated the following files:\nM src/app.py\nA src/util.py\n", stderr: "", outcome: { type: "exit", exit_code: 0 } });
    expect(await rawText(t, "src/app.py")).toBe("print('new')\n");
    expect(await rawText(t, "src/util.py")).toBe("X = 1\n");
    expect(ls.outcome).toEqual({ type: "exit", exit_code: 126 }); // no executor here: `ls` went to bash
    expect(r.code).toBe("UNAVAILABLE");

    // Unquoted delimiter, the workspace root by its sandbox path; a hunk that does not match fails as the command.
    const bad = await compat(t, "openai", "shell", { commands: [`cd /workspace && apply_patch <<PATCH\n*** Begin Patch\n*** Update File: src/app.py\n@@\n-print('gone')\n+x\n*** End Patch\nPATCH`] });
    expect(bad.body.output[0].outcome).toEqual({ type: "exit", exit_code: 1 });
    expect(bad.body.output[0].stderr).toMatch(/^apply_patch: NO_MATCH: /);
    expect(bad.code).toBe("NO_MATCH");
    expect(await rawText(t, "src/app.py")).toBe("print('new')\n");
  });

  it("apply_patch in a shell command keeps apply_patch's rules: a key without write cannot patch through shell", async () => {
    const t = await newTenant(undefined, UNGATED);
    const key = await keyWithScopes(t, ["read", "execute"]);
    const r = await compat(t, "openai", "shell", { commands: ["apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch\nEOF"] }, { headers: { authorization: `Bearer ${key}` } });
    expect(r.body.output[0]).toMatchObject({ stdout: "", outcome: { type: "exit", exit_code: 1 } });
    expect(r.body.output[0].stderr).toContain("PERMISSION_DENIED");
    expect((await rawGet(t, "x.txt")).status).toBe(404);
  });

  it("a malformed shell action is a 400", async () => {
    const t = await newTenant(undefined, UNGATED);
    expect((await compat(t, "openai", "shell", { commands: [] })).status).toBe(400);
  });

  it("a body of another shape names the field at fault, or what it got, and what the route takes (never '(body): Invalid input')", async () => {
    const t = await newTenant(undefined, UNGATED);
    const shellError = async (body: unknown): Promise<string> => {
      const r = await compat(t, "openai", "shell", body);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error.code).toBe("INVALID_ARGUMENT");
      expect(r.body.error.message).not.toContain("(body)");
      expect(r.body.error.message).toContain('{"type": "shell_call", "call_id", "action": {"commands"');
      return r.body.error.message;
    };
    // A typo inside the item: the field, by its path in the item.
    expect(await shellError({ type: "shell_call", call_id: "c", action: { command: ["ls"] } })).toMatch(/^Invalid arguments: action\.commands: /);
    // Another tool's item, or another provider's input: what it is.
    expect(await shellError({ type: "local_shell_call", call_id: "c", action: { type: "exec", command: ["ls"] } })).toContain('this body is a "local_shell_call" item');
    expect(await shellError({ command: "ls" })).toContain("this body is an object with the field command");

    const patchError = async (body: unknown): Promise<string> => {
      const r = await patchCall(t, body);
      const output = failedWith(r, "INVALID_ARGUMENT");
      expect(output).not.toContain("(body)");
      expect(output).toContain('{"type": "apply_patch_call", "call_id", "operation": {"type": "create_file" | "update_file" | "delete_file"');
      return output;
    };
    expect(await patchError(op({ type: "update", path: "a.txt", diff: "@@\n-a\n+b" }))).toMatch(/operation\.type: .*"create_file"\|"update_file"\|"delete_file"/);
    expect(await patchError({ type: "create_file", diff: "+x" })).toContain("path: ");
    expect(await patchError({ type: "function_call", call_id: "c", name: "apply_patch", arguments: "{}" })).toContain('this body is a "function_call" item');
    expect((await rawGet(t, "a.txt")).status).toBe(404);
  });
});

describe("apply_patch against a concurrent writer (every step conditional)", () => {
  /**
   * A tenant whose storage lets "another call" write right after this patch's write of `after`
   * succeeds: it overwrites each of `changes` (file path → content) straight in storage.
   */
  async function tenantWithIntruder(after: string, changes: Record<string, string>): Promise<Tenant> {
    const r2 = r2Driver(env.FILES);
    let fired = true;
    const storage: StorageDriver = {
      ...r2,
      put: async (key, body, opts) => {
        const info = await r2.put(key, body, opts);
        if (!fired && key.endsWith(`/f/${after}`)) {
          fired = true;
          const prefix = key.slice(0, -after.length);
          for (const [p, c] of Object.entries(changes)) await r2.put(`${prefix}${p}`, c);
        }
        return info;
      },
    };
    const t = await newTenant(testApp({ storage }), UNGATED);
    await upload(t, "a.txt", "alpha\n");
    await upload(t, "b.txt", "beta\n");
    fired = false; // armed: the next write of `after` lets the other call in
    return t;
  }
  const PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Update File: b.txt\n@@\n-beta\n+BETA\n*** End Patch";

  it("b.txt changed after planning: its write fails FILE_MODIFIED, a.txt is put back, b.txt keeps the other write", async () => {
    const t = await tenantWithIntruder("a.txt", { "b.txt": "beta by another call\n" });
    const out = failedWith(await patchCall(t, { patch: PATCH }), "FILE_MODIFIED");
    expect(out).toContain("was put back: nothing was changed");
    expect(await rawText(t, "a.txt")).toBe("alpha\n");
    expect(await rawText(t, "b.txt")).toBe("beta by another call\n");
  });

  it("a.txt changed again by the other call: it is not overwritten by the undo, and the error names it", async () => {
    const t = await tenantWithIntruder("a.txt", { "a.txt": "alpha by another call\n", "b.txt": "beta by another call\n" });
    const r = await t.call("apply_patch", { patch: PATCH });
    const e = expectError(r, 409, "FILE_MODIFIED", "apply_patch");
    expect(e.message).toContain("except a.txt, which another call changed meanwhile");
    expect(e.details).toMatchObject({ failed_path: "b.txt", rolled_back: [], not_restored: [{ path: "a.txt", reason: "FILE_MODIFIED" }] });
    expect(await rawText(t, "a.txt")).toBe("alpha by another call\n");
    expect(await rawText(t, "b.txt")).toBe("beta by another call\n");
  });
});
