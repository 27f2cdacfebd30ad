/** The AWS usage store: the conformance suite against a real DynamoDB-compatible server (dynalite). */
import { BatchWriteItemCommand, QueryCommand, type BatchWriteItemCommandOutput } from "@aws-sdk/client-dynamodb";
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

  it("items DynamoDB leaves unprocessed in a BatchWriteItem (throttled) are written again until none is left", async () => {
    const client = server.client();
    const send = client.send.bind(client) as (c: unknown) => Promise<unknown>;
    let throttled = 0;
    // The server's answer as DynamoDB gives it under throttling: only the first half written, the rest returned as unprocessed.
    (client as { send: unknown }).send = async (command: unknown) => {
      if (!(command instanceof BatchWriteItemCommand) || throttled >= 3) return send(command);
      throttled++;
      const requests = command.input.RequestItems![table]!;
      const half = Math.ceil(requests.length / 2);
      await send(new BatchWriteItemCommand({ RequestItems: { [table]: requests.slice(0, half) } }));
      return { UnprocessedItems: requests.length > half ? { [table]: requests.slice(half) } : {}, $metadata: {} } satisfies BatchWriteItemCommandOutput;
    };
    const store = dynamoUsageStore({ client, table });
    const now = Date.now();
    const records = Array.from({ length: 30 }, (_, i): StoredRecord => ({ tenant: "throttled-t", workspace: "w", key: "k", tool: "read", ok: true, ms: i, bytes_read: 0, bytes_written: 0, at: now - 1000 }));
    await store.record(records);
    expect(throttled).toBe(3);
    const page = await store.exportRecords("throttled-t", { from: now - HOUR_MS, to: now + 1 });
    expect(page.records.map((r) => r.ms)).toEqual(records.map((r) => r.ms));
  });
});
