/**
 * The limits store on AWS: one DynamoDB item per tenant (`limits#<tenant>` / `state`, in the table
 * of lib/shared/dynamodb-table.ts) holding the tenant's whole state: its limits, the token buckets,
 * the run leases, each workspace's storage count, the pending workspace and checkpoint slots and the task leases.
 *
 * Every operation is the same pure state machine as the Durable Object's (tenantOps, store.ts):
 * a strongly consistent read, the operation applied in memory, and a write conditional on the
 * item's version attribute `v` (or on its absence, for a tenant's first write). A write that loses
 * to another instance's is retried from a fresh read (full-jitter backoff), so every decision is
 * made on the state every earlier decision left: the operations are serialized per tenant as the
 * Durable Object serializes them, across every Lambda instance. Within one process, operations on
 * one tenant are queued and applied a round at a time (one read, one write for the whole round),
 * so only other processes' writes make a round retry. After `maxAttempts` lost races the
 * operation fails with an error that says so (the guard then lets the call through, as for any
 * limits store outage: lib/api/auth/rate-limit.ts). A decision that changes nothing (a refused call,
 * a refused run, a `get`) writes nothing.
 *
 * Costs and bounds (docs/limits-and-quotas.md): each operation is 1 strongly consistent read
 * (1 RCU per 4 KB of item) and, when it changes the state, 1 write (1 WCU per KB). The item holds
 * only key buckets used within the last minute (an idle bucket is full, as a new one starts) and
 * leases not yet ended, so it stays small for most tenants; past ITEM_MAX_BYTES it is refused
 * with an error naming the tenant (DynamoDB's item limit is 400 KB). Idempotency-Key claims are
 * items of their own (dynamodb-claims.ts): a keyed call's claim is one conditional PutItem after its token.
 */
import { GetItemCommand, PutItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { backoffMs, isConditionFailed, ITEM_MAX_BYTES, itemKey, PARTITIONS, TABLE_KEYS } from "../shared/dynamodb-table.js";
import type { Limits } from "./fields.js";
import { TenantLimiter, type LimiterState } from "./limiter.js";
import { tenantOps, type Admitted, type LimitsStore, type TenantOps } from "./store.js";
import { dynamoClaims } from "./dynamodb-claims.js";
import { TenantUsage, type UsageState } from "./usage.js";

/** What the item's `state` attribute holds (JSON). */
interface TenantState {
  limits: Limits;
  limiter: LimiterState;
  usage: UsageState;
}


export interface DynamoLimitsOptions {
  client: DynamoDBClient;
  table: string;
  now?: () => number;
  /** Lost races (another instance wrote first) before an operation fails; default 40. */
  maxAttempts?: number;
}

export function dynamoLimits(opts: DynamoLimitsOptions): LimitsStore {
  const { client, table, now = Date.now, maxAttempts = 40 } = opts;
  const key = (tenant: string) => itemKey(PARTITIONS.limits(tenant), "state");

  /** One queued operation: applied to the state, then whether it changed it. */
  interface Queued {
    run(ops: TenantOps): boolean;
    settle(ok: boolean, error?: unknown): void;
  }
  /** Per tenant, the operations waiting for this process's next round. */
  const queues = new Map<string, Queued[]>();

  /**
   * Queues `op` for the tenant's next round in this process: a round applies every queued
   * operation in order to one read of the state and writes once (group commit), so concurrent
   * calls in one process never race each other; only other processes' writes make a round retry.
   */
  function apply<T>(tenant: string, op: (ops: TenantOps) => T, changed: (result: T) => boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let result: T;
      const queued: Queued = {
        run(ops) {
          result = op(ops);
          return changed(result);
        },
        settle: (ok, error) => (ok ? resolve(result) : reject(error)),
      };
      const queue = queues.get(tenant);
      if (queue) return void queue.push(queued);
      queues.set(tenant, [queued]);
      void rounds(tenant);
    });
  }

  /** Runs the tenant's rounds while operations are queued. */
  async function rounds(tenant: string): Promise<void> {
    for (;;) {
      const group = queues.get(tenant) ?? [];
      if (!group.length) return void queues.delete(tenant);
      queues.set(tenant, []);
      try {
        await round(tenant, group);
        for (const q of group) q.settle(true);
      } catch (e) {
        for (const q of group) q.settle(false, e);
      }
    }
  }

  /** A strongly consistent read, the group applied in order, one conditional write (when any changed the state); a lost race starts over. */
  async function round(tenant: string, group: Queued[]): Promise<void> {
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, backoffMs(attempt)));
      const got = await client.send(new GetItemCommand({ TableName: table, Key: key(tenant), ConsistentRead: true }));
      const version = got.Item?.v?.N;
      const state = got.Item?.state?.S ? (JSON.parse(got.Item.state.S) as TenantState) : undefined;
      const limiter = new TenantLimiter(now);
      const usage = new TenantUsage(now);
      if (state) {
        limiter.restore(state.limiter);
        usage.restore(state.usage);
      }
      const ops = tenantOps(limiter, state?.limits ?? {}, usage);
      let changes = false;
      for (const q of group) changes = q.run(ops) || changes;
      if (!changes) return;
      const body = JSON.stringify({ limits: ops.limits, limiter: limiter.snapshot(), usage: usage.snapshot() } satisfies TenantState);
      const bytes = new TextEncoder().encode(body).length;
      if (bytes > ITEM_MAX_BYTES) {
        throw new Error(`limits store: tenant ${tenant}'s state is ${bytes} bytes, past the ${ITEM_MAX_BYTES} an item holds (too many keys calling within one minute, or workspaces counted): lower the tenant's key count or its workspaces limit`);
      }
      try {
        await client.send(
          new PutItemCommand({
            TableName: table,
            Item: { ...key(tenant), v: { N: String(Number(version ?? 0) + 1) }, state: { S: body } },
            ...(version === undefined
              ? { ConditionExpression: "attribute_not_exists(#pk)", ExpressionAttributeNames: { "#pk": TABLE_KEYS.partition } }
              : { ConditionExpression: "#v = :v", ExpressionAttributeNames: { "#v": "v" }, ExpressionAttributeValues: { ":v": { N: version } } }),
          }),
        );
        return;
      } catch (e) {
        if (!isConditionFailed(e)) throw e;
      }
    }
    throw new Error(`limits store: tenant ${tenant}'s item changed under ${maxAttempts} attempts in a row (more concurrent writers than one item serializes); the operation was not applied, retry it`);
  }

  const always = () => true;
  const claims = dynamoClaims(client, table, now);
  return {
    get: (t) => apply(t, (o) => o.get(), () => false),
    set: (t, limits) => apply(t, (o) => o.set(limits), always),
    async takeCall(t, caller, ask, extra) {
      const d: Admitted = await apply(t, (o) => o.takeCall(caller, extra), (d) => d.ok);
      if (d.ok && ask) d.claim = await claims.claimKey(t, ask);
      return d;
    },
    leaseCalls: (t, caller, want) => apply(t, (o) => o.leaseCalls(caller, want), (d) => d.granted > 0),
    claimKey: (t, ask) => claims.claimKey(t, ask),
    releaseClaim: (t, hash, id) => claims.releaseClaim(t, hash, id),
    acquireRun: (t, caller, leaseMs, holder) => apply(t, (o) => o.acquireRun(caller, leaseMs, holder), (d) => d.ok),
    releaseRun: (t, lease) => apply(t, (o) => o.releaseRun(lease), (held) => held).then(() => undefined),
    // A refused charge changes nothing, unless it brought a workspace's first count (`init`: kept, as the Durable Object keeps it) or settled an allowance.
    chargeStorage: (t, caller, ws, delta, chargeOpts) => apply(t, (o) => o.chargeStorage(caller, ws, delta, chargeOpts), (d) => d.ok || chargeOpts?.init !== undefined || chargeOpts?.settle !== undefined),
    setStorage: (t, ws, u) => apply(t, (o) => o.setStorage(ws, u), always),
    reserveWorkspace: (t, caller, leaseMs) => apply(t, (o) => o.reserveWorkspace(caller, leaseMs), always),
    releaseWorkspace: (t, slot, outcome) => apply(t, (o) => o.releaseWorkspace(slot, outcome), always),
    reserveCheckpoint: (t, caller, ws, id, leaseMs) => apply(t, (o) => o.reserveCheckpoint(caller, ws, id, leaseMs), always),
    releaseCheckpoint: (t, id) => apply(t, (o) => o.releaseCheckpoint(id), (held) => held).then(() => undefined),
    acquireTask: (t, caller, id, leaseMs) => apply(t, (o) => o.acquireTask(caller, id, leaseMs), always),
    releaseTasks: (t, ids) => apply(t, (o) => o.releaseTasks(ids), (held) => held).then(() => undefined),
  };
}
