/**
 * No acknowledged write is lost by a move (DESIGN invariant 9), in the real runtime with local R2:
 * `move me.txt → moved/me.txt` races a writer of me.txt that read it first: edit, write, a raw
 * PUT with If-Match, and the sync API's conditional PUT (what bash write-back sends). A write
 * is acknowledged when its call answered ok; its content must then be in the workspace, at the
 * source or at the destination.
 *
 * Real concurrency, steered: a storage wrapper starts the writer at chosen moments of the move
 * (free start; before the move's copy is written, awaited; after the copy is written, awaited;
 * during the copy, not awaited), so every phase of the move is hit, the window between the
 * copy and the delete of the source included.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleSync } from "../../lib/sync/server.js";
import { mintSyncToken } from "../../lib/sync/token.js";
import { searchIndexer } from "../../lib/search/indexer.js";
import { r2Driver } from "../../lib/storage/drivers/r2.js";
import { workersKeyValue } from "../../lib/storage/kv-workers.js";
import { fileKey } from "../../lib/layout/paths.js";
import type { StorageDriver } from "../../lib/storage/types.js";
import { newTenant, testApp, testDeps, upload, type Tenant } from "../helpers.js";
import { text } from "./fs-helpers.js";

const SECRET = "race-test-sync-secret-of-some-length";
const WRITERS = ["edit", "write", "put", "sync"] as const;
type Writer = (typeof WRITERS)[number];

/** The sync API's DELETE of one file with If-Match (bash write-back of a deleted file): its status. */
async function syncDelete(t: Tenant, path: string, ifMatch: string): Promise<number> {
  const token = await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "race" }, 60);
  const res = await handleSync(new Request(`https://api.example/v1/sync/files/${path}`, { method: "DELETE", headers: { authorization: `Bearer ${token}`, "if-match": `"${ifMatch}"` } }), {
    driver: r2Driver(env.FILES),
    kv: workersKeyValue(env.KV),
    secret: SECRET,
  });
  await res.arrayBuffer();
  return res.status;
}

/** The sync API's PUT of one file with If-Match, as the bash runner's write-back sends it. */
async function syncPut(t: Tenant, path: string, body: string, ifMatch: string): Promise<boolean> {
  const token = await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "race" }, 60);
  const bytes = new TextEncoder().encode(body);
  const res = await handleSync(
    new Request(`https://api.example/v1/sync/files/${path}`, { method: "PUT", headers: { authorization: `Bearer ${token}`, "if-match": `"${ifMatch}"`, "content-length": String(bytes.length) }, body: bytes }),
    { driver: r2Driver(env.FILES), kv: workersKeyValue(env.KV), secret: SECRET, listeners: [searchIndexer()] },
  );
  await res.arrayBuffer();
  return res.status === 200;
}

/** One writer of `path`, which its session has read at `etag`; resolves to its content if acknowledged. */
async function write(t: Tenant, kind: Writer, path: string, etag: string, i: number, session: string): Promise<string | null> {
  const content = `${kind} ${i}\n`;
  switch (kind) {
    case "edit":
      return (await t.call("edit", { file_path: path, old_string: "v0\n", new_string: content }, session)).status === 200 ? content : null;
    case "write":
      return (await t.call("write", { file_path: path, content }, session)).status === 200 ? content : null;
    case "put": {
      const res = await t.req(`/v1/workspaces/${t.ws}/files/${path}`, { method: "PUT", headers: { "if-match": `"${etag}"`, "content-length": String(content.length) }, body: content });
      await res.arrayBuffer();
      return res.status === 200 || res.status === 201 ? content : null;
    }
    case "sync":
      return (await syncPut(t, path, content, etag)) ? content : null;
  }
}

/** When the writer starts: 0 with the move; 1 before the copy's put (awaited); 2 after it (awaited); 3 at the copy's put (not awaited). */
type Phase = 0 | 1 | 2 | 3;
interface Hook {
  phase: Phase;
  start: () => Promise<unknown>;
}

/** A driver that runs the hook registered for a key around its put. */
function steered(base: StorageDriver, hooks: Map<string, Hook>): StorageDriver {
  return {
    ...base,
    async put(key, body, opts) {
      const h = hooks.get(key);
      if (h?.phase === 1) await h.start();
      if (h?.phase === 3) void h.start();
      const r = await base.put(key, body, opts);
      if (h?.phase === 2) await h.start();
      return r;
    },
  };
}

interface Outcome {
  writer: Writer;
  phase: Phase;
  moveOk: boolean;
  writeOk: boolean;
  lost: boolean;
  source: string | null;
  target: string | null;
}

async function race(t: Tenant, hooks: Map<string, Hook>, i: number): Promise<Outcome> {
  const writer = WRITERS[i % WRITERS.length]!;
  const phase = (Math.floor(i / WRITERS.length) % 4) as Phase;
  const from = `me-${i}.txt`;
  const to = `moved/me-${i}.txt`;
  const session = `w${i}`;
  const etag = await upload(t, from, "v0\n");
  expect((await t.call("read", { file_path: from }, session)).status).toBe(200);
  let writing: Promise<string | null> | null = null;
  const startWriter = () => (writing ??= write(t, writer, from, etag, i, session));
  hooks.set(fileKey(t.tenant, t.ws, to), { phase, start: startWriter });
  const moving = t.call("move", { from, to }, `m${i}`);
  if (phase === 0) void startWriter();
  const moved = await moving;
  const written = await startWriter(); // started by the hook, or now if the move never reached its copy
  const [source, target] = await Promise.all([text(t, from), text(t, to)]);
  const lost = written !== null && source !== written && target !== written;
  return { writer, phase, moveOk: moved.status === 200, writeOk: written !== null, lost, source, target };
}

describe("move racing writers of its source", () => {
  it("100 races (edit, write, raw PUT If-Match, sync PUT If-Match): 0 acknowledged writes lost", async () => {
    const hooks = new Map<string, Hook>();
    const t = await newTenant(testApp({ storage: steered(testDeps().storage, hooks) }));
    const outcomes: Outcome[] = [];
    for (let i = 0; i < 100; i += 4) outcomes.push(...(await Promise.all([0, 1, 2, 3].map((k) => race(t, hooks, i + k)))));
    const lost = outcomes.filter((o) => o.lost);
    const tally = Object.fromEntries(WRITERS.map((w) => [w, outcomes.filter((o) => o.writer === w).map((o) => `${o.phase}${o.moveOk ? "M" : "m"}${o.writeOk ? "W" : "w"}`).join(" ")]));
    console.log(`move races: ${outcomes.length}, lost ${lost.length}; per writer (M/W = move/write ok): ${JSON.stringify(tally)}`);
    expect(lost.map((o) => `${o.writer}: source ${JSON.stringify(o.source)}, target ${JSON.stringify(o.target)}`)).toEqual([]);
    for (const o of outcomes) {
      // A move that answered ok left nothing at the source, unless a write created a new file there after it.
      if (o.moveOk && o.source !== null) expect(o.writer === "write" && o.writeOk && o.target === "v0\n").toBe(true);
      // Never neither; both only when a write created the source anew after the move.
      expect(o.source !== null || o.target !== null).toBe(true);
    }
    // The races did race: each outcome happened (write first and moved along; move first; write in the middle).
    expect(outcomes.some((o) => o.moveOk && o.writeOk && o.writer !== "write")).toBe(true);
    expect(outcomes.some((o) => !o.moveOk && o.writeOk)).toBe(true);
  }, 300_000);
});

describe("the sync API's DELETE (bash write-back) is conditional in storage", () => {
  it("racing a conditional PUT of the same version: exactly one wins, an acknowledged PUT is never deleted", async () => {
    const t = await newTenant();
    const wins = { del: 0, put: 0 };
    for (let i = 0; i < 20; i++) {
      const path = `d-${i}.txt`;
      const etag = await upload(t, path, "v0");
      const [del, put] = await Promise.all([syncDelete(t, path, etag), write(t, "put", path, etag, i, "s")]);
      const now = await text(t, path);
      expect(del === 204 ? 1 : 0).toBe(put === null ? 1 : 0);
      if (put !== null) expect(now).toBe(put);
      else expect(now).toBeNull();
      if (del === 204) wins.del++;
      else wins.put++;
    }
    console.log(`sync DELETE vs PUT: ${JSON.stringify(wins)}`);
    // A stale etag is refused; an already deleted file is what the runner wanted (204).
    const etag = await upload(t, "x.txt", "v0");
    await upload(t, "x.txt", "v1");
    expect(await syncDelete(t, "x.txt", etag)).toBe(412);
    expect(await text(t, "x.txt")).toBe("v1");
    expect(await syncDelete(t, "never.txt", etag)).toBe(204);
  });
});
