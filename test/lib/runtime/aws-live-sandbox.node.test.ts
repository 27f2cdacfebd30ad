/**
 * Live sessions on AWS end to end, with the real runner (infra/container behind the local Lambda
 * Invoke stand-in, bubblewrap) and two API environments made by fromAwsEnv over one DynamoDB table
 * (dynalite): the runner's polls and sync reach environment B over HTTP; the session's calls land on
 * A, then B, then A. One live shell serves them all: what the first call exported, the next ones see.
 * One runner request per command: each answer is the runner's next poll (LiveResultPost.poll).
 */
import { LambdaClient } from "@aws-sdk/client-lambda";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import bash from "../../../functions/bash.js";
import { tools as fileTools } from "../../../functions/index.js";
import { startLocalInvokeServer, type LocalInvokeServer } from "../../../infra/container/local-server.js";
import { createApp } from "../../../lib/api/app.js";
import { lambdaExecutor } from "../../../lib/exec/lambda.js";
import { fromAwsEnv } from "../../../lib/runtime/aws.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../../lib/storage/kv-over-storage.js";
import { RUNNER_SECRET } from "../../infra/container/helpers.js";
import { startDynamo, type DynamoServer } from "../../support/dynalite.js";
import { serveFetch, type Served } from "../../support/serve-fetch.js";

const ADMIN = "admin-token-for-tests";
const SECRET = "sync-secret-for-tests-0123456789";
const root = mkdtempSync(join(tmpdir(), "toolshed-aws-live-"));
chmodSync(root, 0o711);
let dynamo: DynamoServer;
let invoke: LocalInvokeServer;
let served: Served;
const saved = { id: process.env.AWS_ACCESS_KEY_ID, key: process.env.AWS_SECRET_ACCESS_KEY };
type App = ReturnType<typeof createApp>;
let a: App;
let b: App;
/** The runner's requests to /v1/sync/live/*, by route. */
const liveRequests: string[] = [];

beforeAll(async () => {
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "local", AWS_SECRET_ACCESS_KEY: "local" }); // dynalite takes any
  dynamo = await startDynamo();
  invoke = await startLocalInvokeServer({ secret: RUNNER_SECRET, root, functionName: "runner" });
  const env = { TOOLSHED_BUCKET: "b", TOOLSHED_TABLE: await dynamo.createTable(), DYNAMODB_ENDPOINT: dynamo.endpoint, TOOLSHED_SYNC_SECRET: SECRET };
  const storage = memoryDriver();
  const kv = storageKeyValue(storage, "kv/");
  served = await serveFetch((req) => {
    const route = /^\/v1\/sync\/live\/(\w+)$/.exec(new URL(req.url).pathname)?.[1];
    if (route) liveRequests.push(route);
    return b.fetch(req);
  }); // the runner reaches environment B only
  const environment = () => {
    const executor = lambdaExecutor({ secret: RUNNER_SECRET, client: new LambdaClient({ endpoint: invoke.url, region: "us-east-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } }), functionName: "runner" });
    return createApp({ ...fromAwsEnv(env), storage, kv, adminToken: ADMIN, executor, syncSecret: SECRET, syncUrl: served.url }, [...fileTools, bash]);
  };
  a = environment();
  b = environment();
}, 60_000);
afterAll(async () => {
  await served?.close();
  await invoke?.close();
  await dynamo?.stop();
  rmSync(root, { recursive: true, force: true });
  for (const [k, v] of [["AWS_ACCESS_KEY_ID", saved.id], ["AWS_SECRET_ACCESS_KEY", saved.key]] as const) v === undefined ? delete process.env[k] : (process.env[k] = v);
});

it("export FOO=bar through A, echo $FOO through B, then through A again: one live shell behind two environments", async () => {
  const admin = async (path: string, body: unknown) => (await a.request(path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) })).json() as Promise<any>;
  await admin("/v1/admin/tenants", { id: "acme" });
  const key = (await admin("/v1/admin/tenants/acme/keys", { scopes: ["read", "write", "execute"] })).key as string;
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json", "x-session-id": "chat-1" };
  expect((await b.request("/v1/workspaces", { method: "POST", headers, body: JSON.stringify({ id: "main" }) })).status).toBe(201);
  const run = async (app: App, command: string) => {
    const res = await app.request("/v1/workspaces/main/tools/bash", { method: "POST", headers, body: JSON.stringify({ command, keep_alive: true }) });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    return body.output as string;
  };
  expect(await run(a, "export FOO=bar; echo $$ > /tmp/shell-pid")).toContain("[live sandbox started for this session");
  expect(await run(b, 'echo "$FOO from $(cat /tmp/shell-pid)"')).toMatch(/^bar from \d+\n$/);
  expect(await run(a, 'echo "$FOO again"; test "$$" = "$(cat /tmp/shell-pid)" && echo same shell')).toBe("bar again\nsame shell\n");
  // One request per command: the first poll brought the first command; each answer was the next poll (the last one held now).
  expect(liveRequests).toEqual(["next", "result", "result", "result"]);
  const end = await a.request("/v1/workspaces/main/sessions/chat-1/sandbox", { method: "DELETE", headers });
  expect(end.status).toBe(200);
}, 120_000);
