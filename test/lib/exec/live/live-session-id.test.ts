/**
 * Session ids a URL path cannot name (docs/live-sessions.md, "who gets one"): "." and ".." are dot
 * segments that clients and the runtime resolve away, so GET/DELETE .../sessions/{session}/sandbox
 * could never reach a live sandbox started under them (it held a concurrent_runs slot until its idle
 * end). Every door refuses them with one 400 before anything starts; "..." and other ids stay usable.
 */
import { describe, expect, it } from "vitest";
import { newTenant, UNGATED } from "../../../helpers.js";
import { liveApp, okOutput } from "./live-app.js";

const MESSAGE = /Invalid X-Session-Id: use 1-128 characters .*not "\." or "\.\." alone/;

describe("session ids a URL cannot name", () => {
  it("'.' and '..' are 400 INVALID_ARGUMENT at every door (tools, compat, MCP); no sandbox starts; '...' is a session like any", async () => {
    const { app, runner } = liveApp();
    const t = await newTenant(app, UNGATED);
    const post = (path: string, session: string, body: unknown, headers: Record<string, string> = {}) =>
      t.req(`/v1/workspaces/${t.ws}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session, ...headers }, body: JSON.stringify(body) });
    for (const session of [".", ".."]) {
      const tool = await t.call("bash", { command: "echo hi", keep_alive: true }, session);
      expect(tool.status).toBe(400);
      expect(tool.body.error.code).toBe("INVALID_ARGUMENT");
      expect(tool.body.error.message).toMatch(MESSAGE);
      expect((await t.call("run_code", { language: "bash", code: "echo hi", keep_alive: true }, session)).status).toBe(400);
      const anthropic = await post("/compat/anthropic/bash", session, { command: "echo hi" }, { "x-toolshed-keep-alive": "true" });
      expect(anthropic.status).toBe(400);
      expect(((await anthropic.json()) as any).error.message).toMatch(MESSAGE);
      expect((await post("/compat/openai/shell", session, { commands: ["echo hi"] })).status).toBe(400);
      const mcp = await post("/mcp", session, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "bash", arguments: { command: "echo hi", keep_alive: true } } }, { accept: "application/json, text/event-stream" });
      expect(mcp.status).toBe(400);
      expect(((await mcp.json()) as any).error.message).toMatch(MESSAGE);
    }
    expect(runner.generations).toHaveLength(0);

    // Three dots name no dot segment: a session like any other, shown and ended by its route.
    expect(okOutput(await t.call("bash", { command: "echo hi", keep_alive: true }, "..."))).toMatch(/live sandbox started/);
    expect((await t.req(`/v1/workspaces/${t.ws}/sessions/.../sandbox`)).status).toBe(200);
    expect((await t.req(`/v1/workspaces/${t.ws}/sessions/.../sandbox`, { method: "DELETE" })).status).toBe(200);
  });
});
