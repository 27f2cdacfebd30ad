/** The AWS usage store: the conformance suite against a real DynamoDB-compatible server (dynalite). */
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamoUsageStore } from "../../../../lib/run/metering/dynamodb-store.js";
import { HOUR_MS, RAW_RETENTION_MS, type StoredRecord } from "../../../../lib/run/metering/store.js";
import { TABLE_KEYS } from "../../../../lib/shared/dynamodb-table.js";
import { startDynamo, type DynamoServer } from "../../../support/dynalite.js";
import { describeUsageStore } from "./store-conformance.js";

let server: DynamoServer;
let table: string;
beforeAll(async () => {
  server = await startDynamo();
  table = await server.createTable();
});
afterAll(() => server?.stop());

describeUsageStore("DynamoDB", () => dynamoUsageStore({ client: server.client(), table }));

describe("the DynamoDB items", () => {
  it("raw records carry their TTL (at + 35 days); one older than that when stored is summed but not kept raw; seqs never repeat", async () => {
    const store = dynamoUsageStore({ client: server.client(), table });
    const now = Date.now();
    const rec = (at: number, ms: number): StoredRecord => ({ tenant: "ttl-t", workspace: "w", key: "k", tool: "read", ok: true, ms, bytes_read: 0, bytes_written: 0, at });
    await Promise.all([store.record([rec(now - 1000, 1), rec(now - 500, 2)]), store.record([rec(now - 400, 3)]), store.record([rec(now - RAW_RETENTION_MS - HOUR_MS, 4)])]);
    const items = (await server.client().send(new QueryCommand({ TableName: table, KeyConditionExpression: "pk = :pk AND begins_with(sk, :r)", ExpressionAttributeValues: { ":pk": { S: "usage#ttl-t" }, ":r": { S: "r#" } } }))).Items!;
    expect(items.map((i) => Number(i[TABLE_KEYS.ttl]!.N) - Math.ceil((Number(i.at!.N) + RAW_RETENTION_MS) / 1000))).toEqual([0, 0, 0]);
    const page = await store.exportRecords("ttl-t", { from: 0, to: now + 1 });
    expect(page.records.map((r) => r.ms).sort()).toEqual([1, 2, 3]);
    expect(new Set(page.records.map((r) => r.seq)).size).toBe(3);
    const totals = await store.query("ttl-t", { from: now - RAW_RETENTION_MS - 2 * HOUR_MS, to: now + 1, groupBy: [] });
    expect(totals[0]).toMatchObject({ calls: 4, ms: 10 });
  });
});
