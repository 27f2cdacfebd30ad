/**
 * Every door that takes a path refuses one that would leave the workspace with the same error:
 * INVALID_PATH, the message normalizePath gives (lib/layout/paths.ts, the one path function), and
 * nothing written. The doors: the raw files route (GET, PUT, DELETE; the URL's own escapes decoded
 * first), the tool route, batch uploads, MCP tools/call, the Anthropic and OpenAI compat routes,
 * import's prefix and export's path, and the runner's sync API (a file, a fetch). Archive entries
 * that escape are skipped and named instead (test/lib/archive/hostile.test.ts). Real local R2/KV.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { normalizePath } from "../../../lib/layout/paths.js";
import { ToolError } from "../../../lib/shared/errors.js";
import { fakeLiveRunner } from "../../support/fake-live-runner.js";
import { newTenant, testApp, UNGATED, upload } from "../../helpers.js";
import { compat } from "../api/routes/compat-helpers.js";
import { tar } from "../archive/archives.js";

const ESCAPES = ["../outside.txt", "a/../../outside.txt", "/../outside.txt", "./../../t/other/w/main/f/x"];

/** What the one path function says of `path`. */
function refusal(path: string): string {
  try {
    normalizePath(path);
  } catch (e) {
    if (e instanceof ToolError && e.code === "INVALID_PATH") return e.message;
  }
  throw new Error(`${path} is not refused by normalizePath`);
}

async function objectKeys(prefix: string): Promise<string[]> {
  return (await env.FILES.list({ prefix })).objects.map((o) => o.key).filter((k) => !k.includes("/audit/") && !k.includes("/x/")).sort();
}

describe("an escaping path is refused alike by every door", () => {
  it("INVALID_PATH with normalizePath's message, nothing written, whatever the door", async () => {
    const runner = fakeLiveRunner(); // its fresh runs keep their requests: the run's sync token
    const runs = runner.fresh;
    const app = testApp({ executor: runner.executor, syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://toolshed.internal" });
    const t = await newTenant(app, UNGATED);
    await upload(t, "a/in.txt", "inside\n");
    expect((await t.call("bash", { command: "true" })).status).toBe(200);
    const token = runs[0]!.sync.token;
    const before = await objectKeys(`t/${t.tenant}/`);
    const json = { "content-type": "application/json" };
    for (const path of ESCAPES) {
      const expected = refusal(path);
      const seen: [string, { code?: string | null; message?: string }][] = [];
      const envelope = async (door: string, r: Response | Promise<Response>) => {
        const body = (await (await r).json()) as any;
        seen.push([door, { code: body.error?.code, message: body.error?.message }]);
      };
      // Its slashes escaped: a URL's own dot segments (also %2E%2E) are resolved by the URL parser before any route sees them.
      const url = encodeURIComponent(path);
      await envelope("raw GET", t.req(`/v1/workspaces/${t.ws}/files/${url}`));
      await envelope("raw PUT", t.req(`/v1/workspaces/${t.ws}/files/${url}`, { method: "PUT", headers: { "content-length": "1" }, body: "x" }));
      await envelope("raw DELETE", t.req(`/v1/workspaces/${t.ws}/files/${url}`, { method: "DELETE" }));
      await envelope("tool write", t.req(`/v1/workspaces/${t.ws}/tools/write`, { method: "POST", headers: json, body: JSON.stringify({ file_path: path, content: "x" }) }));
      await envelope("tool read", t.req(`/v1/workspaces/${t.ws}/tools/read`, { method: "POST", headers: json, body: JSON.stringify({ file_path: path }) }));
      await envelope("uploads", t.req(`/v1/workspaces/${t.ws}/uploads`, { method: "POST", headers: { "content-type": "application/x-ndjson" }, body: `${JSON.stringify({ path, content: "x" })}\n` }));
      await envelope("import prefix", t.req(`/v1/workspaces/${t.ws}/import?prefix=${encodeURIComponent(path)}`, { method: "POST", headers: { "content-type": "application/x-tar" }, body: tar([{ name: "f.txt", body: "x" }]) }));
      await envelope("export path", t.req(`/v1/workspaces/${t.ws}/export?path=${encodeURIComponent(path)}`));
      await envelope("sync file", app.request(`/v1/sync/files/${url}`, { headers: { authorization: `Bearer ${token}` } }));
      await envelope("sync fetch", app.request("/v1/sync/fetch", { method: "POST", headers: { authorization: `Bearer ${token}`, ...json }, body: JSON.stringify({ paths: [path] }) }));
      const mcp = (await (await t.req(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { ...json, accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "write", arguments: { file_path: path, content: "x" } } }) })).json()) as any;
      const mcpText = mcp.result.content[0].text as string;
      seen.push(["mcp tools/call", { code: mcpText.split(":")[0], message: mcpText.slice(mcpText.indexOf(":") + 1).trim() }]);
      const anthropic = await compat(t, "anthropic", "str_replace_based_edit_tool", { command: "create", path, file_text: "x" });
      seen.push(["anthropic create", { code: anthropic.code }]);
      const openai = await compat(t, "openai", "apply_patch", { type: "apply_patch_call", call_id: "c1", operation: { type: "create_file", path, diff: "+x\n" } });
      seen.push(["openai apply_patch", { code: openai.code }]);
      for (const [door, got] of seen) {
        expect(got.code, `${door}: ${path}`).toBe("INVALID_PATH");
        if (got.message !== undefined) expect(got.message, `${door}: ${path}`).toContain(expected.slice(0, expected.indexOf(":")));
        if (got.message !== undefined) expect(got.message, `${door}: ${path}`).toContain("'..' would leave the workspace");
      }
    }
    expect(await objectKeys(`t/${t.tenant}/`)).toEqual(before);
  });
});
