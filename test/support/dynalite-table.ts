/** A real local DynamoDB (dynalite.ts) with one table of the API's shape for a test file: made before its tests, stopped after them. */
import { afterAll, beforeAll } from "vitest";
import { startDynamo, type DynamoServer } from "./dynalite.js";

export function dynamoTableForFile(): { readonly server: DynamoServer; readonly table: string } {
  const t = {} as { server: DynamoServer; table: string };
  beforeAll(async () => {
    t.server = await startDynamo();
    t.table = await t.server.createTable();
  });
  afterAll(() => t.server?.stop());
  return t;
}
