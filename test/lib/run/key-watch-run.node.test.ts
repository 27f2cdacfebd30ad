/**
 * A foreground command of a key revoked while it runs (lib/run/key-watch.ts): the real sandbox, the
 * SSE door. The command prints a line, then sleeps; once that line has streamed the key is revoked,
 * and the call ends killed with UNAUTHORIZED key_gone, not at the command's end with its output.
 * The doors that do not stream (plain JSON, Anthropic's compat bash, MCP tools/call without a
 * progressToken) take the same rule: answered at once, the run killed, nothing written back.
 */
import { afterAll, describe, expect, it } from "vitest";
import { readEvents } from "../../support/sse-events.js";
import { ADMIN, sandboxApp } from "../doors/sandbox-app.js";

const { app, deps, post, call, tenant, close } = sandboxApp({ keyWatchMs: 20 });
/** What the model reads of a command killed for its key (lib/run/key-watch.ts keyGoneError). */
const KILLED = "so its command was killed and its file changes in the sandbox were dropped, not written back";
afterAll(close);

describe("a foreground command outlives no key", () => {
  it("revoked while its command runs: the run is killed and the call answers key_gone", async () => {
    const t = await tenant("kwrun");
    const res = await app.request("/v1/workspaces/main/tools/bash", {
      method: "POST",
      headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ command: "echo started; sleep 60; echo finished", timeout: 120 }),
    });
    let revoked: Promise<unknown> | null = null;
    const events = await readEvents(res, (e) => {
      if (!revoked && e.event === "progress" && JSON.stringify(e.data).includes("started")) revoked = post(`/v1/admin/tenants/${t.id}/keys/${t.keyId}`, undefined, ADMIN, "DELETE");
    });
    await revoked;
    const result = events.at(-1)!;
    expect(result.event).toBe("result");
    expect(result.data.error, JSON.stringify(result.data)).toMatchObject({ code: "UNAUTHORIZED", details: { refused_by: "key_gone" } });
    // The refusal says what became of the command: killed, its changes dropped (not "what it did so far stays").
    expect(result.data.error.message).toContain(KILLED);
    expect(result.data.error.message).not.toContain("what it did so far stays");
    expect(JSON.stringify(events)).not.toContain("finished");
  }, 120_000);
});

/** When each tenant's run ended (killed, or at the command's end): the executor's run resolves then. */
const runEnded = new Map<string, number>();
const executor = deps.executor!;
const run = executor.run.bind(executor);
executor.run = (req, caller) => run(req, caller).finally(() => runEnded.set(req.tenant, Date.now()));

/**
 * A non-streamed call (plain JSON over HTTP, or a compat door) of `sleep 6; echo done > f`, its key revoked 1 s in;
 * each in a tenant of its own, so the calls run at once.
 */
async function revokedMidRun(id: string, path: string, args: Record<string, unknown>, headers: Record<string, string> = {}) {
  const t = await tenant(id);
  const started = Date.now();
  const answer = app.request(path, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", ...headers }, body: JSON.stringify(args) });
  await new Promise((r) => setTimeout(r, 1000));
  expect((await post(`/v1/admin/tenants/${t.id}/keys/${t.keyId}`, undefined, ADMIN, "DELETE")).status).toBeLessThan(300);
  const res = await answer;
  const answeredMs = Date.now() - started;
  const body = (await res.json()) as any;
  // The command would have written f at 6 s; past that (its runner killed, or done) f is looked for with another key.
  await new Promise((r) => setTimeout(r, Math.max(0, 8000 - (Date.now() - started))));
  const f = await call("/v1/workspaces/main/files/f", {}, t.approver);
  const ended = runEnded.get(t.id);
  return { status: res.status, runEndedMs: ended === undefined ? -1 : ended - started, errorCode: res.headers.get("x-toolshed-error-code"), body, answeredMs, fileStatus: f.status };
}

describe.concurrent("a non-streamed foreground command outlives no key either", () => {
  it("plain HTTP: answers 401 key_gone at once, the command is killed and f is never written", async () => {
    const r = await revokedMidRun("kwplain", "/v1/workspaces/main/tools/bash", { command: "sleep 6; echo done > f", timeout: 30 });
    expect(r.status, JSON.stringify(r.body)).toBe(401);
    expect(r.body.error).toMatchObject({ code: "UNAUTHORIZED", details: { refused_by: "key_gone" } });
    // Killed, its changes dropped; a write-back already under way would be journaled under the call's call_id, named for undo.
    expect(r.body.error.message).toContain(KILLED);
    expect(r.body.error.details.call_id).toEqual(expect.any(String));
    expect(r.body.error.message).toContain(`{"call_id": "${r.body.error.details.call_id}"}`);
    expect(r.answeredMs).toBeLessThan(4000);
    // Killed at the runner's first look at its kill flag (4 s into the run), not at the command's end (6 s).
    expect(r.runEndedMs).toBeGreaterThan(0);
    expect(r.runEndedMs).toBeLessThan(6000);
    expect(r.fileStatus).toBe(404);
  }, 60_000);

  it("Anthropic's compat bash, through the same rule: the refusal at once (the door's tool_result error), f never written", async () => {
    const r = await revokedMidRun("kwcompat", "/v1/workspaces/main/compat/anthropic/bash", { command: "sleep 6; echo done > f" });
    // The compat door answers a tool's error as the provider's tool_result (HTTP 200, is_error): the model reads the refusal.
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ type: "tool_result", is_error: true });
    expect(r.errorCode).toBe("UNAUTHORIZED");
    expect(r.body.content[0].text).toContain("was revoked or has expired since it started");
    expect(r.body.content[0].text).toContain(KILLED);
    expect(r.answeredMs).toBeLessThan(4000);
    expect(r.fileStatus).toBe(404);
  }, 60_000);

  it("MCP tools/call without a progressToken, through the same rule: the refusal at once (isError, UNAUTHORIZED key_gone), f never written", async () => {
    const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "bash", arguments: { command: "sleep 6; echo done > f", timeout: 30 } } };
    const r = await revokedMidRun("kwmcp", "/v1/workspaces/main/mcp", call, { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.result?.isError, JSON.stringify(r.body)).toBe(true);
    expect(r.body.result._meta["toolshed/error"]).toMatchObject({ code: "UNAUTHORIZED", details: { refused_by: "key_gone" } });
    expect(r.body.result._meta["toolshed/error"].message).toContain(KILLED);
    expect(r.answeredMs).toBeLessThan(4000);
    expect(r.fileStatus).toBe(404);
  }, 60_000);
});
