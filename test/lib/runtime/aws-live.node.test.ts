/**
 * lib/runtime/aws.ts: live sessions on AWS. With TOOLSHED_TABLE (as infra/aws deploys it) each
 * session's coordinator is a DynamoDB item every execution environment shares
 * (TOOLSHED_LIVE_COORDINATOR=dynamodb, the default there): two apps made by fromAwsEnv over one
 * table (dynalite) are two Lambda environments, and a session's calls through either run in one
 * sandbox whose runner polls the other. Without a table (or `off`) a keep_alive call is refused at
 * once, naming what to do, and no runner is started.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import bash from "../../../functions/bash.js";
import run_code from "../../../functions/run_code.js";
import { tools as fileTools } from "../../../functions/index.js";
import { createApp } from "../../../lib/api/app.js";
import type { Executor } from "../../../lib/exec/types.js";
import { fromAwsEnv, type AwsEnv } from "../../../lib/runtime/aws.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { startDynamo, type DynamoServer } from "../../support/dynalite.js";
import { fakeLiveRunner } from "../../support/fake-live-runner.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";

let dynamo: DynamoServer;
let table: string;
const saved = { id: process.env.AWS_ACCESS_KEY_ID, key: process.env.AWS_SECRET_ACCESS_KEY };
beforeAll(async () => {
  // dynalite takes any credentials; the SDK's default chain needs some.
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "local", AWS_SECRET_ACCESS_KEY: "local" });
  dynamo = await startDynamo();
  table = await dynamo.createTable();
});
afterAll(async () => {
  await dynamo?.stop();
  for (const [k, v] of [["AWS_ACCESS_KEY_ID", saved.id], ["AWS_SECRET_ACCESS_KEY", saved.key]] as const) v === undefined ? delete process.env[k] : (process.env[k] = v);
});

/** One Lambda environment of the API: an app made by fromAwsEnv, over the deployment's shared storage. */
function awsApp(env: AwsEnv, shared: { storage: ReturnType<typeof memoryDriver>; executor: Executor }) {
  const deps = { ...fromAwsEnv({ TOOLSHED_BUCKET: "b", ...env }), storage: shared.storage, kv: storageKeyValue(shared.storage, "kv/"), adminToken: ADMIN, executor: shared.executor, syncSecret: SECRET, syncUrl: "http://toolshed.internal" };
  return { deps, app: createApp(deps, [...fileTools, bash, run_code]) };
}

async function tenantOn(app: ReturnType<typeof awsApp>["app"], tenant: string) {
  const admin = async (path: string, body: unknown) => (await app.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: tenant });
  const key = (await admin(`/v1/admin/tenants/${tenant}/keys`, { scopes: ["read", "write", "execute"] })).key as string;
  expect((await app.request("/v1/workspaces", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ id: "main" }) })).status).toBe(201);
  return key;
}

const post = async (app: ReturnType<typeof awsApp>["app"], key: string, path: string, body: unknown, session = "chat-1") => {
  const res = await app.request(path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": session }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

describe("live sessions on the AWS entry", () => {
  it("no table, or off: no tool offers keep_alive; one sent anyway is refused at once, naming the arguments there are; no runner is invoked; the sandbox route and the compat header say so too", async () => {
    for (const env of [{}, { TOOLSHED_TABLE: table, DYNAMODB_ENDPOINT: dynamo.endpoint, TOOLSHED_SYNC_SECRET: SECRET, TOOLSHED_LIVE_COORDINATOR: "off" }]) {
      const invoked: unknown[] = [];
      const executor = { run: async (req: unknown) => { invoked.push(req); throw new Error("no runner in this test"); }, start: async (req: unknown) => void invoked.push(req) } as unknown as Executor;
      const { deps, app } = awsApp(env, { storage: memoryDriver(), executor });
      expect(deps.liveCoordinator).toBeUndefined();
      const key = await tenantOn(app, "acme");
      const t0 = Date.now();
      // What the model is shown: bash and run_code without keep_alive or idle_timeout_s, in their schemas, descriptions and summaries.
      const listed = ((await (await app.request("/v1/tools", { headers: { authorization: `Bearer ${key}` } })).json()) as any).tools as any[];
      for (const name of ["bash", "run_code"]) {
        const t = listed.find((x) => x.name === name);
        expect(Object.keys(t.input_schema.properties)).not.toContain("keep_alive");
        expect(JSON.stringify(t)).not.toMatch(/keep_alive|idle_timeout_s/);
        expect(t.input_schema.properties).toHaveProperty("timeout");
      }
      for (const [tool, args] of [["bash", { command: "python3 -m http.server 8123 &", keep_alive: true }], ["run_code", { language: "python", code: "print(1)", keep_alive: false }]] as const) {
        const r = await post(app, key, `/v1/workspaces/main/tools/${tool}`, args);
        expect(r.status).toBe(400);
        expect(r.body.error.code).toBe("INVALID_ARGUMENT");
        expect(r.body.error.message).toContain("Unknown argument 'keep_alive'");
        expect(r.body.error.message).toContain("timeout");
      }
      expect(Date.now() - t0).toBeLessThan(5_000); // not after a runner's start wait
      expect(invoked).toEqual([]);
      const s = await app.request("/v1/workspaces/main/sessions/chat-1/sandbox", { headers: { authorization: `Bearer ${key}` } });
      expect(s.status).toBe(503);
      const compat = await app.request("/v1/workspaces/main/compat/anthropic/bash", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "chat-1", "x-toolshed-keep-alive": "true" }, body: JSON.stringify({ command: "echo hi" }) });
      expect(compat.headers.get("x-toolshed-error-code")).toBe("UNAVAILABLE");
      expect(((await compat.json()) as any).content[0].text).toContain("Call without X-Toolshed-Keep-Alive: true");
      expect(invoked).toEqual([]);
    }
  });

  it("TOOLSHED_LIVE_COORDINATOR: dynamodb by default with the table and the sync secret; memory; anything it cannot make is refused at start, naming what to set", () => {
    const base = { TOOLSHED_BUCKET: "b", DYNAMODB_ENDPOINT: "http://127.0.0.1:1" };
    expect(fromAwsEnv({ ...base, TOOLSHED_TABLE: "t", TOOLSHED_SYNC_SECRET: SECRET }).liveCoordinator).toBeDefined();
    expect(fromAwsEnv({ ...base, TOOLSHED_TABLE: "t" }).liveCoordinator).toBeUndefined(); // no sync secret: no runs to coordinate
    expect(fromAwsEnv({ ...base, TOOLSHED_LIVE_COORDINATOR: "memory" }).liveCoordinator).toBeDefined();
    expect(() => fromAwsEnv({ ...base, TOOLSHED_LIVE_COORDINATOR: "dynamodb", TOOLSHED_SYNC_SECRET: SECRET })).toThrow(/dynamodb needs TOOLSHED_TABLE/);
    expect(() => fromAwsEnv({ ...base, TOOLSHED_LIVE_COORDINATOR: "dynamodb", TOOLSHED_TABLE: "t" })).toThrow(/needs TOOLSHED_SYNC_SECRET or TOOLSHED_SYNC_SECRET_ARN/);
    expect(() => fromAwsEnv({ ...base, TOOLSHED_LIVE_COORDINATOR: "redis" })).toThrow(/set it to "dynamodb".*"memory".*"off"/);
  });

  it("two Lambda environments over one table: a call through A starts the sandbox, its runner polls B, the next calls through B and A run in it; sessions and tenants apart", async () => {
    const runner = fakeLiveRunner();
    const storage = memoryDriver();
    const env = { TOOLSHED_TABLE: table, DYNAMODB_ENDPOINT: dynamo.endpoint, TOOLSHED_SYNC_SECRET: SECRET };
    const a = awsApp(env, { storage, executor: runner.executor });
    const b = awsApp(env, { storage, executor: runner.executor });
    runner.attach(b.app); // every poll and answer of the runner reaches environment B
    const key = await tenantOn(a.app, "acme");
    const bash = (app: typeof a.app, command: string, session = "chat-1", k = key) => post(app, k, "/v1/workspaces/main/tools/bash", { command, keep_alive: true, timeout: 5 }, session);
    const out = (r: { status: number; body: any }) => {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.output as string;
    };
    const first = out(await bash(a.app, "export FOO=bar"));
    expect(runner.generations).toHaveLength(1);
    const g = runner.generations[0]!.generation;
    expect(first).toContain("[live sandbox started for this session");
    expect(first).toContain(`gen=${g} n=1 cmd=export FOO=bar`);
    expect(out(await bash(b.app, "echo $FOO"))).toBe(`gen=${g} n=2 cmd=echo $FOO\n`);
    expect(out(await bash(a.app, "echo again"))).toBe(`gen=${g} n=3 cmd=echo again\n`);
    // A call without keep_alive through B joins it too.
    expect(out(await post(b.app, key, "/v1/workspaces/main/tools/bash", { command: "pwd" }))).toBe(`gen=${g} n=4 cmd=pwd\n`);
    const view = await b.app.request("/v1/workspaces/main/sessions/chat-1/sandbox", { headers: { authorization: `Bearer ${key}` } });
    expect(await view.json()).toMatchObject({ generation: g, state: "idle", ports: [8123] });
    // Another session, and another tenant's session of the same name: sandboxes of their own.
    expect(out(await bash(b.app, "pwd", "chat-2"))).toContain(`gen=${runner.generations[1]!.generation} n=1`);
    const other = await tenantOn(b.app, "globex");
    expect(out(await bash(a.app, "pwd", "chat-1", other))).toContain(`gen=${runner.generations[2]!.generation} n=1`);
    expect(new Set(runner.generations.map((x) => x.generation)).size).toBe(3);
    // DELETE through A: the runner's poll held on B is told, and its loop ends.
    for (const [k, s] of [[key, "chat-1"], [key, "chat-2"], [other, "chat-1"]] as const) {
      expect((await a.app.request(`/v1/workspaces/main/sessions/${s}/sandbox`, { method: "DELETE", headers: { authorization: `Bearer ${k}` } })).status).toBe(200);
    }
    expect(await Promise.all(runner.generations.map((x) => x.done))).toEqual(["end:ended", "end:ended", "end:ended"]);
  }, 60_000);

  it("a program too large for the session's item: 413 saying to call without keep_alive; the sandbox the call started is ended, not left idle", async () => {
    const runner = fakeLiveRunner();
    const { app } = awsApp({ TOOLSHED_TABLE: table, DYNAMODB_ENDPOINT: dynamo.endpoint, TOOLSHED_SYNC_SECRET: SECRET }, { storage: memoryDriver(), executor: runner.executor });
    runner.attach(app);
    const key = await tenantOn(app, "initech");
    const r = await post(app, key, "/v1/workspaces/main/tools/run_code", { language: "python", code: `print(${JSON.stringify("x".repeat(400_000))})`, keep_alive: true }, "big");
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(413);
    expect(r.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(r.body.error.message).toContain("Call without keep_alive");
    expect(runner.generations).toHaveLength(1);
    expect(await runner.generations[0]!.done).toBe("end:crashed"); // told to end at its first poll
    // The session goes on: a call that fits starts a sandbox and runs.
    const ok = await post(app, key, "/v1/workspaces/main/tools/bash", { command: "pwd", keep_alive: true }, "big");
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.output).toContain(`gen=${runner.generations[1]!.generation} n=1 cmd=pwd`);
    await app.request("/v1/workspaces/main/sessions/big/sandbox", { method: "DELETE", headers: { authorization: `Bearer ${key}` } });
  }, 60_000);
});
