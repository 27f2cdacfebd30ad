/**
 * A real DynamoDB-compatible server (dynalite, in memory) on 127.0.0.1, with the AWS API's table
 * made as infra/aws/storage.ts makes it (lib/shared/dynamodb-table.ts: string pk and sk).
 */
import type { AddressInfo } from "node:net";
import { CreateTableCommand, DynamoDBClient, waitUntilTableExists } from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import { TABLE_KEYS } from "../../lib/shared/dynamodb-table.js";

export interface DynamoServer {
  endpoint: string;
  client(): DynamoDBClient;
  /** Makes a table of the API's shape; returns its name. */
  createTable(name?: string): Promise<string>;
  stop(): Promise<void>;
}

let tables = 0;

export async function startDynamo(): Promise<DynamoServer> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", () => resolve()));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = () => new DynamoDBClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } });
  return {
    endpoint,
    client,
    async createTable(name = `toolshed-${tables++}`) {
      const c = client();
      await c.send(
        new CreateTableCommand({
          TableName: name,
          BillingMode: "PAY_PER_REQUEST",
          AttributeDefinitions: [
            { AttributeName: TABLE_KEYS.partition, AttributeType: "S" },
            { AttributeName: TABLE_KEYS.sort, AttributeType: "S" },
          ],
          KeySchema: [
            { AttributeName: TABLE_KEYS.partition, KeyType: "HASH" },
            { AttributeName: TABLE_KEYS.sort, KeyType: "RANGE" },
          ],
        }),
      );
      await waitUntilTableExists({ client: c, maxWaitTime: 30 }, { TableName: name });
      return name;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
