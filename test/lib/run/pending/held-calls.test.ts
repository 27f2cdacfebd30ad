/**
 * A held call is bound to what it would run (docs/approvals.md), through HTTP with real (local) R2
 * and KV: the agent running it itself supersedes it, a restore or a conflicting write makes it
 * stale, and neither runs when approved later; what the approver changed is told to the agent;
 * a revoked key's approved call runs nothing.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../../lib/shared/hash.js";
import { admin, newTenant, upload } from "../../../helpers.js";
import { answer, approverKey, getPending, held, readFile, repeat, setPolicy } from "./approval-helpers.js";

const post = async (t: Awaited<ReturnType<typeof newTenant>>, path: string, body: unknown = {}) => {
  const res = await t.req(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

/** A tenant with a directory d/ of `n` files, and its approver. */
async function withDir(n = 3) {
  const t = await newTenant();
  for (let i = 0; i < n; i++) await upload(t, `d/f${i}.txt`, `file ${i}`);
  return { t, approver: await approverKey(t.app, t.tenant) };
}

describe("a held call is bound to what it would run", () => {
  it("superseded: the agent runs the same command itself (self_confirm on); approving later is CONFLICT and runs nothing", async () => {
    const { t, approver } = await withDir();
    await setPolicy(t.app, t.tenant, { self_confirm: true });
    const d = held(await t.call("bash", { command: "rm -r d" }));
    // Self-confirmation is allowed here, so (and only so) the message says how.
    expect(d.reason).toContain("confirmed: true");
    // The agent runs it itself: past the gate (no executor in this app: UNAVAILABLE shows it went on to run).
    expect((await t.call("bash", { command: "rm -r d", confirmed: true })).body.error.code).toBe("UNAVAILABLE");
    const g = await getPending(t, d.pending_id);
    expect(g.body.status).toBe("superseded");
    expect(g.body.closed.why).toContain("ran the same bash call itself");
    expect(((await (await t.req(`/v1/workspaces/${t.ws}/pending`)).json()) as any).pending).toEqual([]);
    const a = await answer(t, approver, d.pending_id, { approved: true });
    expect(a.status).toBe(409);
    expect(a.body.error.code).toBe("CONFLICT");
    expect(a.body.error.message).toContain("superseded");
    // Nothing ran: no outcome was stored, the record is still closed.
    const after = await getPending(t, d.pending_id);
    expect(after.body.status).toBe("superseded");
    expect(after.body.outcome).toBeUndefined();
    const r = await repeat(t, "bash", d.pending_id);
    expect(r.status).toBe(409);
    expect(r.body.error.details).toMatchObject({ status: "superseded", pending_id: d.pending_id });
  });

  it("stale after a conflicting write to a file the call names: approving is CONFLICT, nothing is deleted", async () => {
    const { t, approver } = await withDir(45);
    const d = held(await t.call("delete", { path: "d", recursive: true }));
    expect(d.reason).toMatch(/45 files.*rule delete-recursive/);
    await upload(t, "d/f7.txt", "changed after the hold");
    const a = await answer(t, approver, d.pending_id, { approved: true });
    expect(a.status, JSON.stringify(a.body)).toBe(409);
    expect(a.body.error).toMatchObject({ code: "CONFLICT", details: { status: "stale" } });
    expect(a.body.error.message).toContain("d changed");
    expect((await getPending(t, d.pending_id)).body).toMatchObject({ status: "stale", closed: { why: "d changed" } });
    expect(await readFile(t, "d/f0.txt")).toBe("file 0");
    expect(await readFile(t, "d/f7.txt")).toBe("changed after the hold");
    expect((await repeat(t, "delete", d.pending_id)).body.error.message).toContain("is stale");
  });

  it("stale after a restore: the workspace moved past the held state, approving runs nothing", async () => {
    const { t, approver } = await withDir();
    const cp = await post(t, `/v1/workspaces/${t.ws}/checkpoints`, { name: "before" });
    expect(cp.status, JSON.stringify(cp.body)).toBe(201);
    await upload(t, "d/f0.txt", "edited");
    const d = held(await t.call("delete", { path: "d", recursive: true }));
    expect((await post(t, `/v1/workspaces/${t.ws}/checkpoints/${cp.body.id}/restore`)).status).toBe(200);
    const a = await answer(t, approver, d.pending_id, { approved: true });
    expect(a.status).toBe(409);
    expect(a.body.error.details.status).toBe("stale");
    expect(a.body.error.message).toMatch(/restore/);
    expect(await readFile(t, "d/f0.txt")).toBe("file 0");
    expect(await readFile(t, "d/f1.txt")).toBe("file 1");
  });

  it("the same call held again on the same state is the same pending call; on a changed state the older one closes stale", async () => {
    const { t, approver } = await withDir();
    const first = held(await t.call("delete", { path: "d", recursive: true }));
    expect(held(await t.call("delete", { recursive: true, path: "/d/" })).pending_id).toBe(first.pending_id);
    await upload(t, "d/new.txt", "new");
    const second = held(await t.call("delete", { path: "d", recursive: true }));
    expect(second.pending_id).not.toBe(first.pending_id);
    expect((await getPending(t, first.pending_id)).body).toMatchObject({ status: "stale", closed: { by: second.pending_id } });
    expect((await answer(t, approver, first.pending_id, { approved: true })).status).toBe(409);
    expect(await readFile(t, "d/new.txt")).toBe("new");
    // The newer one runs on the state it was held on.
    const a = await answer(t, approver, second.pending_id, { approved: true });
    expect(a.body.outcome, JSON.stringify(a.body)).toMatchObject({ ok: true, data: { count: 4 } });
    expect(await readFile(t, "d/new.txt")).toBeNull();
  });
});

describe("what the approver changed or said reaches the agent", () => {
  async function heldWrite() {
    const t = await newTenant();
    const approver = await approverKey(t.app, t.tenant);
    await setPolicy(t.app, t.tenant, { gate: [{ tool: "write", when: "overwrite" }] });
    await t.call("write", { file_path: "a.txt", content: "one" });
    await t.call("read", { file_path: "a.txt" });
    return { t, approver, id: held(await t.call("write", { file_path: "a.txt", content: "two" })).pending_id };
  }

  it("modified arguments and a note: the output says what was asked, what ran and the note; data.approval too", async () => {
    const { t, approver, id } = await heldWrite();
    const a = await answer(t, approver, id, { approved: true, modified_args: { file_path: "a.txt", content: "three" }, note: "three, not two" });
    expect(a.body).toMatchObject({ status: "done", args: { content: "three" }, asked_args: { content: "two" } });
    expect(await readFile(t, "a.txt")).toBe("three");
    const r = await repeat(t, "write", id);
    expect(r.status).toBe(200);
    expect(r.body.output).toMatch(/^A human approved this write call with CHANGED arguments: what ran is not what you asked\./);
    expect(r.body.output).toContain(`You asked for {"file_path":"a.txt","content":"two"}`);
    expect(r.body.output).toContain(`what ran was {"file_path":"a.txt","content":"three"}`);
    expect(r.body.output).toContain("Their note: three, not two");
    expect(r.body.data.approval).toEqual({ approved_by: expect.any(String), modified_args: true, asked_args: { file_path: "a.txt", content: "two" }, ran_args: { file_path: "a.txt", content: "three" }, note: "three, not two" });
  });

  it("a note alone: the output says the call ran as asked, with the note; without either, the output is the tool's own", async () => {
    const { t, approver, id } = await heldWrite();
    await answer(t, approver, id, { approved: true, note: "fine this once" });
    const r = await repeat(t, "write", id);
    expect(r.body.output).toMatch(/^A human approved this write call as you asked it\. Their note: fine this once/);
    expect(r.body.data.approval).toMatchObject({ modified_args: false, note: "fine this once" });
    const plain = await heldWrite();
    await answer(plain.t, plain.approver, plain.id, { approved: true });
    const p = await repeat(plain.t, "write", plain.id);
    expect(p.body.output).not.toContain("A human approved");
    expect(p.body.data.approval).toBeUndefined();
  });

  it("an approved call that fails says what ran in its error too", async () => {
    const { t, approver, id } = await heldWrite();
    const a = await answer(t, approver, id, { approved: true, modified_args: { file_path: "a.txt/x", content: "x" }, note: "elsewhere" });
    expect(a.body.outcome.ok).toBe(false);
    const r = await repeat(t, "write", id);
    expect(r.body.error.message).toContain("with CHANGED arguments");
    expect(r.body.error.details.approval).toMatchObject({ modified_args: true, note: "elsewhere" });
  });
});

describe("the key that made the call is checked again when it runs", () => {
  it("revoked before the approval: nothing runs, and the outcome says why", async () => {
    const t = await newTenant();
    const approver = await approverKey(t.app, t.tenant);
    await setPolicy(t.app, t.tenant, { gate: [{ tool: "write" }] });
    const d = held(await t.call("write", { file_path: "a.txt", content: "x" }));
    const keys = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, undefined, "GET");
    const agentKey = keys.body.keys.find((k: any) => t.key.startsWith(`tsk_${k.key_id}_`));
    expect((await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys/${agentKey.key_id}`, undefined, "DELETE")).status).toBe(200);
    const a = await answer(t, approver, d.pending_id, { approved: true });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ status: "done", outcome: { ok: false, code: "PERMISSION_DENIED", details: { reason: "key_revoked" } } });
    expect(a.body.outcome.message).toContain("revoked");
    expect(await readFile(t, "a.txt")).toBeNull();
  });

  it("expired before the approval: nothing runs, as for a revoked key, and the outcome says why", async () => {
    const t = await newTenant();
    const approver = await approverKey(t.app, t.tenant);
    await setPolicy(t.app, t.tenant, { gate: [{ tool: "write" }] });
    const made = await admin(t.app, `/v1/admin/tenants/${t.tenant}/keys`, { name: "expiring", expires_at: new Date(Date.now() + 60_000).toISOString() });
    const res = await t.app.request(`/v1/workspaces/${t.ws}/tools/write`, { method: "POST", headers: { authorization: `Bearer ${made.body.key}`, "content-type": "application/json" }, body: JSON.stringify({ file_path: "a.txt", content: "x" }) });
    const d = held({ status: res.status, body: await res.json() });
    // Its expiry passes while the call waits (the stored expiry moved into the past: workerd's clock cannot be moved).
    const hash = await sha256Hex(made.body.key);
    const rec = JSON.parse((await env.KV.get(`apikey/${hash}`))!);
    await env.KV.put(`apikey/${hash}`, JSON.stringify({ ...rec, expires_at: new Date(Date.now() - 1000).toISOString() }));
    const a = await answer(t, approver, d.pending_id, { approved: true });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ status: "done", outcome: { ok: false, code: "PERMISSION_DENIED", details: { reason: "key_expired" } } });
    expect(a.body.outcome.message).toContain("expired");
    expect(await readFile(t, "a.txt")).toBeNull();
  });

  it("still valid: the call runs with the scopes the key has", async () => {
    const t = await newTenant();
    const approver = await approverKey(t.app, t.tenant);
    await setPolicy(t.app, t.tenant, { gate: [{ tool: "write" }] });
    const d = held(await t.call("write", { file_path: "a.txt", content: "x" }));
    expect((await answer(t, approver, d.pending_id, { approved: true })).body.outcome.ok).toBe(true);
    expect(await readFile(t, "a.txt")).toBe("x");
  });
});
