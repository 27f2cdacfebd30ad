/**
 * Idempotency-Key claims (claims.ts) in the AWS API's DynamoDB table, beside the tenant's limits
 * item: one item per key (`limits#<tenant>` / `idem#<sha-256 of the key>`). Taking a claim is one
 * conditional PutItem (the key is free, its claim expired, or, for a takeover, the claim seen is
 * the one there and its lease is over), so two requests with one key never both take it, across
 * every Lambda instance; a refused take reads the claim that holds the key. DynamoDB's TTL deletes
 * expired items (within about two days; an expired item still there counts as free).
 */
import { DeleteItemCommand, GetItemCommand, PutItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { isConditionFailed, itemKey, PARTITIONS, TABLE_KEYS } from "../shared/dynamodb-table.js";
import { newClaim, type Claim, type ClaimAnswer, type ClaimAsk } from "./claims.js";

export function dynamoClaims(client: DynamoDBClient, table: string, now: () => number) {
  const key = (tenant: string, hash: string) => itemKey(PARTITIONS.limits(tenant), `idem#${hash}`);

  async function current(tenant: string, hash: string): Promise<Claim | undefined> {
    const got = await client.send(new GetItemCommand({ TableName: table, Key: key(tenant, hash), ConsistentRead: true }));
    return got.Item?.claim?.S ? (JSON.parse(got.Item.claim.S) as Claim) : undefined;
  }

  async function claimKey(tenant: string, ask: ClaimAsk): Promise<ClaimAnswer> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const at = now();
      const claim = newClaim(ask, at);
      try {
        await client.send(
          new PutItemCommand({
            TableName: table,
            Item: {
              ...key(tenant, ask.key),
              claim: { S: JSON.stringify(claim) },
              id: { S: claim.id },
              lease_until: { N: String(claim.lease_until) },
              expires: { N: String(claim.expires) },
              [TABLE_KEYS.ttl]: { N: String(Math.ceil(claim.expires / 1000)) },
            },
            ConditionExpression: `attribute_not_exists(#pk) OR #expires <= :now${ask.over !== undefined ? " OR (#id = :over AND #lease <= :now)" : ""}`,
            ExpressionAttributeNames: { "#pk": TABLE_KEYS.partition, "#expires": "expires", ...(ask.over !== undefined ? { "#id": "id", "#lease": "lease_until" } : {}) },
            ExpressionAttributeValues: { ":now": { N: String(at) }, ...(ask.over !== undefined ? { ":over": { S: ask.over } } : {}) },
          }),
        );
        return { taken: true, claim };
      } catch (e) {
        if (!isConditionFailed(e)) throw e;
      }
      const holder = await current(tenant, ask.key);
      if (holder) return { taken: false, claim: holder };
      // Deleted between the refused put and the read: try again.
    }
    throw new Error("limits store: an Idempotency-Key's claim kept changing under three attempts; retry the request");
  }

  async function releaseClaim(tenant: string, hash: string, id: string): Promise<void> {
    try {
      await client.send(
        new DeleteItemCommand({ TableName: table, Key: key(tenant, hash), ConditionExpression: "#id = :id", ExpressionAttributeNames: { "#id": "id" }, ExpressionAttributeValues: { ":id": { S: id } } }),
      );
    } catch (e) {
      if (!isConditionFailed(e)) throw e; // a newer claim stands
    }
  }

  return { claimKey, releaseClaim };
}


