/**
 * A live session's state as one DynamoDB item (dynamodb.ts; docs/live-sessions.md): in the API's
 * table (lib/shared/dynamodb-table.ts) under `live#<tenant>` / `["<workspace>","<session>"]`, so a
 * session's item is its tenant's alone. Attributes: `v` (the version every write is conditional
 * on: a random id, never a counter, so an item deleted and made again never shows a version an
 * older read saw), `state` (the LiveState's JSON, sealed), `expires_at` (TTL: a day after the last write, so a
 * session abandoned without an end goes away). An empty state deletes the item (conditionally):
 * idle sessions leave nothing.
 *
 * Sealed: the state holds a command's RunRequest (its per-call sync token; the egress secrets' values
 * when the call has any) and the runner's answer, so it rests in the table (and its backups) only as
 * AES-256-GCM ciphertext under a key derived (HKDF-SHA-256) from the deployment's sync secret, the
 * item's key as additional data (a state copied to another session's item does not open).
 * Bounded: a state past ITEM_MAX_BYTES is never written (LiveItemTooLarge: the caller answers it).
 */
import { DeleteItemCommand, GetItemCommand, PutItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { randomId } from "../../shared/hash.js";
import { sealer } from "../../shared/seal.js";
import { ITEM_MAX_BYTES, itemKey, isConditionFailed, PARTITIONS, TABLE_KEYS } from "../../shared/dynamodb-table.js";
import { emptyLiveState, isEmpty, type LiveState } from "./session-records.js";
import type { LiveKey } from "./types.js";

/** How long an item outlives its last write (TTL). A live sandbox's runner writes it at every poll (LIVE_POLL_MS). */
export const LIVE_ITEM_TTL_S = 24 * 3600;

/** A state that would pass ITEM_MAX_BYTES: nothing was written. */
export class LiveItemTooLarge extends Error {
  constructor(readonly bytes: number) {
    super(`the live session's state would be ${bytes} bytes, past the ${ITEM_MAX_BYTES} its item holds`);
  }
}

export interface LiveItemRead {
  state: LiveState;
  /** The version read; undefined: no item (the empty state). */
  version: string | undefined;
}

export interface LiveItem {
  read(k: LiveKey): Promise<LiveItemRead>;
  /** Writes `state` over the version read (deletes the item when it is empty); false: another write came first (read again). */
  write(k: LiveKey, state: LiveState, version: string | undefined, now: number): Promise<boolean>;
}

export function liveItem(client: DynamoDBClient, table: string, secret: string): LiveItem {
  const key = (k: LiveKey) => itemKey(PARTITIONS.live(k.tenant), JSON.stringify([k.workspace, k.session]));
  const aad = (k: LiveKey) => `toolshed-live-state.v1\n${JSON.stringify([k.tenant, k.workspace, k.session])}`;
  const box = sealer(secret, "toolshed-live-state");
  const seal = (k: LiveKey, plain: string): Promise<Uint8Array> => box.seal(plain, aad(k));
  const open = async (k: LiveKey, sealed: Uint8Array): Promise<string> => new TextDecoder().decode(await box.open(sealed, aad(k)));
  const versioned = (version: string | undefined): { ConditionExpression: string; ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues?: Record<string, { S: string }> } =>
    version === undefined
      ? { ConditionExpression: "attribute_not_exists(#pk)", ExpressionAttributeNames: { "#pk": TABLE_KEYS.partition } }
      : { ConditionExpression: "#v = :v", ExpressionAttributeNames: { "#v": "v" }, ExpressionAttributeValues: { ":v": { S: version } } };

  return {
    async read(k) {
      const got = await client.send(new GetItemCommand({ TableName: table, Key: key(k), ConsistentRead: true }));
      const sealed = got.Item?.state?.B;
      if (!got.Item || !sealed) return { state: emptyLiveState(), version: undefined };
      let state: LiveState;
      try {
        state = JSON.parse(await open(k, sealed)) as LiveState;
      } catch {
        // Sealed under another sync secret (it was rotated): the session's state is lost, as a Durable Object's on a
        // reset; the next call is told (a loss, as of a runner that stopped answering), not left to find its shell gone.
        state = { ...emptyLiveState(), loss: { generation: "", reason: "crashed", lost_processes: [] } };
      }
      return { state, version: got.Item.v?.S };
    },
    async write(k, state, version, now) {
      try {
        if (isEmpty(state)) {
          if (version !== undefined) await client.send(new DeleteItemCommand({ TableName: table, Key: key(k), ...versioned(version) }));
          return true;
        }
        const sealed = await seal(k, JSON.stringify(state));
        if (sealed.length > ITEM_MAX_BYTES) throw new LiveItemTooLarge(sealed.length);
        const item = { ...key(k), v: { S: randomId(12) }, state: { B: sealed }, [TABLE_KEYS.ttl]: { N: String(Math.floor(now / 1000) + LIVE_ITEM_TTL_S) } };
        await client.send(new PutItemCommand({ TableName: table, Item: item, ...versioned(version) }));
        return true;
      } catch (e) {
        if (isConditionFailed(e)) return false;
        throw e;
      }
    },
  };
}
