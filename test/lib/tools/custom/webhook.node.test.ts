/** A webhook custom tool against a real HTTP server on 127.0.0.1 that verifies the signature; and the plugin protocol's failure cases. */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePluginOutput } from "../../../../lib/tools/custom/plugin.js";
import { ToolError } from "../../../../lib/shared/errors.js";
import { ADMIN, webhookApp } from "./webhook-app.js";

const SECRET = "whsec_test_secret_0123456789";
let server: Server;
let base = "";
const seen: { verified: boolean; body: any }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const sig = String(req.headers["x-toolshed-signature"] ?? "");
      const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(sig);
      const expected = m ? createHmac("sha256", SECRET).update(`${m[1]}.${raw}`).digest("hex") : "";
      const verified = !!m && timingSafeEqual(Buffer.from(expected), Buffer.from(m[2]!)) && Math.abs(Date.now() / 1000 - Number(m[1])) < 300;
      const body = JSON.parse(raw);
      seen.push({ verified, body });
      if (!verified) return void res.writeHead(401).end("bad signature");
      res.writeHead(200, { "content-type": "application/json" });
      if (req.url === "/error") return void res.end(JSON.stringify({ content: [{ type: "text", text: "city unknown" }], is_error: true }));
      if (req.url === "/plain") return void res.end(JSON.stringify({ temp: 21 }));
      res.end(JSON.stringify({ content: [{ type: "text", text: `echo: ${body.arguments.message}` }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function setup() {
  const { app, adm, h } = await webhookApp();
  const add = async (name: string, path: string, input_schema: Record<string, unknown> = { type: "object", properties: { message: { type: "string" } }, required: ["message"] }) => {
    const r = await adm("/v1/admin/tenants/acme/tools/custom", { name, description: "echo", input_schema, backend: { type: "webhook", url: `${base}${path}`, secret: SECRET } });
    expect(r.status).toBe(201);
  };
  const call = async (name: string, args: unknown, extra: Record<string, string> = {}) => {
    const r = await app.request(`/v1/workspaces/main/tools/${name}`, { method: "POST", headers: { ...h, "x-session-id": "s9", ...extra }, body: JSON.stringify(args) });
    return { status: r.status, body: (await r.json()) as any };
  };
  return { add, call, app, adm };
}

describe("webhook custom tools", () => {
  it("POSTs {tool, call_id, arguments, workspace, session} signed with X-Toolshed-Signature; the server verifies it", async () => {
    const { add, call } = await setup();
    await add("acme_echo", "/echo");
    const r = await call("acme_echo", { message: "hello" });
    expect(r.status).toBe(200);
    expect(r.body.output).toBe("echo: hello");
    const last = seen.at(-1)!;
    expect(last.verified).toBe(true);
    expect(last.body).toMatchObject({ tool: "acme_echo", arguments: { message: "hello" }, workspace: "main", session: "s9" });
    expect(last.body.call_id).toMatch(/^call_/);
  });
  it("is_error becomes TOOL_REPORTED_ERROR; plain JSON is shown as JSON; a wrong secret is the server's 401 as FETCH_FAILED", async () => {
    const { add, call } = await setup();
    await add("acme_err", "/error");
    await add("acme_plain", "/plain");
    const e = await call("acme_err", { message: "x" });
    expect(e.body.error.code).toBe("TOOL_REPORTED_ERROR");
    expect(e.body.error.message).toBe("city unknown");
    const p = await call("acme_plain", { message: "x" });
    expect(p.body.data.json).toEqual({ temp: 21 });
  });
});

describe("custom tools: arguments as models send them, and the approval gate", () => {
  const schema = {
    type: "object",
    properties: { message: { type: "string" }, times: { type: "integer", minimum: 1 }, style: { type: "object", properties: { loud: { type: "boolean" }, prefix: { type: "string" } } } },
    required: ["message"],
  };

  it("null is absent at any depth (OpenAI strict mode sends every property); the webhook never sees the nulls", async () => {
    const { add, call } = await setup();
    await add("acme_echo", "/echo", schema);
    const r = await call("acme_echo", { message: "hi", times: null, style: { loud: true, prefix: null } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(seen.at(-1)!.body.arguments).toEqual({ message: "hi", style: { loud: true } });
  });

  it("an unknown argument is named with the closest known one; a missing required one is named; nothing is sent", async () => {
    const { add, call } = await setup();
    await add("acme_echo", "/echo", schema);
    const before = seen.length;
    const typo = await call("acme_echo", { mesage: "hi" });
    expect(typo.status).toBe(400);
    expect(typo.body.error.code).toBe("INVALID_ARGUMENT");
    expect(typo.body.error.message).toContain("Unknown argument 'mesage'. Did you mean 'message'?");
    expect(typo.body.error.message).toContain("Missing required argument message");
    expect(typo.body.error.message).toContain("GET /v1/tools shows its input_schema");
    const nested = await call("acme_echo", { message: "hi", style: { lowd: true } });
    expect(nested.body.error.message).toContain("Unknown argument 'style.lowd'. Did you mean 'loud'?");
    // null for a required argument is not "absent": it is refused by the schema.
    const nul = await call("acme_echo", { message: null });
    expect(nul.status).toBe(400);
    expect(nul.body.error.details.issues.map((i: any) => i.path)).toEqual(["message"]);
    expect(seen.length).toBe(before);
  });

  it("additionalProperties: true in the tenant's schema lets unknown arguments through", async () => {
    const { add, call } = await setup();
    await add("acme_open", "/echo", { ...schema, additionalProperties: true });
    const r = await call("acme_open", { message: "hi", extra: 1 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(seen.at(-1)!.body.arguments).toEqual({ message: "hi", extra: 1 });
  });

  it("a custom tool gated by the tenant's policy waits; approving it runs it (the pending routes find custom tools)", async () => {
    const { add, call, app, adm } = await setup();
    await add("acme_echo", "/echo", schema);
    const put = await app.request("/v1/admin/tenants/acme/policy", { method: "PUT", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ gate: [{ tool: "acme_echo" }] }) });
    expect(put.status).toBe(200);
    const before = seen.length;
    const held = await call("acme_echo", { message: "needs a human" });
    expect(held.status).toBe(202);
    expect(held.body.error.code).toBe("NEEDS_APPROVAL");
    expect(seen.length).toBe(before);
    const id = held.body.error.details.pending_id as string;
    const approver = ((await (await adm("/v1/admin/tenants/acme/keys", { scopes: ["read", "approve"] })).json()) as any).key as string;
    const answered = await app.request(`/v1/workspaces/main/pending/${id}`, { method: "POST", headers: { authorization: `Bearer ${approver}`, "content-type": "application/json" }, body: JSON.stringify({ approved: true }) });
    const a = (await answered.json()) as any;
    expect(answered.status, JSON.stringify(a)).toBe(200);
    expect(a).toMatchObject({ status: "done", outcome: { ok: true, output: "echo: needs a human" } });
    expect(seen.length).toBe(before + 1);
    expect(seen.at(-1)!.body).toMatchObject({ tool: "acme_echo", arguments: { message: "needs a human" }, session: "s9" });
    // The agent's repeat with X-Pending-Id gets the stored result (nothing runs again).
    const again = await call("acme_echo", { message: "needs a human" }, { "x-pending-id": id });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.output).toBe("echo: needs a human");
    expect(seen.length).toBe(before + 1);
  });
});

describe("plugin line protocol", () => {
  const code = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return [(e as ToolError).code, (e as ToolError).details.reason];
    }
    return null;
  };
  it("reads the result with its call_id, and names each failure", () => {
    const ok = parsePluginOutput('{"type":"init","tools":[]}\n{"type":"result","call_id":"c1","content":[{"type":"text","text":"hi"}]}\n', "c1", 0, "");
    expect(ok.text).toBe("hi");
    expect(code(() => parsePluginOutput("", "c1", 1, "Traceback"))).toEqual(["PLUGIN_FAILED", "crashed"]);
    expect(code(() => parsePluginOutput("hello\n", "c1", 0, ""))).toEqual(["PLUGIN_FAILED", "invalid_output"]);
    expect(code(() => parsePluginOutput('{"type":"result","call_id":"zz","content":[]}', "c1", 0, ""))).toEqual(["PLUGIN_FAILED", "wrong_call_id"]);
    expect(code(() => parsePluginOutput('{"type":"result","call_id":"c1","content":"x"}', "c1", 0, ""))).toEqual(["PLUGIN_FAILED", "invalid_output"]);
  });
});
