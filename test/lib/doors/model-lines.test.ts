/**
 * The file tools' lines that tell the model what to do next reach the text it reads through every door
 * that runs the tool, not only the HTTP tool route (invariant 11): read's cut-line note, edit's and
 * apply_patch's Unicode-normalization lines, grep's symlink note and read's base64 refusal, through
 * MCP's tools/call (the official 1.x client over app.request), OpenAI's apply_patch (the item and a patch
 * sent through the shell as `apply_patch <<'EOF'`). The text editor's view and str_replace say them in
 * its own words: compat-anthropic-words.test.ts. bash's lines by every door, with the real sandbox:
 * model-lines.node.test.ts. Workers runtime, local R2 and KV.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { newTenant, UNGATED, upload, type Tenant } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { importReq } from "../archive/helpers.js";
import { compat } from "../api/routes/compat-helpers.js";

async function mcp(t: Tenant): Promise<{ call: (name: string, args: Record<string, unknown>) => Promise<{ text: string; isError: boolean }>; close: () => Promise<void> }> {
  const client = new Client({ name: "model-lines", version: "1.0.0" });
  const url = new URL(`http://127.0.0.1/v1/workspaces/${t.ws}/mcp`);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${t.key}`, "x-session-id": "s1" } }, fetch: async (input, init) => t.app.request(String(input), init as RequestInit) }));
  return {
    call: async (name, args) => {
      const r = await client.callTool({ name, arguments: args });
      return { text: (r.content as { type: string; text: string }[]).map((c) => c.text).join(""), isError: r.isError === true };
    },
    close: () => client.close(),
  };
}

const NFD = (s: string) => s.normalize("NFD");

describe("MCP's tools/call: the lines are in the content's text, as in the HTTP route's output", () => {
  it("read's cut-line note; edit's and multi_edit's Unicode line; grep's symlink note; read's base64 refusal", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "min.js", `${"a".repeat(2500)}\nok\n`);
    await upload(t, "names.txt", NFD("José\nZoë\n"));
    await upload(t, "blob.bin", new Uint8Array(70 * 1024));
    expect((await importReq(t, tar([{ name: "alias.txt", type: "2", linkname: "names.txt" }]))).status).toBe(200);
    const m = await mcp(t);
    try {
      // Read-only calls: the same text by both doors, the line in it.
      for (const [name, args, line] of [
        ["read", { file_path: "min.js" }, "[1 line longer than 2000 characters was cut (the first: line 1); read shows no more of a line."],
        ["grep", { pattern: "J", glob: "*.txt" }, "1 symlink, not followed"],
      ] as const) {
        const r = await m.call(name, args);
        expect(r.isError, `${name}: ${r.text}`).toBe(false);
        expect(r.text, name).toContain(line);
        expect(r.text, name).toBe((await t.call(name, args)).body.output);
      }
      expect((await m.call("read", { file_path: "names.txt" })).isError).toBe(false);
      for (const [name, args] of [
        ["edit", { file_path: "names.txt", old_string: "José", new_string: "Ana" }],
        ["multi_edit", { file_path: "names.txt", edits: [{ old_string: "Zoë", new_string: "Zoe" }] }],
      ] as const) {
        const r = await m.call(name, args);
        expect(r.isError, `${name}: ${r.text}`).toBe(false);
        expect(r.text, name).toContain("[old_string matched only with Unicode normalized (NFC)");
      }
      const b64 = await m.call("read", { file_path: "blob.bin", encoding: "base64" });
      expect(b64.isError).toBe(true);
      expect(b64.text).toMatch(/^FILE_TOO_LARGE: blob\.bin is 71680 bytes; base64 reads return at most 65536: look at parts of it with bash \(file, xxd -s <offset> -l <length> \/workspace\/blob\.bin\)/);
    } finally {
      await m.close();
    }
  });
});

describe("OpenAI's apply_patch: the loose-match line is in the item's output", () => {
  const patch = (path: string) => `*** Begin Patch\n*** Update File: ${path}\n@@\n-José\n+Ana\n*** End Patch`;

  it("as an apply_patch_call item and as `apply_patch <<'EOF'` through the shell", async () => {
    const t = await newTenant(undefined, UNGATED);
    await upload(t, "a.txt", NFD("José\n"));
    await upload(t, "b.txt", NFD("José\n"));
    const item = await compat(t, "openai", "apply_patch", { patch: patch("a.txt") });
    expect(item.body).toMatchObject({ type: "apply_patch_call_output", status: "completed" });
    expect(item.body.output).toBe("Success. Updated the following files:\nM a.txt\nMatched loosely (whitespace, punctuation or the Unicode spelling of accented letters differed): hunk 1 of a.txt (line 1). Read those lines to check the result.");
    const shell = await compat(t, "openai", "shell", { commands: [`apply_patch <<'EOF'\n${patch("b.txt")}\nEOF`] });
    expect(shell.body.output[0]).toMatchObject({ outcome: { type: "exit", exit_code: 0 }, stderr: "" });
    expect(shell.body.output[0].stdout).toContain("Matched loosely (whitespace, punctuation or the Unicode spelling of accented letters differed): hunk 1 of b.txt (line 1).");
  });
});
