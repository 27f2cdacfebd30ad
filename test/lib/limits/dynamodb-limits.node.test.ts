/**
 * The AWS limits store (lib/limits/dynamodb.ts) against a real DynamoDB-compatible server
 * (dynalite): the conformance suite through two stores with their own clients, as two Lambda
 * instances share the table; then what is DynamoDB's own: the item's version and size.
 */
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamoLimits } from "../../../lib/limits/dynamodb.js";
import { ITEM_MAX_BYTES } from "../../../lib/shared/dynamodb-table.js";
import { startDynamo, type DynamoServer } from "../../support/dynalite.js";
import { clock, describeLimitsStore } from "./store-conformance.js";
import { describeWriteBackHolds } from "./hold-conformance.js";

let server: DynamoServer;
let table: string;
beforeAll(async () => {
  server = await startDynamo();
  table = await server.createTable();
});
afterAll(() => server?.stop());

describeLimitsStore("DynamoDB, one item per tenant", (now) => ({
  a: dynamoLimits({ client: server.client(), table, now }),
  b: dynamoLimits({ client: server.client(), table, now }),
}));

describeWriteBackHolds("DynamoDB, one item per tenant", () => ({
  a: dynamoLimits({ client: server.client(), table }),
  b: dynamoLimits({ client: server.client(), table }),
}));

describe("the DynamoDB item", () => {
  it("one item per tenant; a write bumps its version; a refused call writes nothing", async () => {
    const c = clock();
    const store = dynamoLimits({ client: server.client(), table, now: c.now });
    const version = async () => (await server.client().send(new GetItemCommand({ TableName: table, Key: { pk: { S: "limits#item-t" }, sk: { S: "state" } }, ConsistentRead: true }))).Item?.v?.N;
    expect(await version()).toBeUndefined();
    await store.set("item-t", { calls_per_minute: 1 });
    expect(await version()).toBe("1");
    expect((await store.takeCall("item-t", { key_id: "k" })).ok).toBe(true);
    expect(await version()).toBe("2");
    expect((await store.takeCall("item-t", { key_id: "k" })).ok).toBe(false);
    expect(await store.get("item-t")).toEqual({ calls_per_minute: 1 });
    expect(await version()).toBe("2");
  });

  it("200 concurrent calls at 100/min from 20 instances (20 clients racing for the item): exactly 100 pass, none fails", async () => {
    const c = clock();
    const instances = Array.from({ length: 20 }, () => dynamoLimits({ client: server.client(), table, now: c.now }));
    await instances[0]!.set("burst-t", { calls_per_minute: 100 });
    const started = Date.now();
    const ds = await Promise.all(Array.from({ length: 200 }, (_, i) => instances[i % 20]!.takeCall("burst-t", { key_id: `k${i % 3}` })));
    console.log(`200 calls from 20 instances on dynalite: ${Date.now() - started} ms`);
    expect(ds.filter((d) => d.ok)).toHaveLength(100);
  });

  it("a state past the item's bound is refused whole with an error naming the tenant, and nothing of it is written", async () => {
    const store = dynamoLimits({ client: server.client(), table });
    await store.set("big-t", { calls_per_minute: 100_000 });
    // 8,000 keys calling within one minute: ~55 bytes of bucket each, past ITEM_MAX_BYTES.
    const results = await Promise.allSettled(Array.from({ length: 8_000 }, (_, i) => store.takeCall("big-t", { key_id: `key-${i}` })));
    const refused = results.filter((r) => r.status === "rejected");
    expect(refused.length).toBeGreaterThan(7_000);
    expect(String((refused[0] as PromiseRejectedResult).reason)).toMatch(/tenant big-t's state is \d+ bytes, past the 350000 an item holds/);
    const item = await server.client().send(new GetItemCommand({ TableName: table, Key: { pk: { S: "limits#big-t" }, sk: { S: "state" } }, ConsistentRead: true }));
    expect(item.Item!.state!.S!.length).toBeLessThan(ITEM_MAX_BYTES);
  });

  it("one process's concurrent operations on a tenant share one read and one write", async () => {
    const store = dynamoLimits({ client: server.client(), table });
    const version = async () => (await server.client().send(new GetItemCommand({ TableName: table, Key: { pk: { S: "limits#group-t" }, sk: { S: "state" } }, ConsistentRead: true }))).Item?.v?.N;
    await store.set("group-t", { concurrent_runs: 30 });
    const ds = await Promise.all(Array.from({ length: 30 }, () => store.acquireRun("group-t", { key_id: "k" }, 60_000)));
    expect(ds.every((d) => d.ok)).toBe(true);
    expect(new Set(ds.map((d) => (d.ok ? d.lease : ""))).size).toBe(30);
    // set wrote version 1; the 30 acquisitions took at most a few rounds (the first alone, then the rest queued behind it).
    expect(Number(await version())).toBeLessThanOrEqual(3);
  });

  it("an operation that keeps losing the race to other instances fails with an error that says so, and applies nothing", async () => {
    await dynamoLimits({ client: server.client(), table }).set("race-t", { concurrent_runs: 100 });
    // 20 instances at once, each allowed one attempt: one write wins per version.
    const instances = Array.from({ length: 20 }, () => dynamoLimits({ client: server.client(), table, maxAttempts: 1 }));
    const results = await Promise.allSettled(instances.map((store) => store.acquireRun("race-t", { key_id: "k" }, 60_000)));
    const lost = results.filter((r) => r.status === "rejected");
    expect(lost.length).toBeGreaterThan(0);
    expect(String((lost[0] as PromiseRejectedResult).reason)).toMatch(/changed under 1 attempts in a row.*not applied, retry it/);
    // What won is exactly what is held: the losers left no lease.
    const won = results.filter((r) => r.status === "fulfilled").length;
    expect(await dynamoLimits({ client: server.client(), table }).acquireRun("race-t", { key_id: "k" }, 60_000)).toMatchObject({ ok: true, running: won + 1 });
  });
});
