/**
 * The runner answers only what the API signed (lib/exec/runner-auth.ts, docs/runner-security.md),
 * over real HTTP on 127.0.0.1: lambdaExecutor → local Invoke stand-in → handler → sync server.
 * The first test is the cross-tenant read of issue #25, replayed as the adversary ran it.
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../../infra/container/local-server.js";
import { lambdaExecutor } from "../../../lib/exec/lambda.js";
import { invocationTtlMs, signEvent } from "../../../lib/exec/runner-auth.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import type { ExecEvent, Executor, RunRequest } from "../../../lib/exec/types.js";
import type { ExecResponse } from "../../../lib/sync/types.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { workspaceRecord } from "../../support/workspace-record.js";
import { RUNNER_SECRET, startSyncServer } from "./helpers.js";

const SYNC_SECRET = "invoke-auth-sync-secret-0123456789";
const SECRET_TEXT = "victim-secret-4242";
const driver = memoryDriver();
let api: Awaited<ReturnType<typeof startSyncServer>>;
let fake: Awaited<ReturnType<typeof startSyncServer>>;
let fakeToken = "";
let invoke: LocalInvokeServer;
let exec: Executor;
let root = "";

const client = (endpoint: string) => new LambdaClient({ endpoint, region: "us-east-1", maxAttempts: 1, credentials: { accessKeyId: "x", secretAccessKey: "x" } });

/**
 * The adversary's sync server: its own storage, its own secret, a token it minted itself for
 * victim/main, and a manifest answer that says "every bucket unchanged" with the count of the
 * victim's workspace (one file).
 */
async function startFakeSync() {
  const own = memoryDriver();
  await workspaceRecord(own, "victim", "main");
  const ownSecret = "the-attackers-own-secret-0123";
  fakeToken = await mintSyncToken(ownSecret, { t: "victim", w: "main", r: "attack" }, 300);
  return startSyncServer(own, ownSecret, async (req) => {
    if (req.method !== "POST" || !new URL(req.url).pathname.endsWith("/v1/sync/manifest")) return null;
    const q = (await req.json()) as { buckets: number };
    return Response.json({ v: 2, count: 1, buckets: q.buckets, same: [...Array(q.buckets).keys()], files: [], modes: "same" });
  });
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "toolshed-invoke-auth-"));
  chmodSync(root, 0o711);
  api = await startSyncServer(driver, SYNC_SECRET);
  fake = await startFakeSync();
  invoke = await startLocalInvokeServer({ root: join(root, "runner"), secret: RUNNER_SECRET, functionName: "toolshed-runner" });
  exec = lambdaExecutor({ client: client(invoke.url), functionName: "toolshed-runner", secret: RUNNER_SECRET });
});

afterAll(async () => {
  await invoke?.close();
  api?.close();
  fake?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

let seq = 0;
/** A run request as the API makes it (a real sync token for tenant/workspace). */
async function request(tenant: string, workspace: string, command: string, extra: Partial<RunRequest> = {}): Promise<RunRequest> {
  const key = `call-${++seq}-${Date.now()}`;
  await workspaceRecord(driver, tenant, workspace);
  const token = await mintSyncToken(SYNC_SECRET, { t: tenant, w: workspace, r: key }, 300);
  return { version: 1, idempotency_key: key, tenant, workspace, command, timeout_ms: 20_000, sync: { url: api.url, token }, ...extra };
}

/** A raw POST to the Invoke endpoint, as anyone on the host can send it. */
async function invokeRaw(url: string, tenant: string, body: unknown, type = "RequestResponse"): Promise<{ text: string; answer: ExecResponse }> {
  const r = await fetch(`${url}/2015-03-31/functions/toolshed-runner/invocations`, {
    method: "POST",
    headers: { "x-amz-tenant-id": tenant, "x-amz-invocation-type": type, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  return { text, answer: JSON.parse(text) as ExecResponse };
}

const refusal = (a: ExecResponse) => (a.ok ? null : { code: a.error.code, reason: a.error.details?.reason });

describe("issue #25: the cross-tenant read through the runner", () => {
  it("an unsigned invocation naming the victim, with a sync server that answers 'unchanged', is refused; the victim's file shows nowhere", async () => {
    await exec.run(await request("victim", "main", `echo ${SECRET_TEXT} > secret.txt`));
    const warm = await exec.run(await request("victim", "main", "cat secret.txt"));
    expect(warm).toMatchObject({ stdout: `${SECRET_TEXT}\n`, sync: { cache: "warm" } });

    const attack: ExecEvent = { version: 1, action: "run", idempotency_key: "attack-1", tenant: "victim", workspace: "main", command: "cat secret.txt; ls -la", timeout_ms: 20_000, network: true, sync: { url: fake.url, token: fakeToken } };
    const attempts = [
      attack,
      { ...attack, auth: { exp: Date.now() + 60_000, sig: "forged" } },
      await signEvent("a-secret-the-attacker-made-up-0123", attack),
    ];
    for (const body of attempts)
      for (const type of ["RequestResponse", "Event"]) {
        const { text, answer } = await invokeRaw(invoke.url, "victim", body, type);
        expect(text).not.toContain(SECRET_TEXT);
        expect(refusal(answer)).toMatchObject({ code: "UNAVAILABLE", reason: expect.stringMatching(/^invocation_(unsigned|bad_signature)$/) });
      }
    // Refused before anything: the runner never even asked the adversary's server.
    expect(fake.requests()).toBe(0);
    // The victim's slot is as it was: still warm, nothing fetched.
    expect(await exec.run(await request("victim", "main", "cat secret.txt"))).toMatchObject({ stdout: `${SECRET_TEXT}\n`, sync: { cache: "warm", downloaded_files: 0 } });
  });

  it("a genuinely signed event altered in any field, or sent under another TenantId, is refused", async () => {
    const signed = await signEvent(RUNNER_SECRET, { ...(await request("acme", "main", "echo hi")), action: "run" });
    const altered = [
      { ...signed, tenant: "victim" },
      { ...signed, workspace: "other" },
      { ...signed, sync: { ...signed.sync, url: fake.url } },
      { ...signed, command: "cat secret.txt" },
      { ...signed, network: true },
      { ...signed, auth: { ...signed.auth, exp: signed.auth.exp + 3_600_000 } },
    ];
    for (const body of altered) {
      const { answer } = await invokeRaw(invoke.url, body.tenant, body);
      expect(refusal(answer)).toEqual({ code: "UNAVAILABLE", reason: "invocation_bad_signature" });
    }
    const misrouted = await invokeRaw(invoke.url, "victim", signed);
    expect(refusal(misrouted.answer)).toMatchObject({ code: "PERMISSION_DENIED" });
    expect(invoke.environment("other")).toBeUndefined();
    // The same event as signed runs.
    const { answer } = await invokeRaw(invoke.url, "acme", signed);
    expect(answer).toMatchObject({ ok: true, result: { stdout: "hi\n" } });
    expect(fake.requests()).toBe(0);
  });

  it("an expired event is refused", async () => {
    const req = { ...(await request("acme", "main", "echo late > late.txt")), action: "run" as const };
    const expired = await signEvent(RUNNER_SECRET, req, Date.now() - invocationTtlMs(req) - 1000);
    const { answer } = await invokeRaw(invoke.url, "acme", expired);
    expect(refusal(answer)).toEqual({ code: "UNAVAILABLE", reason: "invocation_expired" });
  });

  it("a slot is reused only with the sync endpoint that filled it, even for a signed event", async () => {
    // As if the API itself named another endpoint: the victim's warm tree is not handed to it.
    const other = await signEvent(RUNNER_SECRET, { ...(await request("victim", "main", "cat secret.txt; echo end")), action: "run", sync: { url: fake.url, token: fakeToken } });
    const { text } = await invokeRaw(invoke.url, "victim", other);
    expect(text).not.toContain(SECRET_TEXT);
  });
});

describe("runner configuration", () => {
  it("a runner without the secret refuses everything, and an API without it says which variable to set", async () => {
    const bare = await startLocalInvokeServer({ root: join(root, "bare"), functionName: "toolshed-runner" });
    try {
      const signed = await signEvent(RUNNER_SECRET, { ...(await request("acme", "main", "echo no > no.txt")), action: "run" });
      const { answer } = await invokeRaw(bare.url, "acme", signed);
      expect(answer).toMatchObject({ ok: false, error: { code: "UNAVAILABLE", message: expect.stringContaining("TOOLSHED_RUNNER_SECRET"), details: { reason: "runner_secret_missing" } } });
      expect(bare.environment("acme")).toBeUndefined();
    } finally {
      await bare.close();
    }
    const unsigned = lambdaExecutor({ client: client(invoke.url), functionName: "toolshed-runner", secret: undefined });
    await expect(unsigned.run(await request("acme", "main", "true"))).rejects.toMatchObject({ code: "UNAVAILABLE", message: expect.stringContaining("TOOLSHED_RUNNER_SECRET") });
  });

  it("an API whose secret differs from the runner's is told so at once, for calls and for background tasks", async () => {
    const wrong = lambdaExecutor({ client: client(invoke.url), functionName: "toolshed-runner", secret: "not-the-runners-secret-0123" });
    const expected = { code: "UNAVAILABLE", details: { reason: "invocation_bad_signature" }, message: expect.stringContaining("TOOLSHED_RUNNER_SECRET") };
    await expect(wrong.run(await request("acme", "main", "echo no"))).rejects.toMatchObject(expected);
    await expect(wrong.start(await request("acme", "main", "echo no"))).rejects.toMatchObject(expected);
  });

  it("with the API's URL set, a signed event whose sync endpoint is elsewhere is refused", async () => {
    const bound = await startLocalInvokeServer({ root: join(root, "bound"), secret: RUNNER_SECRET, syncUrl: api.url, functionName: "toolshed-runner" });
    try {
      const elsewhere = await signEvent(RUNNER_SECRET, { ...(await request("acme", "main", "true")), action: "run", sync: { url: fake.url, token: fakeToken } });
      expect(refusal((await invokeRaw(bound.url, "acme", elsewhere)).answer)).toEqual({ code: "PERMISSION_DENIED", reason: "sync_origin" });
      const here = lambdaExecutor({ client: client(bound.url), functionName: "toolshed-runner", secret: RUNNER_SECRET });
      expect(await here.run(await request("acme", "main", "echo bound"))).toMatchObject({ stdout: "bound\n" });
    } finally {
      await bound.close();
    }
  });
});
