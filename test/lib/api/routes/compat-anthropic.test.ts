/**
 * POST /v1/workspaces/{ws}/compat/anthropic/{tool}: Anthropic's text editor and bash tools through
 * HTTP, on the real app with local R2 and KV. Cases follow Anthropic's text editor tool documentation
 * (view with and without view_range, directories, create, str_replace, insert) and its reference
 * implementation's errors (create over an existing file, no match, several matches).
 */
import { describe, expect, it } from "vitest";
import type { AppDeps } from "../../../../lib/api/deps.js";

type UsageRecord = Parameters<NonNullable<AppDeps["onUsage"]>>[0];
import { keyWithScopes, rawText } from "../../../functions/file-helpers.js";
import { newTenant, testApp, upload, type Tenant } from "../../../helpers.js";
import { compat, textOf, type CompatResult } from "./compat-helpers.js";

const EDITOR = "str_replace_based_edit_tool";
const SRC = "def is_prime(n):\n    if n < 2:\n        return False\n    return all(n % d for d in range(2, n))\n";

const editor = (t: Tenant, input: unknown, opts: Parameters<typeof compat>[4] = {}) => compat(t, "anthropic", EDITOR, input, opts);

function ok(r: CompatResult): string {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.type).toBe("tool_result");
  expect(r.body.is_error, JSON.stringify(r.body)).toBe(false);
  expect(r.code).toBeNull();
  return textOf(r);
}

function failed(r: CompatResult, code: string): string {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body).toMatchObject({ type: "tool_result", is_error: true });
  expect(r.code).toBe(code);
  return textOf(r);
}

async function withPrimes(): Promise<Tenant> {
  const t = await newTenant();
  await upload(t, "primes.py", SRC);
  return t;
}

describe("text editor: view", () => {
  it("a whole file, numbered like cat -n; the tool_use_id header is echoed", async () => {
    const t = await withPrimes();
    const r = await editor(t, { command: "view", path: "/primes.py" }, { headers: { "x-tool-use-id": "toolu_01A" } });
    const text = ok(r);
    expect(r.body.tool_use_id).toBe("toolu_01A");
    expect(r.body.content).toHaveLength(1);
    expect(r.body.content[0].type).toBe("text");
    expect(text).toContain("     1\tdef is_prime(n):");
    expect(text).toContain("     4\t    return all(n % d for d in range(2, n))");
  });

  it("view_range [2, 3] shows lines 2 and 3; [3, -1] to the end", async () => {
    const t = await withPrimes();
    const a = ok(await editor(t, { command: "view", path: "primes.py", view_range: [2, 3] }));
    expect(a.split("\n").filter((l) => /^\s+\d+\t/.test(l)).map((l) => Number(l.split("\t")[0]))).toEqual([2, 3]);
    expect(a).toContain("View it with view_range [4, -1] to continue.");
    expect(a).not.toContain("Call read");
    const b = ok(await editor(t, { command: "view", path: "primes.py", view_range: [3, -1] }));
    expect(b).toContain("     3\t        return False");
    expect(b).toContain("     4\t");
    expect(b).not.toContain("     2\t");
  });

  it("file content is shown as it is, even where it reads like our messages", async () => {
    const t = await newTenant();
    const body = "old_string = 'Read it with the read tool first'\nCall read with offset=9 to continue.\n";
    await upload(t, "quirk.py", body);
    const text = ok(await editor(t, { command: "view", path: "quirk.py" }));
    expect(text).toContain("\told_string = 'Read it with the read tool first'");
    expect(text).toContain("\tCall read with offset=9 to continue.");
    // An error quoting the file's lines quotes them as they are; only its own words are Anthropic's.
    const e = failed(await editor(t, { command: "str_replace", path: "quirk.py", old_str: "old_string = 'Read it'", new_str: "x" }), "NO_MATCH");
    expect(e).toContain("old_str was not found in quirk.py");
    expect(e).toContain("1: old_string·=·'Read·it·with·the·read·tool·first'");
    expect(e).toContain("Your first line: old_string·=·'Read·it'");
  });

  it("a bad view_range is an error block", async () => {
    const t = await withPrimes();
    expect(failed(await editor(t, { command: "view", path: "primes.py", view_range: [0, 2] }), "INVALID_ARGUMENT")).toContain("the first line is 1");
    expect(failed(await editor(t, { command: "view", path: "primes.py", view_range: [3, 2] }), "INVALID_ARGUMENT")).toContain("-1 for the end");
  });

  it("a directory (the root, or a subdirectory) is listed", async () => {
    const t = await withPrimes();
    await upload(t, "pkg/mod.py", "x = 1\n");
    const root = ok(await editor(t, { command: "view", path: "/" }));
    expect(root).toContain("primes.py");
    expect(root).toContain("pkg/");
    expect(ok(await editor(t, { command: "view", path: "/pkg" }))).toContain("mod.py");
  });

  it("the whole tool_use block is accepted: its id becomes tool_use_id", async () => {
    const t = await withPrimes();
    const r = await editor(t, { type: "tool_use", id: "toolu_xyz", name: EDITOR, input: { command: "view", path: "primes.py" } });
    ok(r);
    expect(r.body.tool_use_id).toBe("toolu_xyz");
  });

  it("a missing file is an error block with similar paths", async () => {
    const t = await withPrimes();
    expect(failed(await editor(t, { command: "view", path: "prime.py" }), "NOT_FOUND")).toContain("primes.py");
  });
});

describe("text editor: create, str_replace, insert", () => {
  it("create makes a new file; over an existing one it is an error block and the file is kept", async () => {
    const t = await withPrimes();
    expect(ok(await editor(t, { command: "create", path: "/notes/todo.md", file_text: "# Todo\n" }))).toBe("File created successfully at: notes/todo.md");
    expect(await rawText(t, "notes/todo.md")).toBe("# Todo\n");
    const e = failed(await editor(t, { command: "create", path: "primes.py", file_text: "overwritten\n" }), "ALREADY_EXISTS");
    expect(e).toContain("primes.py already exists");
    expect(await rawText(t, "primes.py")).toBe(SRC);
  });

  it("create with empty file_text makes an empty file; without file_text it is an error", async () => {
    const t = await newTenant();
    ok(await editor(t, { command: "create", path: "pkg/__init__.py", file_text: "" }));
    expect(await rawText(t, "pkg/__init__.py")).toBe("");
    expect(failed(await editor(t, { command: "create", path: "b.py" }), "INVALID_ARGUMENT")).toContain("`file_text`");
  });

  it("create over an existing empty file fills it and says so, not 'created'", async () => {
    const t = await newTenant();
    await upload(t, "empty.txt", "");
    expect(ok(await editor(t, { command: "create", path: "empty.txt", file_text: "now\n" }))).toBe("File already existed at: empty.txt, empty: file_text was written into it (create never overwrites a file that has content).");
    expect(await rawText(t, "empty.txt")).toBe("now\n");
  });

  it("str_replace needs a view first (in Anthropic's words), then replaces the unique match", async () => {
    const t = await withPrimes();
    const before = failed(await editor(t, { command: "str_replace", path: "primes.py", old_str: "n < 2", new_str: "n <= 1" }), "NOT_READ");
    expect(before).toContain("View it with the view command first");
    ok(await editor(t, { command: "view", path: "primes.py" }));
    const text = ok(await editor(t, { command: "str_replace", path: "primes.py", old_str: "n < 2", new_str: "n <= 1" }));
    expect(text).toContain("1 replacement");
    expect(await rawText(t, "primes.py")).toBe(SRC.replace("n < 2", "n <= 1"));
  });

  it("str_replace with no match: error block with the nearest lines, in old_str words; the file is kept", async () => {
    const t = await withPrimes();
    ok(await editor(t, { command: "view", path: "primes.py" }));
    const e = failed(await editor(t, { command: "str_replace", path: "primes.py", old_str: "    if n < 3:", new_str: "x" }), "NO_MATCH");
    expect(e).toContain("old_str was not found in primes.py");
    expect(e).toContain("2: ····if·n·<·2:");
    expect(e).not.toContain("old_string");
    expect(await rawText(t, "primes.py")).toBe(SRC);
  });

  it("str_replace with several matches: error block listing their lines, without replace_all", async () => {
    const t = await withPrimes();
    ok(await editor(t, { command: "view", path: "primes.py" }));
    const e = failed(await editor(t, { command: "str_replace", path: "primes.py", old_str: "return", new_str: "yield" }), "NOT_UNIQUE");
    expect(e).toContain("occurs 2 times");
    expect(e).toContain("lines 3, 4");
    expect(e).not.toContain("replace_all");
    expect(await rawText(t, "primes.py")).toBe(SRC);
  });

  it("str_replace without new_str deletes the match", async () => {
    const t = await withPrimes();
    ok(await editor(t, { command: "view", path: "primes.py" }));
    ok(await editor(t, { command: "str_replace", path: "primes.py", old_str: "    if n < 2:\n        return False\n" }));
    expect(await rawText(t, "primes.py")).toBe("def is_prime(n):\n    return all(n % d for d in range(2, n))\n");
  });

  it("insert at line 0 and at the end (insert_text, or new_str as older docs name it); past the end is an error", async () => {
    const t = await withPrimes();
    ok(await editor(t, { command: "view", path: "primes.py" }));
    ok(await editor(t, { command: "insert", path: "primes.py", insert_line: 0, insert_text: '"""Prime utilities."""\n' }));
    ok(await editor(t, { command: "insert", path: "primes.py", insert_line: 5, new_str: "\nprint(is_prime(7))" }));
    expect(await rawText(t, "primes.py")).toBe(`"""Prime utilities."""\n${SRC}\nprint(is_prime(7))\n`);
    expect(failed(await editor(t, { command: "insert", path: "primes.py", insert_line: 99, insert_text: "x" }), "INVALID_ARGUMENT")).toContain("past the end");
    expect(failed(await editor(t, { command: "insert", path: "primes.py", insert_text: "x" }), "INVALID_ARGUMENT")).toContain("`insert_line`");
  });

  it("insert keeps CRLF line endings", async () => {
    const t = await newTenant();
    await upload(t, "w.txt", "a\r\nb\r\n");
    expect(failed(await editor(t, { command: "insert", path: "w.txt", insert_line: 1, insert_text: "x\n" }), "NOT_READ")).toContain("View it with the view command first");
    ok(await compat(t, "anthropic", "str_replace_editor", { command: "view", path: "w.txt" }));
    ok(await editor(t, { command: "insert", path: "w.txt", insert_line: 1, insert_text: "x\n" }));
    expect(await rawText(t, "w.txt")).toBe("a\r\nx\r\nb\r\n");
  });

  it("undo_edit and unknown commands are error blocks", async () => {
    const t = await withPrimes();
    expect(failed(await editor(t, { command: "undo_edit", path: "primes.py" }), "INVALID_ARGUMENT")).toContain("undo_edit is not supported");
    failed(await editor(t, { command: "rename", path: "primes.py" }), "INVALID_ARGUMENT");
  });
});

describe("bash tool", () => {
  it("restart is a success; a command without an executor is an UNAVAILABLE error block", async () => {
    const t = await newTenant();
    expect(ok(await compat(t, "anthropic", "bash", { restart: true }))).toBe("tool has been restarted.");
    expect(failed(await compat(t, "anthropic", "bash", { command: "echo hi" }), "UNAVAILABLE")).toContain("not enabled");
    failed(await compat(t, "anthropic", "bash", {}), "INVALID_ARGUMENT");
  });
});

describe("the same rules as the tool routes", () => {
  it("a read-only key views, but its edits are PERMISSION_DENIED error blocks and nothing changes", async () => {
    const t = await withPrimes();
    const key = await keyWithScopes(t, ["read"]);
    const as = { headers: { authorization: `Bearer ${key}` } };
    ok(await editor(t, { command: "view", path: "primes.py" }, as));
    expect(failed(await editor(t, { command: "create", path: "x.py", file_text: "x" }, as), "PERMISSION_DENIED")).toContain("'write' scope");
    failed(await editor(t, { command: "str_replace", path: "primes.py", old_str: "n < 2", new_str: "n" }, as), "PERMISSION_DENIED");
    expect(await rawText(t, "primes.py")).toBe(SRC);
  });

  it("another tenant's workspace is 404, as if it did not exist, and nothing of it changes", async () => {
    const app = testApp();
    const a = await newTenant(app);
    expect((await a.req("/v1/workspaces", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "a-private" }) })).status).toBe(201);
    const priv = { ...a, ws: "a-private" };
    await upload(priv, "primes.py", SRC);
    const b = await newTenant(app);
    for (const input of [{ command: "view", path: "primes.py" }, { command: "create", path: "new.py", file_text: "x" }, { command: "str_replace", path: "primes.py", old_str: "n", new_str: "m" }]) {
      const r = await editor(b, input, { ws: "a-private" });
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("NOT_FOUND");
      expect(JSON.stringify(r.body)).not.toContain("is_prime");
    }
    expect(await rawText(priv, "primes.py")).toBe(SRC);
    expect((await a.req("/v1/workspaces/a-private/files/new.py")).status).toBe(404);
  });

  it("an unknown tool is 400, a bad key 401", async () => {
    const t = await withPrimes();
    expect((await compat(t, "anthropic", "computer", { action: "screenshot" })).status).toBe(400);
    expect((await editor(t, { command: "view", path: "primes.py" }, { headers: { authorization: "Bearer tsk_nope_nope" } })).status).toBe(401);
  });

  it("each call is metered as the tool that ran it", async () => {
    const records: UsageRecord[] = [];
    const t = await newTenant(testApp({ onUsage: (u) => void (u.tool !== undefined && records.push(u)) }));
    await upload(t, "a.txt", "hello\n");
    ok(await editor(t, { command: "view", path: "a.txt" }));
    ok(await editor(t, { command: "str_replace", path: "a.txt", old_str: "hello", new_str: "bye" }));
    failed(await editor(t, { command: "str_replace", path: "a.txt", old_str: "nope", new_str: "x" }), "NO_MATCH");
    expect(records.map((r) => [r.tool, r.ok, r.code ?? null])).toEqual([["read", true, null], ["edit", true, null], ["edit", false, "NO_MATCH"]]);
    expect(records[1]!.bytes_written).toBe(4);
  });

  it("a call the adapter refuses before any tool runs is metered once, by its route", async () => {
    // Before: an unknown command (or an input the adapter cannot map) took a rate-limit token and left no usage record.
    const records: UsageRecord[] = [];
    const t = await newTenant(testApp({ onUsage: (u) => void (u.workspace !== "" && records.push(u)) }));
    failed(await editor(t, { command: "bogus", path: "a.txt" }), "INVALID_ARGUMENT");
    expect(records.map((r) => [r.tool ?? r.route, r.ok, r.code ?? null])).toEqual([["POST compat/anthropic", false, "INVALID_ARGUMENT"]]);
    const shell = await compat(t, "openai", "shell", { type: "shell_call", call_id: "c1", action: {} });
    expect(records.length, JSON.stringify(shell.body)).toBe(2);
    expect(records[1]).toMatchObject({ route: "POST compat/openai", ok: false });
  });
});
