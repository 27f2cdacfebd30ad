/**
 * A live poll that receives a command carries back the answer to the manifest query it sent
 * (lib/sync/live-server.ts; LivePoll.manifest → LiveCommand.manifest): the same answer
 * POST /v1/sync/manifest gives for that query, read after the coordinator handed the command over,
 * in one round trip (the workspace record beside the upper listing and the execute bits). A poll
 * that gets no command reads nothing. A command's answer may carry the runner's next poll
 * (LiveResultPost.poll): recorded with that poll in one step of the coordinator (the answer first in it), then the
 * poll served as `next` serves one. On the real local R2
 * (test/support/counting-stores.ts).
 */
import { describe, expect, it, vi } from "vitest";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { ManifestCache } from "../../../lib/layers/manifest.js";
import type { LiveHub, LiveNext, LiveStatus } from "../../../lib/sync/live-types.js";
import { countingStores, roundTrips, sorted } from "../../support/counting-stores.js";
import { newTenant, testApp, upload } from "../../helpers.js";
import { CARRY_MAX_BYTES, CARRY_MAX_FILES, heldMarks } from "../../../lib/sync/carried-files.js";

const SECRET = "live-carried-manifest-secret";

async function setup(answer: LiveNext, opts: { keyAlive?: boolean | "fails" } = {}) {
  const stores = countingStores();
  const app = testApp({ storage: stores.storage, kv: stores.kv });
  const t = await newTenant(app);
  for (const p of ["a.ts", "src/b.ts"]) await upload(t, p, `// ${p}\n`);
  const manifests = new ManifestCache();
  const statuses: unknown[] = [];
  /** The hub's calls in order, with what each was given. */
  const calls: [string, unknown][] = [];
  let pollReads = -1;
  const hub: LiveHub = {
    next: async (_ref, status) => {
      statuses.push(status);
      calls.push(["next", status]);
      pollReads = stores.log.length;
      return answer;
    },
    result: async (_ref, post) => void calls.push(["result", post]),
    resultThenNext: async (_ref, post) => {
      calls.push(["resultThenNext", post]);
      pollReads = stores.log.length;
      return answer;
    },
    ended: async (_ref, e) => void calls.push(["ended", e.reason]),
  };
  const deps = { driver: stores.storage, manifests, kv: stores.kv, secret: SECRET, autoSeal: false, live: hub, ...(opts.keyAlive === undefined ? {} : { keyAlive: async () => (opts.keyAlive === "fails" ? Promise.reject(new Error("the key store did not answer")) : opts.keyAlive!) }) };
  const liveToken = await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "live1", l: { s: "s1", g: "g1", ...(opts.keyAlive === undefined ? {} : { k: "key1" }) } }, 60);
  const runToken = await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "run1" }, 60);
  const post = async (route: string, token: string, body: unknown) => {
    const res = await handleSync(new Request(`https://api.example/v1/sync/${route}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) }), deps);
    return { status: res.status, body: (res.status === 204 ? null : await res.json()) as any };
  };
  /** One poll: its answer, and the storage round trips made after the coordinator answered it. */
  const poll = async (body: unknown) => {
    const r = await post("live/next", liveToken, body);
    return { ...r, trips: pollReads < 0 ? [] : roundTrips(stores, pollReads, stores.log.length) };
  };
  return { t, stores, statuses, calls, poll, post, runToken, liveToken };
}

const status: LiveStatus = { generation: "g1", started_at: 1, last_used_at: 1, processes: [], ports: [], wall_ms: 5 };
const command: LiveNext = { command: { seq: 1, request: { command: "true" } } };

describe("POST /v1/sync/live/next: the manifest answer comes with the command", { timeout: 60_000 }, () => {
  it("the answer POST /v1/sync/manifest gives for the poll's query, read in one round trip after the command was handed over", async () => {
    const { poll, post, runToken, statuses } = await setup(command);
    const query = { buckets: 1, modes: null };
    const r = await poll({ ...status, manifest: query });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.command.seq).toBe(1);
    expect(r.body.command.request).toEqual({ command: "true" });
    expect(r.body.command.manifest.files.map((f: string[]) => f[0]).sort()).toEqual(["a.ts", "src/b.ts"]);
    expect(r.trips).toEqual([sorted(["r2.get meta.json", "r2.list file", "r2.get internal:modes.json"])]);
    const asked = await post("manifest", runToken, query);
    expect(r.body.command.manifest).toEqual(asked.body);
    // The coordinator keeps the status, not the query.
    expect(statuses).toEqual([status]);
    // A query of the view that answer made: "all the same" from the upper listing alone.
    const again = await poll({ ...status, manifest: { buckets: 1, modes: asked.body.modes.etag, layer: asked.body.layer, digests: ["x"] } });
    expect(again.body.command.manifest, JSON.stringify([asked.body, again.body])).toMatchObject({ v: 2, same: [0], files: [], layer: asked.body.layer });
  });

  it("a poll without a query gets the command alone; a bad query is refused before the coordinator is asked", async () => {
    const { poll, statuses } = await setup(command);
    expect((await poll(status)).body).toEqual(command);
    const bad = await poll({ ...status, manifest: { buckets: 0 } });
    expect(bad.status).toBe(400);
    expect(statuses).toHaveLength(1);
  });

  it("a poll that gets no command reads the workspace's record alone (is it still there?), never its listing", async () => {
    const { poll } = await setup({ wait: true });
    const r = await poll({ ...status, manifest: { buckets: 1, modes: null } });
    expect(r.body).toEqual({ wait: true });
    expect(r.trips).toEqual([["r2.get meta.json"]]);
  });
});

describe("POST /v1/sync/live/result with a poll: the command's answer and the runner's next poll in one request", { timeout: 60_000 }, () => {
  const answer = { generation: "g1", seq: 1, response: { ok: true, result: { exit_code: 0 } }, status };
  const query = { buckets: 1, modes: null };

  it("the answer and the poll go to the coordinator as one step (the answer first in it), the poll served as POST .../next serves one: the command comes with its manifest answer", async () => {
    const { post, calls, liveToken, runToken } = await setup(command);
    const r = await post("live/result", liveToken, { ...answer, poll: { manifest: query } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.command.seq).toBe(1);
    expect(r.body.command.manifest).toEqual((await post("manifest", runToken, query)).body);
    expect(calls).toEqual([["resultThenNext", answer]]);
  });

  it("a result without a poll (a runner that polls after it) is answered 204, as before; nothing is polled", async () => {
    const { post, calls, liveToken } = await setup(command);
    expect(await post("live/result", liveToken, answer)).toEqual({ status: 204, body: null });
    expect(calls).toEqual([["result", answer]]);
  });

  it("a poll that waits is answered wait; a bad poll is refused whole, before the answer is recorded", async () => {
    const { post, calls, liveToken } = await setup({ wait: true });
    expect((await post("live/result", liveToken, { ...answer, poll: {} })).body).toEqual({ wait: true });
    expect(calls).toEqual([["resultThenNext", answer]]);
    calls.length = 0;
    for (const [poll, why] of [[{ manifest: { buckets: 0 } }, /buckets/], ["yes", /poll/]] as const) {
      const bad = await post("live/result", liveToken, { ...answer, poll });
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toMatch(why);
    }
    expect(calls).toEqual([]);
  });

  it("the poll checks the starting key as every poll does: revoked, the answer is still recorded (alone, first), then the sandbox is told to end", async () => {
    const { post, calls, liveToken } = await setup(command, { keyAlive: false });
    const r = await post("live/result", liveToken, { ...answer, poll: { manifest: query } });
    expect(r.body).toEqual({ end: "revoked" });
    expect(calls).toEqual([["result", answer], ["ended", "revoked"]]);
  });

  it("a key check that fails: the answer is still recorded (alone), and the request fails as a poll's would", async () => {
    const { post, calls, liveToken } = await setup(command, { keyAlive: "fails" });
    const r = await post("live/result", liveToken, { ...answer, poll: { manifest: query } });
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(calls).toEqual([["result", answer]]);
  });
});

describe("a query with the view's marks (held): the few small files the view lacks come with the command", { timeout: 60_000 }, () => {
  /** The view a runner holds after applying `answer` less `drop` (paths), as its marks. */
  const heldOf = (answer: { files: [string, string, number][] }, drop: string[]) =>
    heldMarks(answer.files.filter((f) => !drop.includes(f[0])).map(([path, etag, size]) => ({ path, etag, size })), answer.files.length - drop.length);

  it("each at the listed etag, read after the answer (one GET each), only what the view lacks; the workspace without execute bits too", async () => {
    const { poll, post, runToken } = await setup(command);
    const full = (await post("manifest", runToken, { buckets: 1, modes: null })).body;
    expect(full.modes.etag).toBeNull(); // no execute bits ever recorded: the runner's view says null, and so does every answer
    const r = await poll({ ...status, manifest: { buckets: 1, modes: null, held: heldOf(full, ["src/b.ts"]) } });
    const b = full.files.find((f: string[]) => f[0] === "src/b.ts");
    expect(r.body.command.files).toEqual([["src/b.ts", b[1], Buffer.from("// src/b.ts\n").toString("base64")]]);
    expect(r.body.command.manifest).toEqual(full);
    expect(r.trips).toEqual([sorted(["r2.get meta.json", "r2.list file", "r2.get internal:modes.json"]), ["r2.get file"]]);
  });

  it("nothing carried: a view that lacks nothing, more than 16 files, more than 256 KiB, changed execute bits, no marks", async () => {
    const { t, poll, post, runToken } = await setup(command);
    const full = (await post("manifest", runToken, { buckets: 1, modes: null })).body;
    const none = async (manifest: unknown) => expect((await poll({ ...status, manifest })).body.command.files).toBeUndefined();
    await none({ buckets: 1, modes: null, held: heldOf(full, []) });
    await none({ buckets: 1, modes: null });
    await none({ buckets: 1, modes: "another etag", held: heldOf(full, ["a.ts"]) });
    await upload(t, "big.txt", "x".repeat(CARRY_MAX_BYTES));
    const withBig = (await post("manifest", runToken, { buckets: 1, modes: null })).body;
    await none({ buckets: 1, modes: null, held: heldOf(withBig, ["a.ts", "big.txt"]) });
    for (let i = 0; i < CARRY_MAX_FILES; i++) await upload(t, `many/${i}.txt`, `${i}`);
    const many = (await post("manifest", runToken, { buckets: 1, modes: null })).body;
    await none({ buckets: 1, modes: null, held: heldOf(many, [...many.files.map((f: string[]) => f[0]).filter((p: string) => p.startsWith("many/")), "a.ts"]) });
  });

  it("a command on a view that is current (every bucket the same, nothing listed): its marks are never decoded", async () => {
    // A view of 10,000 files sends 53 KB of marks with every poll; decoding them (a Set of 10,000) was most of the
    // Worker's JavaScript on a no-change live command's path, for an answer that lists nothing to carry.
    const { poll, post, runToken } = await setup(command);
    const asked = (await post("manifest", runToken, { buckets: 1, modes: null })).body;
    const marks = 8_000;
    const held = heldMarks(Array.from({ length: marks }, (_, i) => ({ path: `f${i}`, etag: `e${i}`, size: 1 })), marks);
    const adds = vi.spyOn(Set.prototype, "add");
    try {
      const r = await poll({ ...status, manifest: { buckets: 1, modes: asked.modes.etag, layer: asked.layer, digests: ["x"], held } });
      expect(r.body.command.manifest).toMatchObject({ same: [0], files: [] });
      expect(r.body.command.files).toBeUndefined();
      expect(adds.mock.calls.length).toBeLessThan(marks / 8); // decoded, the marks would be one add each
    } finally {
      adds.mockRestore();
    }
  });

  it("a file changed between the listing and its read is left out (the runner fetches it); marks that are not marks carry nothing", async () => {
    const { t, stores, poll, post, runToken } = await setup(command);
    const full = (await post("manifest", runToken, { buckets: 1, modes: null })).body;
    const get = stores.storage.get.bind(stores.storage);
    stores.storage.get = async (key, opts) => {
      if (key.endsWith("/a.ts")) stores.storage.get = get, await upload(t, "a.ts", "// changed after the listing\n");
      return get(key, opts);
    };
    const r = await poll({ ...status, manifest: { buckets: 1, modes: null, held: heldOf(full, ["a.ts", "src/b.ts"]) } });
    expect(r.body.command.files.map((f: string[]) => f[0])).toEqual(["src/b.ts"]);
    stores.storage.get = get;
    expect((await poll({ ...status, manifest: { buckets: 1, modes: null, held: "not base64!" } })).body.command.files).toBeUndefined();
  });
});
