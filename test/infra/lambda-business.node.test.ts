/**
 * The Lambda entry (infra/lambda.ts) with TOOLSHED_TABLE: usage and limits in DynamoDB (dynalite on
 * 127.0.0.1), files in S3 (s3rver), invoked through response streaming (lambda-local). Each handler
 * returns once its usage record is stored, so the usage routes count every call made before them;
 * calls_per_minute refuses past the limit; a background run's result stored through the sync API is
 * metered before that handler returns.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { mintSyncToken } from "../../lib/sync/token.js";
import { eventV2, invokeWhole } from "../support/lambda-invoke.js";
import { lambdaEnv, type LambdaEnv } from "../support/lambda-env.js";

let aws: LambdaEnv;
let handler: unknown;
const ADMIN = "lambda-business-admin";
const SYNC_SECRET = "lambda-business-sync-secret-0123";

beforeAll(async () => {
  aws = await lambdaEnv({ bucket: "toolshed-business", adminToken: ADMIN, vars: { TOOLSHED_SYNC_SECRET: SYNC_SECRET } });
  ({ handler } = await import("../../infra/lambda.js"));
});

afterAll(async () => {
  await aws?.stop();
});

/** One invocation, its body read whole and the handler returned (its records stored). */
async function call(method: string, path: string, token: string, json?: unknown) {
  return invokeWhole(handler, eventV2(method, path, { token, ...(json !== undefined ? { json } : {}) }));
}

it("meters every call into DynamoDB before its handler returns, and limits calls per minute", async () => {
  expect((await call("POST", "/v1/admin/tenants", ADMIN, { id: "biz" })).status).toBe(201);
  const key = (await call("POST", "/v1/admin/tenants/biz/keys", ADMIN, {})).json.key as string;
  expect((await call("POST", "/v1/workspaces", key, { id: "w" })).status).toBe(201);
  const write = await call("POST", "/v1/workspaces/w/tools/write", key, { file_path: "a.txt", content: "hello\n" });
  expect(write.json).toMatchObject({ ok: true });
  expect(write.headers["ratelimit-policy"]).toBe('"tenant";q=1200;w=60');
  expect((await call("POST", "/v1/workspaces/w/tools/read", key, { file_path: "a.txt" })).status).toBe(200);
  expect((await call("POST", "/v1/workspaces/w/tools/read", key, { file_path: "missing.txt" })).status).toBe(404);

  // Each handler above returned after its record was stored: the aggregates count them all now.
  const usage = await call("GET", "/v1/admin/tenants/biz/usage?group_by=tool", ADMIN);
  expect(usage.status, usage.body).toBe(200);
  const rows = usage.json.rows as { tool?: string; route?: string; calls: number; ok: number; errors: number }[];
  expect(rows.find((r) => r.tool === "read")).toMatchObject({ calls: 2, ok: 1, errors: 1 });
  expect(rows.find((r) => r.tool === "write")).toMatchObject({ calls: 1, ok: 1 });
  expect(rows.find((r) => r.route === "POST workspaces")).toMatchObject({ calls: 1 });
  const exported = await call("GET", "/v1/admin/tenants/biz/usage/export", ADMIN);
  expect(exported.body.trim().split("\n").map((l: string) => JSON.parse(l).tool ?? JSON.parse(l).route)).toEqual(["POST workspaces", "write", "read", "read"]);

  // calls_per_minute from the tenant's item: 2 a minute, the bucket full after the limit is set.
  expect((await call("PUT", "/v1/admin/tenants/biz/limits", ADMIN, { calls_per_minute: 2 })).status).toBe(200);
  // A key this environment has not pooled calls for (the first key's pool may spend what it took under the old limit
  // for 10 s: lib/limits/call-leases.ts); at 2 a minute nothing is taken ahead, every call asks the item.
  const fresh = (await call("POST", "/v1/admin/tenants/biz/keys", ADMIN, {})).json.key as string;
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await call("GET", "/v1/workspaces", fresh)).status);
  expect(statuses).toEqual([200, 200, 429, 429]);
}, 120_000);

it("meters a background run where its runner stores the result, before that handler returns", async () => {
  expect((await call("POST", "/v1/admin/tenants", ADMIN, { id: "bizrun" })).status).toBe(201);
  // The run's workspace must exist: a metered run's record routes refuse a workspace gone or made again (lib/sync/runs.ts).
  const key = (await call("POST", "/v1/admin/tenants/bizrun/keys", ADMIN, {})).json.key as string;
  expect((await call("POST", "/v1/workspaces", key, { id: "w" })).status).toBe(201);
  // The runner's token for a background run, as runRequest mints it (the meter claim names the starting key).
  const token = await mintSyncToken(SYNC_SECRET, { t: "bizrun", w: "w", r: "run_lambda_bg", m: { k: "kbg" } }, 900);
  const result = { ok: true, result: { run_id: "x", exit_code: 0, duration_ms: 2345, timed_out: false, killed: false } };
  // One PUT: "once" rests on the result's create-only write, which s3rver does not enforce (docs/storage.md);
  // a repeated PUT is tested over storage that does (test/lib/sync/background-run-usage.node.test.ts).
  expect((await call("PUT", "/v1/sync/run/result", token, result)).status).toBe(204);
  const exported = await call("GET", "/v1/admin/tenants/bizrun/usage/export", ADMIN);
  expect(exported.body.trim().split("\n").map((l: string) => JSON.parse(l)).filter((r: { route?: string }) => r.route === "background run")).toEqual([expect.objectContaining({ tenant: "bizrun", workspace: "w", key: "kbg", route: "background run", ok: true, sandbox_ms: 2345 })]);
}, 120_000);
