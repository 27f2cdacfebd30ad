/**
 * Held calls over MCP with the official SDK client (Client + StreamableHTTPClientTransport over
 * app.request, real local R2/KV): ask_user answered by elicitation where the client declares it;
 * ask_user and approval-held calls completed with the pending_result tool where it does not;
 * another tenant's pending id refused; no text the model reads asks it to send a header.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { admin, newTenant, testApp, upload, type Tenant, type TestApp } from "../../helpers.js";

type Asked = ElicitRequest["params"] & { requestedSchema?: { properties: Record<string, Record<string, unknown>> } };

/** The SDK client on this tenant's workspace; `onAsk` makes it declare form elicitation and answer with it. */
async function connect(t: Tenant, onAsk?: (params: Asked) => ElicitResult | Promise<ElicitResult>, key = t.key): Promise<Client> {
  const client = new Client({ name: "pending-test", version: "1.0.0" }, onAsk ? { capabilities: { elicitation: { form: {} } } } : {});
  if (onAsk) client.setRequestHandler(ElicitRequestSchema, async (req) => onAsk(req.params as Asked));
  const url = new URL(`http://127.0.0.1/v1/workspaces/${t.ws}/mcp`);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${key}`, "x-session-id": "s1" } }, fetch: async (input, init) => t.app.request(String(input), init as RequestInit) }));
  return client;
}

const text = (r: any) => (r.content as { type: string; text: string }[]).map((c) => c.text).join("");
const approverKey = async (app: TestApp, tenant: string) => (await admin(app, `/v1/admin/tenants/${tenant}/keys`, { name: "app", scopes: ["read", "approve"] })).body.key as string;
const answer = async (t: Tenant, key: string, id: string, body: unknown) =>
  (await t.app.request(`/v1/workspaces/${t.ws}/pending/${id}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) })).status;
const statusOf = async (t: Tenant, id: string) => ((await (await t.req(`/v1/workspaces/${t.ws}/pending/${id}`)).json()) as any).status;

/** A held call's result as the model sees it: an error naming its code, pointing at pending_result and never at a header. */
function held(r: any, code: "NEEDS_INPUT" | "NEEDS_APPROVAL"): string {
  expect(r.isError, text(r)).toBe(true);
  expect(text(r)).toMatch(new RegExp(`^${code}: `));
  const id = r._meta["toolshed/error"].details.pending_id as string;
  expect(text(r)).toContain(`call the pending_result tool with {"pending_id": "${id}"`);
  expect(text(r)).not.toMatch(/x-pending-id|header/i);
  return id;
}

describe("ask_user over MCP", () => {
  it("a client that declares elicitation gets the question as elicitation/create; the call returns the answer", async () => {
    const t = await newTenant();
    const asked: Asked[] = [];
    const client = await connect(t, (p) => (asked.push(p), { action: "accept", content: { answer: p.requestedSchema?.properties.answer?.enum ? "no" : "Postgres" } }));
    const r = await client.callTool({ name: "ask_user", arguments: { question: "Which database?" } });
    expect(r.isError ?? false, text(r)).toBe(false);
    expect(text(r)).toBe("The user answered: Postgres");
    expect(r.structuredContent).toEqual({ question: "Which database?", answer: "Postgres", option_index: null });
    const choice = await client.callTool({ name: "ask_user", arguments: { question: "Deploy?", options: ["yes", "no"] } });
    expect(choice.structuredContent).toEqual({ question: "Deploy?", answer: "no", option_index: 1 });
    expect(asked.map((p) => p.message)).toEqual(["Which database?", "Deploy?"]);
    expect(asked[1]!.requestedSchema).toMatchObject({ type: "object", properties: { answer: { type: "string", enum: ["yes", "no"] } }, required: ["answer"] });
    // Answered through the pending store, once: nothing left waiting for the app.
    expect(((await (await t.req(`/v1/workspaces/${t.ws}/pending`)).json()) as any).pending).toEqual([]);
    await client.close();
  });

  it("declined in the client: DENIED, said to the model; an answer after the call stopped waiting is read with pending_result", async () => {
    const declining = await connect(await newTenant(), () => ({ action: "decline" }));
    const d = await declining.callTool({ name: "ask_user", arguments: { question: "May I?" } });
    expect(d.isError).toBe(true);
    expect(text(d)).toMatch(/^DENIED: .*declined to answer in the MCP client/);
    await declining.close();

    // The user answers only after the call's wait (0 here) ended: the call says NEEDS_INPUT, the answer still lands.
    const t = await newTenant(testApp({ pending: { askWaitMs: 0 } }));
    let release!: () => void;
    const later = new Promise<void>((r) => (release = r));
    const slow = await connect(t, async () => (await later, { action: "accept", content: { answer: "later" } }));
    const id = held(await slow.callTool({ name: "ask_user", arguments: { question: "Colour?" } }), "NEEDS_INPUT");
    release();
    const r = await slow.callTool({ name: "pending_result", arguments: { pending_id: id, wait_seconds: 10 } });
    expect(r.isError ?? false, text(r)).toBe(false);
    expect(r.structuredContent).toEqual({ pending_id: id, tool: "ask_user", status: "done", result: { question: "Colour?", answer: "later", option_index: null } });
    await slow.close();
  });

  it("a client without elicitation: NEEDS_INPUT pointing at pending_result, which returns the app's answer", async () => {
    const t = await newTenant();
    const client = await connect(t);
    const id = held(await client.callTool({ name: "ask_user", arguments: { question: "Which port?" } }), "NEEDS_INPUT");
    held(await client.callTool({ name: "pending_result", arguments: { pending_id: id } }), "NEEDS_INPUT");
    const waiting = client.callTool({ name: "pending_result", arguments: { pending_id: id, wait_seconds: 10 } });
    expect(await answer(t, await approverKey(t.app, t.tenant), id, { answer: "8080" })).toBe(200);
    const r = await waiting;
    expect(text(r)).toBe("The user answered: 8080");
    expect(r.structuredContent).toMatchObject({ pending_id: id, tool: "ask_user", result: { answer: "8080" } });
    await client.close();
  });
});

describe("approvals over MCP", () => {
  it("an approved delete: held, approved in the app with a note and changed arguments, its outcome through pending_result", async () => {
    const t = await newTenant();
    await admin(t.app, `/v1/admin/tenants/${t.tenant}/policy`, { gate: [{ tool: "delete", when: "recursive" }] }, "PUT");
    await upload(t, "build/a.o", "x");
    await upload(t, "dist/b.js", "y");
    const client = await connect(t, () => ({ action: "accept", content: { answer: "never asked" } })); // approvals are not put to the client
    const id = held(await client.callTool({ name: "delete", arguments: { path: "build", recursive: true } }), "NEEDS_APPROVAL");
    expect((await t.req(`/v1/workspaces/${t.ws}/files/build/a.o`)).status).toBe(200); // nothing ran
    expect(await answer(t, await approverKey(t.app, t.tenant), id, { approved: true, note: "only dist", modified_args: { path: "dist", recursive: true } })).toBe(200);
    const r = await client.callTool({ name: "pending_result", arguments: { pending_id: id } });
    expect(r.isError ?? false, text(r)).toBe(false);
    expect(text(r)).toMatch(/^A human approved this delete call with CHANGED arguments: what ran is not what you asked\. You asked for \{"path":"build","recursive":true\}; what ran was \{"path":"dist","recursive":true\}\. Their note: only dist\n/);
    expect(r.structuredContent).toMatchObject({ pending_id: id, tool: "delete", status: "done", result: { path: "dist" } });
    expect((await t.req(`/v1/workspaces/${t.ws}/files/dist/b.js`)).status).toBe(404);
    expect((await t.req(`/v1/workspaces/${t.ws}/files/build/a.o`)).status).toBe(200);
    await client.close();
  });

  it("a refused bash command: DENIED with the approver's note through pending_result", async () => {
    const t = await newTenant(testApp(), { scopes: ["read", "write", "execute"] });
    const client = await connect(t);
    const id = held(await client.callTool({ name: "bash", arguments: { command: "rm -rf build" } }), "NEEDS_APPROVAL");
    held(await client.callTool({ name: "pending_result", arguments: { pending_id: id } }), "NEEDS_APPROVAL");
    expect(await answer(t, await approverKey(t.app, t.tenant), id, { approved: false, note: "keep the build" })).toBe(200);
    const r = await client.callTool({ name: "pending_result", arguments: { pending_id: id } });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/^DENIED: A human refused this bash call: keep the build/);
    await client.close();
  });
});

describe("who may see and answer a pending call", () => {
  it("another tenant's pending id is NOT_FOUND, as a made-up one; a forged elicitation answer to an approval is refused", async () => {
    const t = await newTenant();
    await admin(t.app, `/v1/admin/tenants/${t.tenant}/policy`, { gate: [{ tool: "write" }] }, "PUT");
    const mine = await connect(t);
    const id = held(await mine.callTool({ name: "write", arguments: { file_path: "a.txt", content: "x" } }), "NEEDS_APPROVAL");
    const other = await newTenant(t.app); // the same workspace name, "main"
    const theirs = await connect(other);
    const stolen = await theirs.callTool({ name: "pending_result", arguments: { pending_id: id } });
    const madeUp = await theirs.callTool({ name: "pending_result", arguments: { pending_id: "paaaaaaaaaaaaaaaaaaaaaaaa" } });
    expect(stolen.isError).toBe(true);
    expect(text(stolen).replace(id, "<id>")).toBe(text(madeUp).replace("paaaaaaaaaaaaaaaaaaaaaaaa", "<id>"));
    expect(text(stolen)).toMatch(/^NOT_FOUND: /);

    // An approval is never taken from an elicitation answer, whoever forges one with the caller's key.
    const forged = await t.req(`/v1/workspaces/${t.ws}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: `toolshed-ask:${id}`, result: { action: "accept", content: { answer: "yes" } } }),
    });
    expect(forged.status).toBe(403);
    expect(await statusOf(t, id)).toBe("pending");
    const other2 = await other.req(`/v1/workspaces/${other.ws}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: `toolshed-ask:${id}`, result: { action: "decline" } }) });
    expect(other2.status).toBe(404);
    expect(await statusOf(t, id)).toBe("pending");
    expect((await t.req(`/v1/workspaces/${t.ws}/files/a.txt`)).status).toBe(404);
    await mine.close();
    await theirs.close();
  });

  it("a client's answer without content.answer is INVALID_ARGUMENT and leaves the question waiting; one after the app's answer is CONFLICT", async () => {
    const t = await newTenant(testApp({ pending: { askWaitMs: 0 } }));
    let respond!: (r: ElicitResult) => void;
    const client = await connect(t, () => new Promise<ElicitResult>((r) => (respond = r)));
    const id = held(await client.callTool({ name: "ask_user", arguments: { question: "Name?" } }), "NEEDS_INPUT");
    const post = (result: unknown) =>
      t.req(`/v1/workspaces/${t.ws}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: `toolshed-ask:${id}`, result }) });
    const bad = await post({ action: "accept", content: { name: "x" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toMatch(/^INVALID_ARGUMENT: .*content\.answer/);
    expect(await statusOf(t, id)).toBe("pending");
    expect(await answer(t, await approverKey(t.app, t.tenant), id, { answer: "from the app" })).toBe(200);
    const late = await post({ action: "accept", content: { answer: "from the client" } });
    expect(late.status).toBe(409);
    const r = await client.callTool({ name: "pending_result", arguments: { pending_id: id } });
    expect(text(r)).toBe("The user answered: from the app");
    respond({ action: "cancel" });
    await client.close();
  });

  it("no tool description tells the model to send a header; ask_user, bash and web_fetch point at pending_result", async () => {
    const t = await newTenant(testApp(), { scopes: ["read", "write", "execute", "network"] });
    const client = await connect(t);
    const { tools } = await client.listTools();
    for (const tool of tools) expect(tool.description, tool.name).not.toMatch(/x-pending-id/i);
    for (const name of ["ask_user", "bash", "web_fetch"]) expect(tools.find((x) => x.name === name)?.description).toContain("pending_result");
    expect(tools.find((x) => x.name === "pending_result")?.annotations).toMatchObject({ readOnlyHint: true });
    await client.close();
  });
});
