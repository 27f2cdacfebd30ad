/**
 * Arguments as models send them, through HTTP (lib/contract/tool-args.ts, lib/api/routes/json-body.ts):
 * null = absent for optional arguments at any depth, unknown arguments named with the closest
 * known one, missing required arguments named as such, unknown tools answered with the key's
 * tools, and invalid UTF-8 in any JSON body refused with its byte offset.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { tools } from "../../../functions/index.js";
import { SCOPES } from "../../../lib/contract/caller.js";
import { parseJsonBytes, utf8ErrorOffset } from "../../../lib/api/routes/json-body.js";
import { ADMIN, newTenant, testApp, upload, type Tenant } from "../../helpers.js";

const app = testApp();

async function call(t: Tenant, tool: string, body: string | Uint8Array, key = t.key) {
  const res = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "s1" }, body });
  return { status: res.status, body: (await res.json()) as any };
}
const json = (t: Tenant, tool: string, args: unknown, key?: string) => call(t, tool, JSON.stringify(args), key);

async function bucket(): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ ...(cursor ? { cursor } : {}) });
    // A refused call leaves its audit entry (docs/audit.md): everything else must stay.
    out.push(...page.objects.filter((o) => !/\/audit\//.test(o.key)).map((o) => `${o.key} ${o.etag}`));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out.sort();
}

describe("null for an optional argument means absent", () => {
  it("at the top level (OpenAI strict mode sends every property)", async () => {
    const t = await newTenant(app);
    await upload(t, "a.txt", "one\ntwo\n");
    const r = await json(t, "read", { file_path: "a.txt", offset: null, limit: null, encoding: null });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ start_line: 1, lines_returned: 2 });
    const g = await json(t, "grep", { pattern: "two", path: null, glob: null, type: null, output_mode: null, case_insensitive: null, literal: null, context: null, before: null, after: null, multiline: null, head_limit: null, offset: null, include_hidden: null, include_ignored: null });
    expect(g.status, JSON.stringify(g.body)).toBe(200);
  });

  it("nested: multi_edit's edits[i].replace_all", async () => {
    const t = await newTenant(app);
    await upload(t, "m.txt", "a a\nb\n");
    expect((await json(t, "read", { file_path: "m.txt" })).status).toBe(200);
    const r = await json(t, "multi_edit", { file_path: "m.txt", edits: [{ old_string: "b", new_string: "c", replace_all: null }, { old_string: "a", new_string: "z", replace_all: true }] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/m.txt`)).text()).toBe("z z\nc\n");
  });

  it("for a required argument it is still an error; the schemas the model sees stay as they were", async () => {
    const t = await newTenant(app);
    const r = await json(t, "read", { file_path: null });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    expect(r.body.error.message).toMatch(/file_path/);
    // No tool's input schema mentions null: the wrapper accepts it, the schema does not advertise it.
    const catalog = (await (await app.request("/v1/tools")).json()) as any;
    for (const def of catalog.tools) expect(JSON.stringify(def.input_schema), def.name).not.toMatch(/"null"/);
    const doc = (await (await app.request("/openapi.json")).json()) as any;
    const readBody = doc.paths["/v1/workspaces/{ws}/tools/read"].post.requestBody.content["application/json"].schema;
    expect(JSON.stringify(readBody)).not.toMatch(/"null"/);
  });
});

describe("unknown and missing arguments", () => {
  it("an unknown argument is INVALID_ARGUMENT naming it, the closest known one and all of them; nothing runs", async () => {
    const t = await newTenant(app);
    await upload(t, "a.txt", "x\n");
    const r = await json(t, "read", { file_path: "a.txt", ofset: 5 });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    expect(r.body.error.message).toContain("Unknown argument 'ofset'. Did you mean 'offset'? Known: file_path, offset, limit, encoding");
    expect(r.body.error.details.issues).toEqual([expect.objectContaining({ path: "ofset" })]);
    // camelCase and other spellings of a known name
    const c = await json(t, "read", { filePath: "a.txt" });
    expect(c.body.error.message).toContain("Unknown argument 'filePath'. Did you mean 'file_path'?");
    expect(c.body.error.message).toMatch(/missing required argument file_path/i);
    // Nothing close: no guess, still the list.
    const far = await json(t, "read", { file_path: "a.txt", zzzzzzzz: 1 });
    expect(far.body.error.message).toContain("Unknown argument 'zzzzzzzz'. Known: file_path, offset, limit, encoding");
    // A write with a typo writes nothing.
    const before = await bucket();
    const w = await json(t, "write", { file_path: "new.txt", content: "x", encodng: "base64" });
    expect(w.status).toBe(400);
    expect(w.body.error.message).toContain("Did you mean 'encoding'?");
    expect(await bucket()).toEqual(before);
  });

  it("names other tools use: the argument this tool has for it, never one it lacks", async () => {
    const t = await newTenant(app, { scopes: [...SCOPES] });
    const cases: [string, Record<string, unknown>, string, string][] = [
      ["read", { path: "a.txt" }, "path", "file_path"],
      ["write", { file_path: "a.txt", text: "x" }, "text", "content"],
      ["insert", { file_path: "a.txt", insert_line: 0, content: "x" }, "content", "text"],
      ["delete", { file_path: "a.txt" }, "file_path", "path"],
      ["ls", { file_path: "." }, "file_path", "path"],
      ["move", { source: "a", destination: "b" }, "source", "from"],
      ["move", { source: "a", destination: "b" }, "destination", "to"],
      ["copy", { src: "a", dst: "b" }, "src", "from"],
      ["copy", { src: "a", dst: "b" }, "dst", "to"],
      ["find", { name: "*.ts" }, "name", "pattern"],
      ["grep", { query: "x" }, "query", "pattern"],
      ["grep", { regex: "x" }, "regex", "pattern"],
      ["glob", { glob: "*.ts" }, "glob", "pattern"],
      ["edit", { file_path: "a.txt", old: "a", new: "b" }, "old", "old_string"],
      ["edit", { file_path: "a.txt", old: "a", new: "b" }, "new", "new_string"],
      ["edit", { file_path: "a.txt", oldStr: "a", new_str: "b" }, "oldStr", "old_string"],
      ["bash", { cmd: "ls" }, "cmd", "command"],
      ["bash", { command: "ls", cwd: "src" }, "cwd", "working_dir"],
      ["web_search", { q: "rust" }, "q", "query"],
      ["kill_shell", { shell_id: "x" }, "shell_id", "task_id"],
      // Claude Code's Grep flags (ripgrep's): -i, -A, -B, -C
      ["grep", { pattern: "x", "-i": true }, "-i", "case_insensitive"],
      ["grep", { pattern: "x", "-A": 2 }, "-A", "after"],
      ["grep", { pattern: "x", "-B": 2 }, "-B", "before"],
      ["grep", { pattern: "x", "-C": 2 }, "-C", "context"],
    ];
    for (const [tool, args, wrong, meant] of cases) {
      const r = await json(t, tool, args);
      expect(r.status, `${tool} ${wrong}`).toBe(400);
      expect(r.body.error.message, `${tool} ${wrong}`).toMatch(new RegExp(`Unknown argument '${wrong}'\\. Did you mean '${meant}'\\? Known: `));
    }
    // A synonym whose meanings the tool lacks: no guess (ls has no pattern, and nothing close to 'query').
    const none = await json(t, "ls", { query: "x" });
    expect(none.body.error.message).toContain("Unknown argument 'query'. Known: path, recursive, show_hidden, limit, cursor");
    // Nested: multi_edit's edits[i].
    const nested = await json(t, "multi_edit", { file_path: "m.txt", edits: [{ old: "a", new_string: "b" }] });
    expect(nested.body.error.message).toContain("Unknown argument 'edits[0].old'. Did you mean 'old_string'? Known: old_string, new_string, replace_all");
  });

  it("nested unknown arguments are named with their path", async () => {
    const t = await newTenant(app);
    const r = await json(t, "multi_edit", { file_path: "m.txt", edits: [{ old_string: "a", new_string: "b" }, { old_string: "a", new_string: "b", replaceAll: true }] });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain("Unknown argument 'edits[1].replaceAll'. Did you mean 'replace_all'? Known: old_string, new_string, replace_all");
  });

  it("a missing required argument says so, in those words, not 'expected string, received undefined'", async () => {
    const t = await newTenant(app);
    const r = await json(t, "read", {});
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/missing required argument file_path/i);
    expect(r.body.error.message).not.toMatch(/undefined/);
    expect(r.body.error.details.issues).toEqual([{ path: "file_path", message: "Missing required argument file_path" }]);
    const m = await json(t, "multi_edit", { file_path: "m.txt", edits: [{ old_string: "a" }] });
    expect(m.body.error.message).toMatch(/missing required argument edits\[0\]\.new_string/i);
    expect(m.body.error.message).not.toMatch(/undefined/);
    // Other validation errors keep zod's words, with the argument's path.
    const z = await json(t, "read", { file_path: "a.txt", limit: 0 });
    expect(z.body.error.details.issues[0].path).toBe("limit");
  });

  it("every tool: unknown arguments are refused, and each of its optional arguments may be null", async () => {
    // A key with every scope, so that every tool (web_* need 'network') gets past the guard to its arguments.
    const t = await newTenant(app, { scopes: [...SCOPES] });
    for (const tool of tools) {
      const r = await json(t, tool.name, { not_an_argument_of_any_tool: true });
      expect(r.status, tool.name).toBe(400);
      expect(r.body.error.message, tool.name).toContain("Unknown argument 'not_an_argument_of_any_tool'");
    }
    // Nulls pass the wrapper: whatever a tool answers then, it is not about the nulls.
    for (const tool of tools) {
      const schema = (await (await app.request("/v1/tools")).json() as any).tools.find((d: any) => d.name === tool.name).input_schema;
      const optional = Object.keys(schema.properties).filter((p) => !(schema.required ?? []).includes(p));
      if (!optional.length) continue;
      const r = await json(t, tool.name, Object.fromEntries(optional.map((p) => [p, null])));
      for (const p of optional) expect(JSON.stringify(r.body.error?.details?.issues ?? []), `${tool.name}.${p}`).not.toContain(`"path":"${p}"`);
    }
  });
});

describe("an unknown tool", () => {
  it("is 404 NOT_FOUND with the closest name and the tools this key can use", async () => {
    const t = await newTenant(app);
    const r = await json(t, "raed", { file_path: "a.txt" });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ ok: false, tool: "raed", error: { code: "NOT_FOUND" } });
    expect(r.body.error.message).toContain("Did you mean 'read'?");
    expect(r.body.error.details.available).toEqual(tools.filter((x) => ["read", "write", "execute"].includes(x.permission)).map((x) => x.name));
    expect(r.body.usage).toMatchObject({ bytes_read: 0, bytes_written: 0 });
  });

  it("lists only the tools of the key's scopes; a close name the key may not use says so", async () => {
    const t = await newTenant(app, { scopes: ["read"] });
    const r = await json(t, "writ", { file_path: "a.txt", content: "x" });
    expect(r.status).toBe(404);
    const readOnly = tools.filter((x) => x.permission === "read").map((x) => x.name);
    expect(r.body.error.details.available).toEqual(readOnly);
    expect(r.body.error.message).toContain(`Tools this key can use: ${readOnly.join(", ")}`);
    expect(r.body.error.message).toContain("Did you mean 'write'? (not usable here: The write tool needs the 'write' scope");
  });

  it("needs a valid key, like every tool", async () => {
    const t = await newTenant(app);
    const r = await json(t, "nope", {}, "tsk_bogus");
    expect(r.status).toBe(401);
  });

  it("a name with a slash, an encoded one, or none: the same NOT_FOUND, the name as sent (decoded)", async () => {
    const t = await newTenant(app);
    const deeper = await json(t, "read/extra", { file_path: "a.txt" });
    expect(deeper.status).toBe(404);
    expect(deeper.body).toMatchObject({ ok: false, tool: "read/extra", error: { code: "NOT_FOUND", details: { tool: "read/extra" } } });
    const encoded = await json(t, "r%C3%A9ad", {});
    expect(encoded.body).toMatchObject({ tool: "réad", error: { code: "NOT_FOUND", details: { tool: "réad", similar: "read" } } });
    const malformed = await json(t, "re%E0ad", {});
    expect(malformed.body).toMatchObject({ error: { code: "NOT_FOUND", details: { tool: "re%E0ad" } } });
    const none = await json(t, "", {});
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe("NOT_FOUND");
  });
});

describe("invalid UTF-8 in a JSON body", () => {
  const withBadByte = (prefix: string, suffix: string) => {
    const enc = new TextEncoder();
    const a = enc.encode(prefix);
    const b = enc.encode(suffix);
    return { bytes: new Uint8Array([...a, 0xff, ...b]), at: a.length };
  };

  it("a tool call: refused with the byte offset, nothing stored (no U+FFFD)", async () => {
    const t = await newTenant(app);
    const before = await bucket();
    const { bytes, at } = withBadByte('{"file_path":"bad.txt","content":"caf\u00e9 ', ' end"}');
    const r = await call(t, "write", bytes);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("INVALID_ARGUMENT");
    expect(r.body.error.message).toContain("not valid UTF-8");
    expect(r.body.error.message).toContain(`offset ${at}`);
    expect(r.body.error.details.byte_offset).toBe(at);
    expect(r.body.tool).toBe("write");
    expect(await bucket()).toEqual(before);
    // Valid multi-byte text (2, 3 and 4 bytes) goes through unchanged.
    const ok = await json(t, "write", { file_path: "good.txt", content: "caf\u00e9 \u20ac \u{1F600}" });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(await (await t.req(`/v1/workspaces/${t.ws}/files/good.txt`)).text()).toBe("caf\u00e9 \u20ac \u{1F600}");
  });

  it("the workspace and admin routes: the same answer, nothing created", async () => {
    const t = await newTenant(app);
    const before = await bucket();
    const ws = withBadByte('{"id":"ws-x","name":"', '"}');
    const w = await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json" }, body: ws.bytes });
    expect(w.status).toBe(400);
    expect(((await w.json()) as any).error).toMatchObject({ code: "INVALID_ARGUMENT", details: { byte_offset: ws.at } });
    const tn = withBadByte('{"id":"tn-x","name":"', '"}');
    const a = await app.request("/v1/admin/tenants", { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: tn.bytes });
    expect(a.status).toBe(400);
    expect(((await a.json()) as any).error).toMatchObject({ code: "INVALID_ARGUMENT", details: { byte_offset: tn.at } });
    const k = await app.request(`/v1/admin/tenants/${t.tenant}/keys`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` }, body: tn.bytes });
    expect(k.status).toBe(400);
    expect(await bucket()).toEqual(before);
  });
});

describe("the body of a tool call", () => {
  it("needs a JSON content type; an empty body is no arguments", async () => {
    const t = await newTenant(app);
    const send = (headers: Record<string, string>, body?: string) =>
      app.request(`/v1/workspaces/${t.ws}/tools/ls`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, ...headers }, ...(body !== undefined ? { body: new TextEncoder().encode(body) } : {}) });
    for (const h of [{ "content-type": "text/plain" }, {}] as Record<string, string>[]) {
      const r = await send(h, "{}");
      expect(r.status, JSON.stringify(h)).toBe(400);
      expect(((await r.json()) as any).error.message).toMatch(/Content-Type: application\/json/);
    }
    expect((await send({})).status).toBe(200);
    expect((await send({ "content-type": "application/json" }, "")).status).toBe(200);
    expect((await send({ "content-type": "application/json" }, "null")).status).toBe(400);
  });
});

describe("utf8ErrorOffset", () => {
  it("finds the first bad byte of each kind", () => {
    const cases: [number[], number][] = [
      [[0x61, 0x62], -1],
      [[0xc3, 0xa9], -1], // é
      [[0xe2, 0x82, 0xac], -1], // €
      [[0xf0, 0x9f, 0x98, 0x80], -1], // 😀
      [[0x61, 0xff], 1],
      [[0x61, 0xc0, 0x80], 1], // overlong NUL
      [[0xe0, 0x80, 0x80], 0], // overlong
      [[0xed, 0xa0, 0x80], 0], // a surrogate
      [[0xf4, 0x90, 0x80, 0x80], 0], // above U+10FFFF
      [[0x61, 0x62, 0xe2, 0x82], 2], // cut short at the end
      [[0x80], 0], // a lone continuation byte
    ];
    for (const [bytes, at] of cases) expect(utf8ErrorOffset(new Uint8Array(bytes)), JSON.stringify(bytes)).toBe(at);
  });

  it("agrees with a strict TextDecoder on random bytes, and the offset is where decoding first fails", () => {
    const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
    for (let i = 0; i < 3000; i++) {
      const bytes = new Uint8Array(1 + (i % 12));
      crypto.getRandomValues(bytes);
      // Bias toward mostly valid text: keep some bytes ASCII.
      for (let j = 0; j < bytes.length; j += 3) bytes[j] = bytes[j]! & 0x7f;
      let valid = true;
      try {
        strict.decode(bytes);
      } catch {
        valid = false;
      }
      const at = utf8ErrorOffset(bytes);
      expect(at === -1, Array.from(bytes).join(",")).toBe(valid);
      if (at >= 0) {
        // Everything before the offset decodes; the offset itself starts a bad sequence.
        expect(() => strict.decode(bytes.subarray(0, at))).not.toThrow();
      }
    }
  });

  it("parseJsonBytes: empty is no body, a BOM is dropped, bad JSON says so", () => {
    expect(parseJsonBytes(new Uint8Array()).value).toBeUndefined();
    expect(parseJsonBytes(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d])).value).toEqual({});
    expect(() => parseJsonBytes(new TextEncoder().encode("{nope"))).toThrow(/not valid JSON/);
  });
});
