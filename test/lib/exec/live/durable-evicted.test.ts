/**
 * The Durable Object evicted between a sandbox's end and the session's next call: once no runner
 * polls, workerd evicts the object (seconds after an idle end), and the next call, through a new
 * instance over the same storage, must still be told what went with the sandbox (docs/live-sessions.md
 * "being told"). Before, the loss was in the evicted instance's memory only: the call ran fresh and
 * said nothing, its variables and server gone without a word.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, expect, it } from "vitest";
import { LiveObject } from "../../../../lib/runtime/live-object.js";
import type { LiveStatus } from "../../../../lib/sync/live-types.js";
import { FAST } from "./coordinator-conformance.js";

const status = (generation: string): LiveStatus => ({ generation, started_at: Date.now(), last_used_at: Date.now(), processes: [{ pid: 4, command: "python3 -m http.server 8123" }], ports: [8123], wall_ms: 5 });

beforeAll(async () => {
  const stub = env.LIVE.get(env.LIVE.idFromName("warm-up"));
  await runInDurableObject(stub, () => undefined);
}, 300_000);

it("what an idle end lost is told to the session's next call by a new instance of the object (an eviction), once", async () => {
  const stub = env.LIVE.get(env.LIVE.idFromName(`evicted-${Date.now()}`)) as unknown as DurableObjectStub<LiveObject>;
  await runInDurableObject(stub, async (object: LiveObject, state: DurableObjectState) => {
    const b = await object.begin(FAST, 5_000, 60_000);
    if (!("start" in b)) throw new Error(`expected a start: ${JSON.stringify(b)}`);
    const gen = b.start.generation;
    expect(await object.next(FAST, gen, status(gen))).toEqual({ wait: true });
    object.release(FAST, b.turn);
    await object.ended(FAST, gen, { generation: gen, reason: "idle", lost_processes: [{ pid: 4, command: "python3 -m http.server 8123" }], status: status(gen) });

    // Evicted: the next request meets a new instance over the same storage.
    const fresh = new LiveObject(state, env);
    const joined = await fresh.begin(FAST, 5_000, 60_000, "", true);
    expect(joined).toMatchObject({ none: { lost: { generation: gen, reason: "idle", lost_processes: [{ pid: 4, command: "python3 -m http.server 8123" }] } } });
    // Told once: another eviction and call finds nothing to tell.
    const again = await new LiveObject(state, env).begin(FAST, 5_000, 60_000, "", true);
    expect(again).toMatchObject({ none: {} });
    expect((again as { none: { lost?: unknown } }).none.lost).toBeUndefined();
  });
});

it("after an eviction too, the loss is told to a call of the key that started the sandbox, never to another key's", async () => {
  // What run-live.ts sandboxOf makes: [network, secrets, workspace instance, API key id].
  const ofKey = (keyId: string) => JSON.stringify([false, [], null, keyId]);
  const stub = env.LIVE.get(env.LIVE.idFromName(`evicted-keys-${Date.now()}`)) as unknown as DurableObjectStub<LiveObject>;
  await runInDurableObject(stub, async (object: LiveObject, state: DurableObjectState) => {
    const b = await object.begin(FAST, 5_000, 60_000, ofKey("key-a"));
    if (!("start" in b)) throw new Error(`expected a start: ${JSON.stringify(b)}`);
    const gen = b.start.generation;
    expect(await object.next(FAST, gen, status(gen))).toEqual({ wait: true });
    object.release(FAST, b.turn);
    await object.ended(FAST, gen, { generation: gen, reason: "idle", lost_processes: [{ pid: 4, command: "python3 -m http.server 8123" }], status: status(gen) });

    const other = await new LiveObject(state, env).begin(FAST, 5_000, 60_000, ofKey("key-b"), true);
    expect(other).toMatchObject({ none: {} });
    expect((other as { none: { lost?: unknown } }).none.lost).toBeUndefined(); // before: the first key's loss, its processes listed
    const own = await new LiveObject(state, env).begin(FAST, 5_000, 60_000, ofKey("key-a"), true);
    expect(own).toMatchObject({ none: { lost: { generation: gen, reason: "idle", lost_processes: [{ pid: 4, command: "python3 -m http.server 8123" }] } } });
  });
});
