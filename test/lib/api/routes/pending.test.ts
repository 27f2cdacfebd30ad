/** Pending calls through HTTP: ask_user and the approval gate, with real (local) R2 and KV. */
import { describe, expect, it } from "vitest";
import { admin, newTenant, testApp, upload, type Tenant } from "../../../helpers.js";
import { answer, approverKey, getPending, held, readFile, repeat, setPolicy } from "../../run/pending/approval-helpers.js";

describe("ask_user", () => {
  it("free answer: NEEDS_INPUT, listed, answered by the app, the answer on repeat", async () => {
    const t = await newTenant();
    const approver = await approverKey(t.app, t.tenant);
    const d = held(await t.call("ask_user", { question: "Which database?" }), "NEEDS_INPUT");
    expect(d).toMatchObject({ tool: "ask_user", question: "Which database?", args: { question: "Which database?" } });
    const waiting = held(await repeat(t, "ask_user", d.pending_id, { question: "Which database?" }), "NEEDS_INPUT");
    expect(waiting.pending_id).toBe(d.pending_id);
    const list = await t.req(`/v1/workspaces/${t.ws}/pending`);
    expect(((await list.json()) as any).pending.map((p: any) => p.id)).toEqual([d.pending_id]);
    const a = await answer(t, approver, d.pending_id, { answer: "Postgres, please" });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ status: "done", outcome: { ok: true, data: { answer: "Postgres, please", option_index: null } } });
    const r = await repeat(t, "ask_user", d.pending_id, { question: "Which database?" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, tool: "ask_user", data: { question: "Which database?", answer: "Postgres, please" } });
    expect(r.body.output).toContain("Postgres, please");
    expect(((await (await t.req(`/v1/workspaces/${t.ws}/pending`)).json()) as any).pending).toEqual([]);
  });

  it("an option, read with a long-poll that ends when the answer comes", async () => {
    const t = await newTenant();
    const approver = await approverKey(t.app, t.tenant);
    const d = held(await t.call("ask_user", { question: "Deploy?", options: ["yes", "no"] }), "NEEDS_INPUT");
    expect(d.options).toEqual(["yes", "no"]);
    const polled = getPending(t, d.pending_id, "?wait=5");
    await answer(t, approver, d.pending_id, { answer: "no" });
    const g = await polled;
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ status: "done", outcome: { ok: true, data: { answer: "no", option_index: 1 } } });
  });
});

describe("the approval gate", () => {
  async function gatedWrite() {
    const t = await newTenant();
    const approver = await approverKey(t.app, t.tenant);
    await setPolicy(t.app, t.tenant, { gate: [{ tool: "write", when: "overwrite" }] });
    expect((await t.call("write", { file_path: "a.txt", content: "one" })).status).toBe(200); // a new file: not gated
    await t.call("read", { file_path: "a.txt" });
    const d = held(await t.call("write", { file_path: "a.txt", content: "two" }), "NEEDS_APPROVAL");
    expect(d).toMatchObject({ tool: "write", args: { file_path: "a.txt", content: "two" } });
    expect(d.reason).toMatch(/existing file a\.txt/);
    expect(await readFile(t, "a.txt")).toBe("one"); // nothing ran
    return { t, approver, id: d.pending_id as string };
  }

  it("approve: the call runs with the agent's session, its result stored and returned on repeat", async () => {
    const { t, approver, id } = await gatedWrite();
    const a = await answer(t, approver, id, { approved: true, note: "ok" });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ status: "done", answer: { approved: true, note: "ok" }, outcome: { ok: true, data: { file_path: "a.txt", created: false } } });
    expect(await readFile(t, "a.txt")).toBe("two");
    const r = await repeat(t, "write", id, {});
    expect(r.body).toMatchObject({ ok: true, tool: "write", data: { bytes_written: 3 } });
    const g = await getPending(t, id);
    expect(g.body.status).toBe("done");
  });

  it("approve with modified args: the modified args are what ran; bad ones leave the call pending", async () => {
    const { t, approver, id } = await gatedWrite();
    const bad = await answer(t, approver, id, { approved: true, modified_args: { file_path: "a.txt", contents: "x" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("INVALID_ARGUMENT");
    expect((await getPending(t, id)).body.status).toBe("pending");
    // A path that is no workspace path is bad arguments too: the call stays pending (it ran and stored INVALID_PATH before)
    const outside = await answer(t, approver, id, { approved: true, modified_args: { file_path: "../etc/passwd", content: "x" } });
    expect(outside.status).toBe(400);
    expect(outside.body.error).toMatchObject({ code: "INVALID_ARGUMENT", details: { field: "modified_args.file_path" } });
    expect(outside.body.error.message).toContain("still pending");
    expect((await getPending(t, id)).body.status).toBe("pending");
    const a = await answer(t, approver, id, { approved: true, modified_args: { file_path: "a.txt", content: "modified" } });
    expect(a.body).toMatchObject({ args: { content: "modified" }, answer: { modified_args: true }, outcome: { ok: true } });
    expect(await readFile(t, "a.txt")).toBe("modified");
  });

  it("deny: DENIED with the note, nothing ran; a second answer is CONFLICT", async () => {
    const { t, approver, id } = await gatedWrite();
    const a = await answer(t, approver, id, { approved: false, note: "keep the old text" });
    expect(a.body).toMatchObject({ status: "done", outcome: { ok: false, code: "DENIED" } });
    const r = await repeat(t, "write", id, {});
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe("DENIED");
    expect(r.body.error.message).toContain("keep the old text");
    expect(await readFile(t, "a.txt")).toBe("one");
    const again = await answer(t, approver, id, { approved: true });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("CONFLICT");
    expect(await readFile(t, "a.txt")).toBe("one");
  });

  it("two answers at once: exactly one is taken", async () => {
    const { t, approver, id } = await gatedWrite();
    const rs = await Promise.all([answer(t, approver, id, { approved: true }), answer(t, approver, id, { approved: false })]);
    expect(rs.map((r) => r.status).sort()).toEqual([200, 409]);
  });

  it("an agent key cannot approve (PERMISSION_DENIED); another tenant's id is NOT_FOUND", async () => {
    const { t, id } = await gatedWrite();
    const self = await answer(t, t.key, id, { approved: true });
    expect(self.status).toBe(403);
    expect(self.body.error.code).toBe("PERMISSION_DENIED");
    expect(self.body.error.message).toContain("'approve'");
    const other = await newTenant(t.app); // same workspace name "main"
    const otherApprover = await approverKey(t.app, other.tenant);
    const x = await answer(other, otherApprover, id, { approved: true });
    expect(x.status).toBe(404);
    expect((await getPending(other, id)).status).toBe(404);
    expect((await repeat(other, "write", id, {})).status).toBe(404);
    expect(await readFile(t, "a.txt")).toBe("one");
    // One answer for an id that is not there, whatever its shape: the workspace named, no "{ws}" left unfilled.
    const unknown = async (x: string) => (await getPending(other, x)).body.error.message.replace(x, "<id>");
    expect(await unknown("abc")).toBe(await unknown(id));
    expect(await unknown("abc")).toBe(`No pending call <id> in workspace ${other.ws}. List them with GET /v1/workspaces/${other.ws}/pending.`);
  });

  it("a key holding approve and the tool's scope cannot approve its own held call: PERMISSION_DENIED, still pending, nothing ran; another key approves it; it may refuse its own", async () => {
    const t = await newTenant(testApp(), { scopes: ["read", "write", "approve"] });
    const approver = await approverKey(t.app, t.tenant);
    await setPolicy(t.app, t.tenant, { gate: [{ tool: "write", when: "overwrite" }] });
    await t.call("write", { file_path: "a.txt", content: "one" });
    await t.call("read", { file_path: "a.txt" });
    const hold = async (content: string) => held(await t.call("write", { file_path: "a.txt", content }), "NEEDS_APPROVAL").pending_id as string;
    const id = await hold("two");
    const self = await answer(t, t.key, id, { approved: true, modified_args: { file_path: "a.txt", content: "mine" } });
    expect(self.status).toBe(403);
    expect(self.body.error).toMatchObject({ code: "PERMISSION_DENIED", details: { reason: "self_approval" } });
    expect(self.body.error.message).toContain("It is still pending: approve it with an approver's key");
    expect(await readFile(t, "a.txt")).toBe("one");
    expect((await getPending(t, id)).body).toMatchObject({ status: "pending" });
    const a = await answer(t, approver, id, { approved: true });
    expect(a.status).toBe(200);
    expect(await readFile(t, "a.txt")).toBe("two");
    await t.call("read", { file_path: "a.txt" });
    const second = await hold("three");
    const refused = await answer(t, t.key, second, { approved: false, note: "not needed" });
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ status: "done", outcome: { ok: false, code: "DENIED" } });
    expect(await readFile(t, "a.txt")).toBe("two");
  });

  it("the model is told to call pending_result, never to send a header; pending_result over HTTP returns the outcome to a readonly key, NOT_FOUND to another tenant", async () => {
    const { t, approver, id } = await gatedWrite();
    const heldAgain = await t.call("write", { file_path: "a.txt", content: "three" });
    expect(heldAgain.body.error.message).toContain(`call the pending_result tool with {"pending_id": "${heldAgain.body.error.details.pending_id}"`);
    const q = await t.call("ask_user", { question: "ok?" });
    for (const m of [heldAgain.body.error.message, q.body.error.message]) expect(m).not.toMatch(/x-pending-id|header/i);
    const readonly = (await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "ro", tools: "readonly" })).body.key as string;
    const result = async (key: string, tenant: Tenant = t) => {
      const res = await t.app.request(`/v1/workspaces/${tenant.ws}/tools/pending_result`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ pending_id: id }) });
      return { status: res.status, body: (await res.json()) as any };
    };
    const waiting = await result(readonly);
    expect(waiting.status).toBe(202);
    expect(waiting.body.error.code).toBe("NEEDS_APPROVAL");
    await answer(t, approver, id, { approved: true, note: "fine" });
    const r = await result(readonly);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ ok: true, tool: "pending_result", data: { pending_id: id, tool: "write", status: "done", result: { file_path: "a.txt", created: false } } });
    expect(r.body.output).toMatch(/^A human approved this write call as you asked it\. Their note: fine\n/);
    const other = await newTenant(t.app);
    const x = await result(other.key, other);
    expect(x.status).toBe(404);
    expect(x.body.error.code).toBe("NOT_FOUND");
  });

  it("expiry: an unanswered call expires after its time and says so", async () => {
    let now = Date.now();
    const app = testApp({ pending: { now: () => now } });
    const t = await newTenant(app);
    const approver = await approverKey(app, t.tenant);
    const d = held(await t.call("ask_user", { question: "still there?" }), "NEEDS_INPUT");
    now += 24 * 3600_000 + 1000;
    const a = await answer(t, approver, d.pending_id, { answer: "yes" });
    expect(a.status).toBe(410);
    expect(a.body.error.code).toBe("EXPIRED");
    expect((await getPending(t, d.pending_id)).body.status).toBe("expired");
    expect((await repeat(t, "ask_user", d.pending_id, { question: "still there?" })).body.error.code).toBe("EXPIRED");
  });

  it("defaults: bash caution commands wait, confirmed: true or not (self_confirm is off); the tenant can allow it; web_fetch outside allowed_domains waits and fetches nothing", async () => {
    let fetched = 0;
    const app = testApp({ webFetch: { fetcher: { check: async () => {}, fetch: async () => (fetched++, new Response("x")) } } });
    const t = await newTenant(app, { scopes: ["read", "write", "execute", "network"] });
    const d = held(await t.call("bash", { command: "rm -rf build" }), "NEEDS_APPROVAL");
    expect(d.reason).toMatch(/rule rm-recursive/);
    held(await t.call("bash", { command: "rm -rf build", confirmed: true }), "NEEDS_APPROVAL");
    expect((await t.call("bash", { command: "rm -rf /" })).body.error.code).toBe("BLOCKED");
    await setPolicy(app, t.tenant, { self_confirm: true, web: { allowed_domains: ["example.com"] } });
    // Past the gate: no executor in this test app, so UNAVAILABLE shows the call went on to run.
    expect((await t.call("bash", { command: "rm -rf build", confirmed: true })).body.error.code).toBe("UNAVAILABLE");
    const w = held(await t.call("web_fetch", { url: "https://elsewhere.test/page" }), "NEEDS_APPROVAL");
    expect(w).toMatchObject({ tool: "web_fetch", args: { url: "https://elsewhere.test/page" } });
    expect(fetched).toBe(0);
    // Approved: the approved host is fetched although it is outside allowed_domains.
    const approver = await approverKey(app, t.tenant);
    const a = await answer(t, approver, w.pending_id, { approved: true });
    expect(a.body.outcome).toMatchObject({ ok: true, data: { final_url: "https://elsewhere.test/page" } });
    expect(fetched).toBe(1);
  });

  it("the gate policy is validated when saved and reads back", async () => {
    const t = await newTenant();
    expect((await admin(t.app, `/v1/admin/tenants/${t.tenant}/policy`, { gate: [{ tool: "write", when: "sometimes" }] }, "PUT")).status).toBe(400);
    expect((await admin(t.app, `/v1/admin/tenants/${t.tenant}/policy`, { self_confirm: "yes" }, "PUT")).status).toBe(400);
    const policy = { gate: [{ tool: "bash" }, { tool: "delete", when: "recursive" }], self_confirm: false };
    await setPolicy(t.app, t.tenant, policy);
    expect((await admin(t.app, `/v1/admin/tenants/${t.tenant}/policy`, undefined, "GET")).body).toEqual(policy);
  });

  it("a tool gated whole: every call waits; the gate holds on the compat doors too", async () => {
    const t = await newTenant();
    await setPolicy(t.app, t.tenant, { gate: [{ tool: "delete", when: "recursive" }, { tool: "read" }, { tool: "apply_patch", when: "destructive" }] });
    await upload(t, "d/x.txt", "x");
    held(await t.call("delete", { path: "d", recursive: true }), "NEEDS_APPROVAL");
    expect(await readFile(t, "d/x.txt")).toBe("x");
    held(await t.call("read", { file_path: "d/x.txt" }), "NEEDS_APPROVAL");
    const res = await t.req(`/v1/workspaces/${t.ws}/compat/anthropic/str_replace_based_edit_tool`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ command: "view", path: "/d/x.txt" }) });
    expect(res.headers.get("x-toolshed-error-code")).toBe("NEEDS_APPROVAL");
    // The app holding a provider's tools (which have no pending_result) gets the held call's id beside the code, not only in the model's text.
    const id = res.headers.get("x-toolshed-pending-id");
    expect(id).toMatch(/^p[a-z0-9]+$/);
    expect(JSON.stringify(await res.json())).toContain(id!);
    expect((await getPending(t, id!)).body).toMatchObject({ tool: "read", status: "pending" });
    const patch = await t.req(`/v1/workspaces/${t.ws}/compat/openai/apply_patch`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "apply_patch_call", call_id: "c1", operation: { type: "delete_file", path: "d/x.txt" } }) });
    expect(patch.headers.get("x-toolshed-error-code")).toBe("NEEDS_APPROVAL");
    expect((await getPending(t, patch.headers.get("x-toolshed-pending-id")!)).body).toMatchObject({ tool: "apply_patch", status: "pending" });
    expect(await readFile(t, "d/x.txt")).toBe("x");
  });
});
