/**
 * The usage store on AWS: DynamoDB (the table of lib/shared/dynamodb-table.ts), a tenant's usage
 * under one partition key `usage#<tenant>`, three kinds of item by sort key:
 *
 *   h#<hour>#<[kind,name,workspace,key]>  an hour's sums for one tool-or-route × workspace × key:
 *                                         UpdateItem ADD (atomic: batches from any number of
 *                                         instances add up exactly)
 *   r#<seq>                               one raw record (JSON), for the export; TTL at
 *                                         `at` + RAW_RETENTION_MS (the export also filters by age,
 *                                         as DynamoDB deletes expired items within about two days)
 *   n#<hour>                              the hour's record counter (UpdateItem ADD), kept
 *                                         as long as the hour's raw records
 *
 * `seq` = the hour the record was made in (epoch hours) × SEQ_PER_HOUR + the hour's counter:
 * unique per tenant, ordered by the hour, then by when it was stored; at most 15 digits (the
 * export's cursor). So an export over [from, to) reads exactly the raw items of its hours, filtered
 * by `at`. A record older than RAW_RETENTION_MS when stored counts in the aggregates only.
 *
 * A batch costs, per tenant in it: 1 UpdateItem of the counter per hour its records were made in, 1 UpdateItem per distinct
 * hour × tool × workspace × key, and one PutRequest per record in BatchWriteItem calls of 25
 * (unprocessed items retried with backoff). docs/usage.md: the costs and the hot-item rate.
 */
import { BatchWriteItemCommand, QueryCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient, type WriteRequest } from "@aws-sdk/client-dynamodb";
import { backoffMs, itemKey, padded, PARTITIONS, TABLE_KEYS } from "../../shared/dynamodb-table.js";
import { addToAggregate, groupRows, type Aggregate } from "./memory-store.js";
import { clampLimit, DAY_MS, HOUR_MS, hourOf, hourRange, RAW_RETENTION_MS, SUM_NAMES, zeroSums, type ExportPage, type ExportedRecord, type StoredRecord, type UsageStore } from "./store.js";

/** Records one tenant may store in one hour (seq's low digits). */
export const SEQ_PER_HOUR = 1_000_000_000;
const BATCH_WRITE_MAX = 25;
const UNPROCESSED_ATTEMPTS = 8;
const { partition: PK, sort: SK, ttl: TTL } = TABLE_KEYS;

export interface DynamoUsageOptions {
  client: DynamoDBClient;
  table: string;
  now?: () => number;
}

export function dynamoUsageStore(opts: DynamoUsageOptions): UsageStore {
  const { client, table, now = Date.now } = opts;
  const pk = (tenant: string): AttributeValue => ({ S: PARTITIONS.usage(tenant) });
  const rawKey = (seq: number) => `r#${padded(seq, 15)}`;

  /** Reserves `count` seqs for a tenant's records made in `hour`: the first of them. */
  async function reserve(tenant: string, hour: number, count: number): Promise<number> {
    const out = await client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: itemKey(PARTITIONS.usage(tenant), `n#${padded(hour, 15)}`),
        UpdateExpression: "ADD #n :count SET #ttl = :ttl",
        ExpressionAttributeNames: { "#n": "n", "#ttl": TTL },
        // Past every raw record of the hour: a counter deleted early would give a seq twice.
        ExpressionAttributeValues: { ":count": { N: String(count) }, ":ttl": { N: String(Math.ceil((hour + HOUR_MS + RAW_RETENTION_MS + 2 * DAY_MS) / 1000)) } },
        ReturnValues: "UPDATED_NEW",
      }),
    );
    const last = Number(out.Attributes?.n?.N);
    if (!Number.isSafeInteger(last) || last >= SEQ_PER_HOUR) throw new Error(`usage store: tenant ${tenant}'s record counter for the hour is ${out.Attributes?.n?.N}: past the ${SEQ_PER_HOUR} records an hour holds`);
    return (hour / HOUR_MS) * SEQ_PER_HOUR + last - count + 1;
  }

  /** Adds a group's sums to its hourly item. */
  function addAggregate(tenant: string, a: Aggregate): Promise<unknown> {
    const names: Record<string, string> = {};
    const values: Record<string, AttributeValue> = {};
    SUM_NAMES.forEach((s, i) => {
      names[`#s${i}`] = s;
      values[`:s${i}`] = { N: String(a.sums[s]) };
    });
    return client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: itemKey(PARTITIONS.usage(tenant), `h#${padded(a.hour, 15)}#${JSON.stringify([a.kind, a.name, a.workspace, a.key])}`),
        UpdateExpression: `ADD ${SUM_NAMES.map((_, i) => `#s${i} :s${i}`).join(", ")}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
  }

  /** Puts raw items, 25 a call, retrying what DynamoDB left unprocessed. */
  async function putAll(requests: WriteRequest[]): Promise<void> {
    for (let i = 0; i < requests.length; i += BATCH_WRITE_MAX) {
      let pending = requests.slice(i, i + BATCH_WRITE_MAX);
      for (let attempt = 0; pending.length; attempt++) {
        if (attempt === UNPROCESSED_ATTEMPTS) throw new Error(`usage store: ${pending.length} raw records left unprocessed by DynamoDB after ${attempt} attempts (throttled); their aggregates are stored`);
        if (attempt > 0) await new Promise((r) => setTimeout(r, backoffMs(attempt, 1_000)));
        const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
        pending = out.UnprocessedItems?.[table] ?? [];
      }
    }
  }

  async function recordTenant(tenant: string, records: StoredRecord[]): Promise<void> {
    const groups = new Map<string, Aggregate>();
    const rawByHour = new Map<number, StoredRecord[]>();
    const kept = now() - RAW_RETENTION_MS;
    for (const r of records) {
      addToAggregate(groups, r);
      const hour = hourOf(r.at);
      if (r.at >= kept) rawByHour.set(hour, [...(rawByHour.get(hour) ?? []), r]);
    }
    // The sums beside the raw records: the raw records wait for their seqs (one counter update per hour), the sums for nothing.
    const raw = async () => {
      const puts: WriteRequest[] = [];
      for (const [hour, list] of rawByHour) {
        const first = await reserve(tenant, hour, list.length);
        list.forEach((r, i) => {
          const item = { ...itemKey(PARTITIONS.usage(tenant), rawKey(first + i)), at: { N: String(r.at) }, record: { S: JSON.stringify(r) }, [TTL]: { N: String(Math.ceil((r.at + RAW_RETENTION_MS) / 1000)) } };
          puts.push({ PutRequest: { Item: item } });
        });
      }
      await putAll(puts);
    };
    await Promise.all([...[...groups.values()].map((g) => addAggregate(tenant, g)), raw()]);
  }

  /** Every item of a tenant's partition with a sort key in [lo, hi], in order, a query page at a time. */
  async function* items(tenant: string, lo: string, hi: string, extra: { filter?: string; values?: Record<string, AttributeValue>; pageSize?: number } = {}) {
    let start: Record<string, AttributeValue> | undefined;
    do {
      const out = await client.send(
        new QueryCommand({
          TableName: table,
          ConsistentRead: true,
          KeyConditionExpression: "#pk = :pk AND #sk BETWEEN :lo AND :hi",
          ExpressionAttributeNames: { "#pk": PK, "#sk": SK, ...(extra.filter ? { "#at": "at" } : {}) },
          ExpressionAttributeValues: { ":pk": pk(tenant), ":lo": { S: lo }, ":hi": { S: hi }, ...extra.values },
          ...(extra.filter ? { FilterExpression: extra.filter } : {}),
          ...(extra.pageSize ? { Limit: extra.pageSize } : {}),
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      yield* out.Items ?? [];
      start = out.LastEvaluatedKey;
    } while (start);
  }

  return {
    async record(records) {
      const byTenant = new Map<string, StoredRecord[]>();
      for (const r of records) byTenant.set(r.tenant, [...(byTenant.get(r.tenant) ?? []), r]);
      await Promise.all([...byTenant].map(([tenant, list]) => recordTenant(tenant, list)));
    },

    async query(tenant, q) {
      const { first, end } = hourRange(q);
      const aggregates: Aggregate[] = [];
      // "h#<end>" sorts before every item of hour `end` ("h#<end>#[…"): the range ends before it.
      for await (const item of items(tenant, `h#${padded(first, 15)}`, `h#${padded(end, 15)}`)) {
        const sk = item[SK]!.S!;
        const [kind, name, workspace, key] = JSON.parse(sk.slice(sk.indexOf("#", 2) + 1)) as ["tool" | "route", string, string, string];
        const sums = zeroSums();
        for (const s of SUM_NAMES) sums[s] = Number(item[s]?.N ?? 0);
        aggregates.push({ hour: Number(sk.slice(2, 17)), kind, name, workspace, key, sums });
      }
      return groupRows(aggregates, q);
    },

    async exportRecords(tenant, q): Promise<ExportPage> {
      const limit = clampLimit(q.limit);
      const from = Math.max(q.from, now() - RAW_RETENTION_MS);
      if (from >= q.to) return { records: [] };
      const seqOfHour = (at: number) => (hourOf(at) / HOUR_MS) * SEQ_PER_HOUR;
      const lo = Math.max(seqOfHour(from), q.cursor === undefined ? 0 : Number(q.cursor) + 1);
      const hi = seqOfHour(q.to - 1) + SEQ_PER_HOUR - 1;
      if (lo > hi) return { records: [] };
      const records: ExportedRecord[] = [];
      const values = { ":from": { N: String(from) }, ":to": { N: String(q.to) } };
      for await (const item of items(tenant, rawKey(lo), rawKey(hi), { filter: "#at >= :from AND #at < :to", values, pageSize: limit + 1 })) {
        const seq = Number(item[SK]!.S!.slice(2));
        if (records.length === limit) return { records, next_cursor: String(records.at(-1)!.seq) };
        records.push({ ...(JSON.parse(item.record!.S!) as StoredRecord), seq });
      }
      return { records };
    },
  };
}
