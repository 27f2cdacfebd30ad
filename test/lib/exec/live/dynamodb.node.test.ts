/**
 * The live coordinator over DynamoDB (lib/exec/live/dynamodb.ts) against a real DynamoDB-compatible
 * server (dynalite): the conformance suite, then what is DynamoDB's own: two coordinators sharing
 * the table as two Lambda environments do, the item (sealed, deleted when the session holds
 * nothing, a TTL), and the item's bound.
 */
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import { dynamoLiveCoordinator } from "../../../../lib/exec/live/dynamodb.js";
import { liveItem } from "../../../../lib/exec/live/dynamodb-item.js";
import { liveHub } from "../../../../lib/exec/live/hub.js";
import { liveService } from "../../../../lib/exec/live/service.js";
import type { BeginAnswer, LiveCoordinator, LiveKey } from "../../../../lib/exec/live/types.js";
import { ITEM_MAX_BYTES } from "../../../../lib/shared/dynamodb-table.js";
import { ToolError } from "../../../../lib/shared/errors.js";
import { handleSyncLive } from "../../../../lib/sync/live-server.js";
import type { LiveStatus } from "../../../../lib/sync/live-types.js";
import { dynamoTableForFile } from "../../../support/dynalite-table.js";
import { describeLiveCoordinator, FAST } from "./coordinator-conformance.js";

const SECRET = "sync-secret-for-tests-0123456789";
const db = dynamoTableForFile();
const make = (secret = SECRET) => dynamoLiveCoordinator({ client: db.server.client(), table: db.table, secret, timings: FAST });

describeLiveCoordinator("DynamoDB item per session", () => make());

const status = (generation: string, extra: Partial<LiveStatus> = {}): LiveStatus => ({ generation, started_at: Date.now(), last_used_at: Date.now(), processes: [], ports: [], wall_ms: 5, ...extra });
const TURN = { wait_ms: 5_000, turn_ms: 60_000 };
let n = 0;
const newKey = (): LiveKey => ({ tenant: `dt${n}`, workspace: "ws", session: `s${n++}` });
const rawItem = async (k: LiveKey) => (await db.server.client().send(new GetItemCommand({ TableName: db.table, Key: { pk: { S: `live#${k.tenant}` }, sk: { S: JSON.stringify([k.workspace, k.session]) } }, ConsistentRead: true }))).Item;
function started(b: BeginAnswer) {
  if (!("start" in b)) throw new Error(`expected a start: ${JSON.stringify(b)}`);
  return { turn: b.turn, gen: b.start.generation };
}
/** A new session's runner, started by a call that runs `request` on it: the runner has the command (seq 1), the call waits for its answer. */
async function runningFirst(c: LiveCoordinator, key: LiveKey, request: unknown) {
  const { turn, gen } = started(await c.begin(key, TURN));
  const run = c.run(key, turn, request, { timeout_ms: 10_000 });
  expect(await c.next(key, gen, status(gen))).toMatchObject({ command: { seq: 1 } });
  return { turn, gen, run };
}
/** A new session whose runner (answering through `runner`) has served its first command, the turn given back: its generation. */
async function servedSession(c: LiveCoordinator, key: LiveKey, runner = c) {
  const { turn, gen, run } = await runningFirst(c, key, "first");
  await runner.result(key, gen, { generation: gen, seq: 1, response: { ok: true, result: 1 }, status: status(gen) });
  await run;
  await c.release(key, turn);
  return gen;
}

describe("two API environments sharing the table (two coordinators, as two Lambda environments)", () => {
  it("a call through A, its runner's poll and answer through B, the next call through B then A: one sandbox, one generation", async () => {
    const a = make();
    const b = make();
    const key = newKey();
    const { turn, gen } = started(await a.begin(key, TURN));
    const first = a.run(key, turn, "export FOO=bar", { timeout_ms: 10_000 });
    expect(await b.next(key, gen, status(gen))).toEqual({ command: { seq: 1, request: "export FOO=bar" } });
    await b.result(key, gen, { generation: gen, seq: 1, response: { ok: true, result: "set" }, status: status(gen, { ports: [8123] }) });
    expect(await first).toMatchObject({ response: { ok: true, result: "set" } });
    await a.release(key, turn);
    // The runner polls through B, held there; the next call lands on B, then one on A: both run on that runner.
    for (const [c, cmd, seq] of [[b, "echo $FOO", 2], [a, "echo again", 3]] as const) {
      const poll = b.next(key, gen, status(gen));
      const call = c.call(key, cmd, { ...TURN, timeout_ms: 10_000 });
      expect(await poll).toEqual({ command: { seq, request: cmd } });
      await b.result(key, gen, { generation: gen, seq, response: { ok: true, result: `out ${seq}` }, status: status(gen) });
      expect(await call).toMatchObject({ ran: { response: { ok: true, result: `out ${seq}` }, ends: [] }, released: true });
    }
    expect((await a.status(key)).sandbox).toMatchObject({ generation: gen, state: "idle" });
    // Another session, and the same session name in another tenant: sandboxes of their own, through either environment.
    for (const other of [{ ...key, session: `${key.session}-2` }, { ...key, tenant: `${key.tenant}-other` }]) {
      expect((await b.status(other)).sandbox).toBeNull();
      const o = started(await b.begin(other, TURN));
      expect(o.gen).not.toBe(gen);
      expect(await a.next(key, o.gen, status(o.gen))).toEqual({ end: "replaced" }); // its runner's token names its own session
      await b.end(other, "deleted");
    }
    expect((await b.status(key)).sandbox).toMatchObject({ generation: gen });
  });

  it("a held poll in one environment is handed a command run through the other, and told the end another one decides", async () => {
    const a = make();
    const b = make();
    const key = newKey();
    const { turn, gen } = started(await a.begin(key, TURN));
    expect(await b.next(key, gen, status(gen))).toEqual({ wait: true }); // held poll_ms, then wait
    const held = b.next(key, gen, status(gen));
    const run = a.run(key, turn, "x", { timeout_ms: 10_000 });
    expect(await held).toEqual({ command: { seq: 1, request: "x" } });
    await b.result(key, gen, { generation: gen, seq: 1, response: { ok: true, result: 1 }, status: status(gen) });
    expect(await run).toMatchObject({ response: { ok: true, result: 1 } });
    await a.release(key, turn);
    const again = b.next(key, gen, status(gen));
    await new Promise((r) => setTimeout(r, 50));
    expect((await a.end(key, "deleted")).ends).toEqual([expect.objectContaining({ generation: gen, reason: "deleted" })]);
    expect(await again).toEqual({ end: "deleted" });
  });
});

describe("the session's item", () => {
  it("a call on a runner that has answered costs its environment two writes: the turn with the command, the answer with the turn given back", async () => {
    const client = db.server.client();
    const sent: string[] = [];
    client.middlewareStack.add((next, ctx) => (args) => (sent.push(ctx.commandName as string), next(args)), { step: "initialize" });
    const a = dynamoLiveCoordinator({ client, table: db.table, secret: SECRET, timings: FAST });
    const b = make();
    const key = newKey();
    const gen = await servedSession(a, key, b);
    const poll = b.next(key, gen, status(gen));
    await new Promise((r) => setTimeout(r, 50)); // held
    sent.length = 0;
    const call = a.call(key, "second", { ...TURN, timeout_ms: 10_000, stateless: true });
    expect(await poll).toEqual({ command: { seq: 2, request: "second" } });
    await b.result(key, gen, { generation: gen, seq: 2, response: { ok: true, result: 2 }, status: status(gen) });
    expect(await call).toMatchObject({ ran: { response: { ok: true, result: 2 } }, released: true });
    expect(sent.filter((c) => c !== "GetItemCommand")).toEqual(["PutItemCommand", "PutItemCommand"]);
    expect(await a.begin(key, { wait_ms: 0, turn_ms: 60_000 })).toMatchObject({ generation: gen }); // the turn was given back
  });

  it("a live command costs the item 4 writes: the turn with the command, the command handed to the held poll, the answer with the runner's next poll (one request, one write), the answer collected with the turn given back", async () => {
    // Polls held longer than the test takes: no poll's timeout writes while it is counted.
    const timings = { poll_ms: 10_000, stale_ms: 20_000, start_wait_ms: 10_000 };
    const counted = (sent: string[]) => {
      const client = db.server.client();
      client.middlewareStack.add((next, ctx) => (args) => (sent.push(ctx.commandName as string), next(args)), { step: "initialize" });
      return dynamoLiveCoordinator({ client, table: db.table, secret: SECRET, timings });
    };
    const api: string[] = []; // the call's environment
    const poller: string[] = []; // the environment holding the runner's poll
    const answerer: string[] = []; // the environment its answer (with its next poll) lands on
    const [a, b, c] = [counted(api), counted(poller), counted(answerer)];
    const key = newKey();
    const gen = await servedSession(a, key, b);
    const item = liveItem(db.server.client(), db.table, SECRET);
    const heldPoll = async () => {
      for (;;) {
        const { state } = await item.read(key);
        if (state.poll?.generation === gen && state.poll.taken === undefined && !state.pending) return;
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    const poll = b.next(key, gen, status(gen));
    await heldPoll();
    for (const log of [api, poller, answerer]) log.length = 0;
    const call = a.call(key, "second", { ...TURN, timeout_ms: 10_000, stateless: true });
    expect(await poll).toEqual({ command: { seq: 2, request: "second" } });
    // The runner's answer carries its next poll (LiveResultPost.poll), through the sync route as the runner sends it.
    const claims = { t: key.tenant, w: key.workspace, r: "live", exp: Date.now() / 1000 + 60, l: { s: key.session, g: gen } };
    const body = { generation: gen, seq: 2, response: { ok: true, result: 2 }, status: status(gen), poll: {} };
    const url = "https://api.example/v1/sync/live/result";
    const nextPoll = handleSyncLive(new Request(url, { method: "POST", body: JSON.stringify(body) }), new URL(url), claims, liveHub(liveService(c), undefined));
    expect(await call).toMatchObject({ ran: { response: { ok: true, result: 2 } }, released: true });
    await heldPoll();
    const writes = (log: string[]) => log.filter((op) => op !== "GetItemCommand");
    expect(writes(api)).toEqual(["PutItemCommand", "PutItemCommand"]);
    expect(writes(poller)).toEqual(["PutItemCommand"]);
    // The answer and the poll: one read and one write, then only the held poll's reads.
    expect(answerer.slice(0, 2)).toEqual(["GetItemCommand", "PutItemCommand"]);
    expect(writes(answerer)).toEqual(["PutItemCommand"]);
    await a.end(key, "deleted");
    expect(await (await nextPoll).json()).toEqual({ end: "deleted" });
  });

  it("is sealed (no request or answer in clear), has a TTL, and is deleted once the session holds nothing", async () => {
    const c = make();
    const key = newKey();
    const { turn, gen } = started(await c.begin(key, TURN));
    const run = c.run(key, turn, { command: "echo plain-text-of-the-command", secret: "s3cr3t-value" }, { timeout_ms: 10_000 });
    await new Promise((r) => setTimeout(r, 50));
    const item = await rawItem(key);
    const bytes = Buffer.from(item!.state!.B!);
    expect(bytes.includes("plain-text-of-the-command")).toBe(false);
    expect(bytes.includes("s3cr3t-value")).toBe(false);
    expect(Number(item!.expires_at!.N)).toBeGreaterThan(Date.now() / 1000 + 23 * 3600);
    // Another deployment's secret opens nothing: that coordinator sees no sandbox, and its next call is told one was lost.
    const rotated = make("another-secret-0123456789abcdef");
    expect((await rotated.status(key)).sandbox).toBeNull();
    const other = newKey();
    const { turn: t2 } = started(await c.begin(other, TURN));
    await c.release(other, t2);
    const anew = await rotated.begin(other, TURN);
    expect("start" in anew && anew.lost).toEqual({ generation: "", reason: "crashed", lost_processes: [] });
    expect((await c.status(key)).sandbox).toMatchObject({ generation: gen }); // the reader above wrote nothing
    await c.next(key, gen, status(gen));
    await c.result(key, gen, { generation: gen, seq: 1, response: { ok: true, result: "answer-in-clear?" }, status: status(gen) });
    await run;
    await c.release(key, turn);
    await c.end(key, "deleted");
    expect(await c.ended(key, gen, { generation: gen, reason: "deleted", lost_processes: [], status: status(gen) })).toEqual([]);
    expect(await rawItem(key)).toBeDefined(); // the loss, for the session's next call
    expect(await c.call(key, "y", { ...TURN, timeout_ms: 10_000, join: true })).toMatchObject({ begun: { none: { lost: { reason: "deleted" } } } });
    expect(await rawItem(key)).toBeUndefined();
  });

  it("a request past the item's bound: PAYLOAD_TOO_LARGE saying to call without keep_alive, nothing written, the turn given back", async () => {
    const c = make();
    const key = newKey();
    const gen = await servedSession(c, key);
    const big = { command: "x".repeat(ITEM_MAX_BYTES) };
    const err = await c.call(key, big, { ...TURN, timeout_ms: 10_000, stateless: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect(err).toMatchObject({ code: "PAYLOAD_TOO_LARGE", message: expect.stringMatching(/Nothing ran\. Call without keep_alive/) });
    // Nothing of it was written: the turn is free at once, and the session's next command is the runner's 2nd.
    const after = c.call(key, "next", { wait_ms: 0, turn_ms: 60_000, timeout_ms: 10_000, stateless: true });
    expect(await c.next(key, gen, status(gen))).toEqual({ command: { seq: 2, request: "next" } });
    await c.result(key, gen, { generation: gen, seq: 2, response: { ok: true, result: 2 }, status: status(gen) });
    expect(await after).toMatchObject({ ran: { response: { ok: true, result: 2 } }, released: true });
  });

  it("an answer past the item's bound reaches the call as PAYLOAD_TOO_LARGE, saying the command ran and what to do", async () => {
    const c = make();
    const key = newKey();
    const { gen, run } = await runningFirst(c, key, "cat big");
    await c.result(key, gen, { generation: gen, seq: 1, response: { ok: true, result: "y".repeat(ITEM_MAX_BYTES) }, status: status(gen) });
    const a = await run;
    expect(a).toMatchObject({ response: { ok: false, error: { code: "PAYLOAD_TOO_LARGE", message: expect.stringContaining("Call without keep_alive") } } });
    expect((a as { response: { error: { message: string } } }).response.error.message).toContain("file changes were written back");
  });
});

describe("DynamoDB not answering", () => {
  it("is UNAVAILABLE with Retry-After, naming the error's kind only, on the call's side and the runner's", async () => {
    // A table that does not exist: every read fails (ResourceNotFoundException), as a throttled or unreachable table would.
    const c = dynamoLiveCoordinator({ client: db.server.client(), table: "no-such-table", secret: SECRET, timings: FAST });
    const key = newKey();
    for (const op of [() => c.begin(key, TURN), () => c.call(key, "x", { ...TURN, timeout_ms: 1_000 }), () => c.next(key, "g_x", status("g_x")), () => c.status(key)]) {
      const e = await op().then(() => null, (x: unknown) => x);
      expect(e).toBeInstanceOf(ToolError);
      expect(e).toMatchObject({ code: "UNAVAILABLE", details: { retry_after: 2, session: key.session } });
      expect((e as ToolError).message).toContain("(ResourceNotFoundException)");
      expect((e as ToolError).message).not.toContain("no-such-table");
    }
  });
});
