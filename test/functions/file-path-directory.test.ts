/**
 * A path ending in "/" (or "/.", "/..") names a directory. Given where a file is to be written or
 * changed, by every tool and route that takes one, it is refused with INVALID_ARGUMENT saying what to
 * give instead, and nothing is written (lib/layout/paths.ts normalizeFileToWrite). Before
 * (2026-12-02), normalizing dropped the slash: `write w1/` made an empty file `w1`, the batch upload
 * `u1/` a file `u1`, and `edit f.txt/` edited the file f.txt. Kept as they were: a raw
 * `PUT …/files/d/` makes a directory, copy and move put the source inside a `to` ending in "/",
 * read and ls take `d/` for the directory d.
 */
import { describe, expect, it } from "vitest";
import { newTenant, testApp, UNGATED, upload, type Tenant } from "../helpers.js";
import { snapshot } from "../lib/archive/helpers.js";
import { compat } from "../lib/api/routes/compat-helpers.js";

const app = testApp();

/** What a refusal looks like through each door: the status, the code, the message the model or client reads. */
interface Refusal {
  status: number;
  code: string | null;
  message: string;
}

const tool = async (t: Tenant, name: string, args: unknown): Promise<Refusal> => {
  const res = await t.req(`/v1/workspaces/${t.ws}/tools/${name}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) });
  const body = (await res.json()) as any;
  return { status: res.status, code: body.error?.code ?? null, message: body.error?.message ?? JSON.stringify(body) };
};
const patch = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");

/** [door, the path as given, the call]: each must be refused, naming the path and what to give instead. */
const CASES: [string, string, (t: Tenant) => Promise<Refusal>][] = [
  ["write", "w1/", (t) => tool(t, "write", { file_path: "w1/", content: "x\n" })],
  ["write", "w2/.", (t) => tool(t, "write", { file_path: "w2/.", content: "x\n" })],
  ["write", "dir/sub/..", (t) => tool(t, "write", { file_path: "dir/sub/..", content: "x\n" })],
  ["write over a directory", "dir/", (t) => tool(t, "write", { file_path: "dir/", content: "x\n" })],
  ["edit (create)", "e1/", (t) => tool(t, "edit", { file_path: "e1/", old_string: "", new_string: "x\n" })],
  ["edit of an existing file", "f.txt/", (t) => tool(t, "edit", { file_path: "f.txt/", old_string: "one", new_string: "two" })],
  ["multi_edit", "f.txt/", (t) => tool(t, "multi_edit", { file_path: "f.txt/", edits: [{ old_string: "one", new_string: "two" }] })],
  ["insert", "f.txt/", (t) => tool(t, "insert", { file_path: "f.txt/", insert_line: 0, text: "x\n" })],
  ["apply_patch: Add File", "p1/", (t) => tool(t, "apply_patch", { patch: patch("*** Add File: p1/", "+x") })],
  ["apply_patch: Update File", "f.txt/", (t) => tool(t, "apply_patch", { patch: patch("*** Update File: f.txt/", "@@", "-one", "+two") })],
  ["apply_patch: Move to", "p2/", (t) => tool(t, "apply_patch", { patch: patch("*** Update File: f.txt", "*** Move to: p2/", "@@", "-one", "+two") })],
  ["apply_patch: Delete File", "f.txt/", (t) => tool(t, "apply_patch", { patch: patch("*** Delete File: f.txt/") })],
  [
    "batch upload",
    "u1/",
    async (t) => {
      const res = await t.req(`/v1/workspaces/${t.ws}/uploads`, { method: "POST", headers: { "content-type": "application/x-ndjson" }, body: `${JSON.stringify({ path: "ok.txt", content: "fine\n" })}\n${JSON.stringify({ path: "u1/", content: "" })}\n` });
      const body = (await res.json()) as any;
      return { status: res.status, code: body.error?.code ?? null, message: JSON.stringify(body.error) };
    },
  ],
  [
    "compat: Anthropic text editor create",
    "c1/",
    async (t) => {
      const r = await compat(t, "anthropic", "str_replace_based_edit_tool", { command: "create", path: "c1/", file_text: "x\n" });
      return { status: r.status, code: r.code, message: r.body.content[0].text };
    },
  ],
  [
    "compat: OpenAI apply_patch create_file",
    "o1/",
    async (t) => {
      const r = await compat(t, "openai", "apply_patch", { type: "apply_patch_call", call_id: "c", status: "completed", operation: { type: "create_file", path: "o1/", diff: "+x\n" } });
      return { status: r.status, code: r.code, message: r.body.output };
    },
  ],
];

describe("a path that names a directory, given where a file is written", () => {
  it.each(CASES)("%s with %j is refused with INVALID_ARGUMENT, saying what to give; nothing is written", async (_door, given, call) => {
    const t = await newTenant(app, UNGATED);
    await upload(t, "f.txt", "one\n");
    expect((await t.req(`/v1/workspaces/${t.ws}/files/dir/`, { method: "PUT" })).status).toBe(201);
    // Read through the session, so that a change tool would otherwise go ahead.
    expect((await tool(t, "read", { file_path: "f.txt" })).status).toBe(200);
    const before = await snapshot(t.tenant);
    const r = await call(t);
    expect(r.code, r.message).toBe("INVALID_ARGUMENT");
    expect([200, 400]).toContain(r.status); // 200: a compat tool's failure is in its item
    expect(r.message).toContain(`'${given}' ends with '/`);
    expect(r.message).toMatch(/names a directory, not a file\. Give the file's path, such as '[^']+\/name\.txt'/);
    expect(r.message).toContain("mkdir -p");
    expect(await snapshot(t.tenant)).toEqual(before);
  });
});

describe("the approval gate", () => {
  it("does not hold a write to f.txt/ as an overwrite of f.txt: the tool refuses it", async () => {
    const t = await newTenant(app, { policy: { gate: [{ tool: "write", when: "overwrite" }] } });
    await upload(t, "f.txt", "one\n");
    const before = await snapshot(t.tenant);
    const r = await tool(t, "write", { file_path: "f.txt/", content: "x\n" });
    expect([r.status, r.code]).toEqual([400, "INVALID_ARGUMENT"]);
    expect(await snapshot(t.tenant)).toEqual(before);
    expect((await tool(t, "write", { file_path: "f.txt", content: "x\n" })).code).toBe("NEEDS_APPROVAL");
  });
});

describe("what a trailing slash still means", () => {
  it("a raw PUT of d/ makes the directory; copy and move put the source inside a `to` ending in '/'; read and ls take d/ as d", async () => {
    const t = await newTenant(app, UNGATED);
    await upload(t, "f.txt", "one\n");
    await upload(t, "g.txt", "two\n");
    expect((await t.req(`/v1/workspaces/${t.ws}/files/d/`, { method: "PUT" })).status).toBe(201);
    expect((await tool(t, "copy", { from: "f.txt", to: "c/" })).status).toBe(200);
    expect((await tool(t, "move", { from: "g.txt", to: "m/" })).status).toBe(200);
    const ls = async (path: string) => {
      const res = await t.req(`/v1/workspaces/${t.ws}/tools/ls`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, recursive: true }) });
      return ((await res.json()) as any).data.entries.map((e: any) => `${e.type} ${e.path}`);
    };
    expect(await ls("")).toEqual(["directory c", "file c/f.txt", "directory d", "file f.txt", "directory m", "file m/g.txt"]);
    expect(await ls("c/")).toEqual(["file c/f.txt"]);
    expect((await tool(t, "read", { file_path: "d/" })).code).toBe("IS_DIRECTORY");
  });
});
