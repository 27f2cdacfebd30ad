/**
 * The one DynamoDB table of the AWS API (TOOLSHED_TABLE; infra/aws/storage.ts makes it from these names): a string
 * partition key and a string sort key, on-demand, and a TTL attribute DynamoDB deletes items by.
 * Its users lay their items out under their own partition-key prefixes:
 *   limits#<tenant> / state                 lib/limits/dynamodb.ts (one item per tenant)
 *   limits#<tenant> / idem#<key hash>       lib/limits/dynamodb-claims.ts (one item per Idempotency-Key)
 *   usage#<tenant>  / h#…, r#…, n#…          lib/run/metering/dynamodb-store.ts
 *   live#<tenant>   / ["<workspace>","<session>"]   lib/exec/live/dynamodb-item.ts (one item per live session)
 */
export const TABLE_KEYS = {
  partition: "pk",
  sort: "sk",
  /** Epoch seconds after which DynamoDB deletes the item (within about two days). */
  ttl: "expires_at",
} as const;

/** The partitions the stores lay their items under (the list above). */
export const PARTITIONS = {
  limits: (tenant: string) => `limits#${tenant}`,
  usage: (tenant: string) => `usage#${tenant}`,
  live: (tenant: string) => `live#${tenant}`,
} as const;

/** The most bytes a store puts in one item's state (DynamoDB's item limit is 400 KB, keys and attribute names included). */
export const ITEM_MAX_BYTES = 350_000;

/** An item's key from its partition and sort key values: the one place the stores address items. */
export const itemKey = (partition: string, sort: string) => ({ [TABLE_KEYS.partition]: { S: partition }, [TABLE_KEYS.sort]: { S: sort } });

/** A number a sort key can order as a string: zero-padded to `width` digits. */
export const padded = (n: number, width: number) => String(n).padStart(width, "0");

/** Waits before attempt `attempt` (0-based) of a retried write: full jitter over a doubling cap (ms). */
export function backoffMs(attempt: number, capMs = 200): number {
  return Math.random() * Math.min(capMs, 5 * 2 ** attempt);
}

/** The item actions those stores use: all the API's role is granted on the table (infra/aws/api.ts). */
export const TABLE_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:BatchWriteItem"] as const;

/** Whether a DynamoDB call was refused by its ConditionExpression (the SDK's ConditionalCheckFailedException, by name). */
export const isConditionFailed = (e: unknown): boolean => (e as { name?: string } | null)?.name === "ConditionalCheckFailedException";
