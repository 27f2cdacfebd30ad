/**
 * A workspace's undo across its sessions is bounded (lib/workspace/undo-retention.ts), through HTTP
 * on local R2: a client that sends a new X-Session-Id with every call overwrites a file larger than a
 * record holds (its before-image is a blob) again and again. Small bounds here (AppDeps.undoRetention);
 * the defaults, the tick and the cadence over memory storage: test/lib/workspace/undo-workspace-bound.node.test.ts.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newTenant, testApp, type Tenant } from "../../../helpers.js";

const EVERY = 4;
const CALLS = 8;
const BYTES = 450 * 1024; // binds before CALLS: four overwrites of SIZE
const SIZE = 100 * 1024;
const app = testApp({ undoPruneEvery: EVERY, undoRetention: { workspaceCalls: CALLS, workspaceBytes: BYTES } });

/** The calls (`<session>/<stamp>`) and bytes under the workspace's undo prefix. */
async function undoKept(t: Tenant): Promise<{ calls: Set<string>; bytes: number }> {
  const prefix = `t/${t.tenant}/w/${t.ws}/x/undo/`;
  const calls = new Set<string>();
  let bytes = 0;
  let cursor: string | undefined;
  do {
    const r = await env.FILES.list({ prefix, ...(cursor ? { cursor } : {}) });
    for (const o of r.objects) {
      calls.add(o.key.slice(prefix.length).split("/").slice(0, 2).join("/"));
      bytes += o.size;
    }
    cursor = r.truncated ? r.cursor : undefined;
  } while (cursor);
  return { calls, bytes };
}

describe("undo of a workspace written from a new session each call", () => {
  it(`keeps at most ${CALLS} calls and ${BYTES} bytes + what ${EVERY - 1} commits add between two prunes; the newest stays undoable, the oldest is NOT_FOUND`, async () => {
    const t = await newTenant(app);
    const ids: string[] = [];
    let most = { calls: 0, bytes: 0 };
    let perCall = 0;
    let created = 0;
    for (let i = 0; i < 16; i++) {
      const session = `new-${i}`;
      if (i > 0) expect((await t.call("read", { file_path: "big.txt", limit: 1 }, session)).status).toBe(200);
      const w = await t.call("write", { file_path: "big.txt", content: `${i}`.padEnd(SIZE, "x") }, session);
      expect(w.status, JSON.stringify(w.body)).toBe(200);
      const k = await undoKept(t);
      if (i === 0) {
        created = k.bytes; // a create: nothing replaced, nothing kept but its record
        continue;
      }
      ids.push(w.body.call_id);
      if (i === 1) perCall = k.bytes - created; // the blob and record of one overwrite
      most = { calls: Math.max(most.calls, k.calls.size), bytes: Math.max(most.bytes, k.bytes) };
    }
    expect(perCall).toBeGreaterThan(SIZE);
    expect(most.calls).toBeLessThanOrEqual(CALLS + EVERY - 1);
    expect(most.bytes).toBeLessThanOrEqual(BYTES + (EVERY - 1) * (perCall + 64));
    // The newest call is kept whole: its undo puts the 14th version back.
    const newest = ids.at(-1)!;
    const [session] = newest.split("~");
    const listed = await t.req(`/v1/workspaces/${t.ws}/undo?session=${session}`);
    expect(((await listed.json()) as any).calls.map((c: any) => c.call_id)).toEqual([newest]);
    const u = await t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": session! }, body: JSON.stringify({ call_id: newest }) });
    expect(u.status, await u.clone().text()).toBe(200);
    expect((await (await t.req(`/v1/workspaces/${t.ws}/files/big.txt`)).text()).startsWith("14x")).toBe(true);
    // The oldest overwrite was dropped: the existing NOT_FOUND.
    const oldest = ids[0]!;
    const gone = await t.req(`/v1/workspaces/${t.ws}/undo`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ call_id: oldest }) });
    expect(gone.status).toBe(404);
    const error = ((await gone.json()) as any).error;
    expect(error.code).toBe("NOT_FOUND");
    expect(error.message).toContain("a workspace its newest 1,000 within 1 GiB across its sessions");
  });
});

