/**
 * The tenant's web domain lists reach every run request with network (RunRequest.egress_domains,
 * added by runRequest alone: docs/sandbox-network.md): bash, bash in the background, run_code and a
 * plugin custom tool, each as the runner is asked; a key without `network` sends none, and a policy
 * without lists sends none. A builder that forgot them fails here.
 */
import { describe, expect, it } from "vitest";
import type { Executor, RunRequest, RunResult } from "../../../lib/exec/types.js";
import { workersKeyValue } from "../../../lib/storage/kv-workers.js";
import { env } from "cloudflare:workers";
import { admin, newTenant, testApp } from "../../helpers.js";

/** A runner that answers at once (a plugin's result line included): what it was asked is kept. */
function fakeExecutor(asked: RunRequest[]): Executor {
  const result = (req: RunRequest): RunResult => {
    const call = /"call_id":"([^"]+)"/.exec(req.stdin ?? "")?.[1];
    const stdout = call ? `${JSON.stringify({ type: "result", call_id: call, content: [{ type: "text", text: "ok" }] })}\n` : "hi\n";
    return {
      run_id: req.idempotency_key, stdout, stderr: "", output: stdout, exit_code: 0, duration_ms: 1, timed_out: false, killed: false, truncated: false,
      files_changed: [], files_created: [], files_deleted: [], conflicts: [], skipped: [], discarded: [],
      sync: { cache: "warm", manifest_files: 0, downloaded_files: 0, downloaded_bytes: 0, uploaded_files: 0, uploaded_bytes: 0, deleted_files: 0, sync_in_ms: 0, sync_out_ms: 0 },
    };
  };
  return { run: async (req) => (asked.push(req), result(req)), start: async (req) => void asked.push(req) };
}

const WEB = { allowed_domains: ["docs.example.com", "*.pypi.org"], blocked_domains: ["ads.docs.example.com"] };
const NETWORK = ["read", "write", "execute", "network"];

async function tenantWith(scopes: string[], policy: Record<string, unknown>, gets: string[] = []) {
  const asked: RunRequest[] = [];
  const kv = workersKeyValue(env.KV);
  const counted = { ...kv, get: (key: string) => (gets.push(key), kv.get(key)) };
  const app = testApp({ kv: counted, executor: fakeExecutor(asked), syncSecret: "sync-secret-for-tests-0123456789", syncUrl: "http://sync.invalid" });
  const t = await newTenant(app, { scopes, policy: { gate: [], ...policy } });
  const schema = { type: "object", properties: { q: { type: "string" } } };
  const plugin = await admin(app, `/v1/admin/tenants/${t.tenant}/tools/custom`, { name: "acme_plugin", description: "a plugin", input_schema: schema, backend: { type: "plugin", command: "true" } });
  expect(plugin.status, JSON.stringify(plugin.body)).toBe(201);
  return { t, asked };
}

/** One call through each door that builds a run request; the requests the runner got, in order. */
async function everyDoor(scopes: string[], policy: Record<string, unknown>): Promise<RunRequest[]> {
  const { t, asked } = await tenantWith(scopes, policy);
  for (const [tool, args] of [
    ["bash", { command: "echo hi" }],
    ["bash", { command: "echo bg", run_in_background: true }],
    ["run_code", { language: "python", code: "print(1)" }],
    ["run_code", { language: "bash", code: "echo bg", run_in_background: true }],
    ["acme_plugin", { q: "x" }],
  ] as const) {
    const r = await t.call(tool, args);
    expect(r.status, `${tool}: ${JSON.stringify(r.body)}`).toBe(200);
  }
  await expect.poll(() => asked.length).toBe(5); // background starts go out after their answer
  return asked;
}

describe("the tenant's domain lists reach the run request of every command door", () => {
  it("with network: bash, bash in the background, run_code (both ways) and a plugin all carry them", async () => {
    const asked = await everyDoor(NETWORK, { web: WEB });
    for (const req of asked) {
      expect(req.network, req.command).toBe(true);
      expect(req.egress_domains, req.command).toEqual(WEB);
    }
  });

  it("an allowed list alone, even empty, is carried (an empty list lets nothing out); a blocked list alone too", async () => {
    for (const web of [{ allowed_domains: [] }, { blocked_domains: ["ads.example.com"] }]) {
      const { t, asked } = await tenantWith(NETWORK, { web });
      expect((await t.call("bash", { command: "true" })).status).toBe(200);
      expect(asked[0]!.egress_domains).toEqual(web);
    }
  });

  it("without network, or with a policy that sets no lists, no request carries any", async () => {
    for (const req of await everyDoor(["read", "write", "execute"], { web: WEB })) {
      expect(req.network).toBe(false);
      expect(req.egress_domains).toBeUndefined();
    }
    const { t, asked } = await tenantWith(NETWORK, {});
    expect((await t.call("bash", { command: "true" })).status).toBe(200);
    expect(asked[0]!.egress_domains).toBeUndefined();
  });

  it("the lists cost no read of their own: a command's call reads the tenant policy from KV once (the approval gate's read, cached for the call)", async () => {
    const gets: string[] = [];
    const { t, asked } = await tenantWith(NETWORK, { web: WEB }, gets);
    gets.length = 0; // the policy's PUT cleared this isolate's cache of it: the call reads it from KV
    expect((await t.call("bash", { command: "true" })).status).toBe(200);
    expect(asked[0]!.egress_domains).toEqual(WEB);
    expect(gets.filter((k) => k.startsWith("policy/"))).toEqual([`policy/${t.tenant}`]);
  });
});
