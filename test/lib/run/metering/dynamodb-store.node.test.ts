/** The AWS usage store: the conformance suite against a real DynamoDB-compatible server (dynalite). */
import { afterAll, beforeAll } from "vitest";
import { dynamoUsageStore } from "../../../../lib/run/metering/dynamodb-store.js";
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
