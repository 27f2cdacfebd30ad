/**
 * The approval gate sees the file a call acts on, also through a symlink: a tool that opens its
 * file_path follows a workspace link on a miss (docs/symlinks.md) and runs again on the target, and
 * that second run passes the gate again with the path it now acts on (lib/run/run-tool.ts). Before,
 * a tenant's `overwrite` rule was asked about the link's own path (no object there), so a model
 * that made a link (`ln -s`, an import) wrote or edited through it over an existing file, or a file
 * under a linked directory, without approval, where the same call naming the file was held.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { newTenant, testApp } from "../../../helpers.js";
import { tar } from "../../archive/archives.js";
import { importReq } from "../../archive/helpers.js";
import { answer, approverKey, held, readFile } from "./approval-helpers.js";

const OVERWRITE_GATE = { gate: [{ tool: "write", when: "overwrite" }, { tool: "edit", when: "overwrite" }] };

async function linkedWorkspace() {
  const app = testApp();
  const t = await newTenant(app, { policy: OVERWRITE_GATE });
  const imported = await importReq(t, tar([{ name: "important.txt", body: "keep me\n" }, { name: "d/x.txt", body: "x\n" }, { name: "l", type: "2", linkname: "important.txt" }, { name: "dl", type: "2", linkname: "d" }]));
  expect(imported.status).toBe(200);
  return { app, t };
}

describe("the overwrite gate through a symlink", () => {
  it("a write through a link to an existing file is held like the same write naming the file; nothing is written before approval", async () => {
    const { t } = await linkedWorkspace();
    expect((await t.call("write", { file_path: "important.txt", content: "direct\n" })).status).toBe(202);
    expect((await t.call("read", { file_path: "l" })).status).toBe(200); // read-before-write: the link's target is read
    const d = held(await t.call("write", { file_path: "l", content: "through the link\n" }));
    expect(d.reason).toContain("important.txt");
    expect(await readFile(t, "important.txt")).toBe("keep me\n");
    // Approved, it runs on the file it names (the link's target), as the human saw it.
    const a = await answer(t, await approverKey(t.app, t.tenant), d.pending_id, { approved: true });
    expect(a.body.outcome, JSON.stringify(a.body.outcome)).toMatchObject({ ok: true, data: { file_path: "important.txt" } });
    expect(await readFile(t, "important.txt")).toBe("through the link\n");
  });

  it("an edit of a file under a linked directory is held; a new file through the link is no overwrite and runs", async () => {
    const { t } = await linkedWorkspace();
    expect((await t.call("read", { file_path: "dl/x.txt" })).status).toBe(200);
    held(await t.call("edit", { file_path: "dl/x.txt", old_string: "x", new_string: "changed" }));
    expect(await readFile(t, "d/x.txt")).toBe("x\n");
    const made = await t.call("write", { file_path: "dl/new.txt", content: "new\n" });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(await readFile(t, "d/new.txt")).toBe("new\n");
  });

  it("over MCP (the official SDK client) the write through the link is held the same way", async () => {
    const { t } = await linkedWorkspace();
    const client = new Client({ name: "gate-symlinks", version: "1" });
    const url = new URL(`http://localhost/v1/workspaces/${t.ws}/mcp`);
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${t.key}`, "x-session-id": "s1" } }, fetch: async (input, init) => t.app.request(String(input), init as RequestInit) }));
    try {
      expect((await client.callTool({ name: "read", arguments: { file_path: "l" } })).isError).toBeFalsy();
      const r: any = await client.callTool({ name: "write", arguments: { file_path: "l", content: "through MCP\n" } });
      expect(r.isError).toBe(true);
      expect(r._meta["toolshed/error"].code).toBe("NEEDS_APPROVAL");
      expect(await readFile(t, "important.txt")).toBe("keep me\n");
    } finally {
      await client.close();
    }
  });
});
