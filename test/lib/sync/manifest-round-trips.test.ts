/**
 * The conditional manifest a bash run asks for first (POST /v1/sync/manifest): its reads, on the real
 * local R2, grouped into round trips (test/support/counting-stores.ts). The upper layer's first page
 * and the execute bits start beside the workspace record's read: one round trip on a plain workspace
 * (and on a layered one whose manifest this isolate holds), and the answer is the same as ever.
 */
import { describe, expect, it } from "vitest";
import { handleSync } from "../../../lib/sync/server.js";
import { mintSyncToken } from "../../../lib/sync/token.js";
import { ManifestCache } from "../../../lib/layers/manifest.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { countingStores, roundTrips, sorted } from "../../support/counting-stores.js";
import { newTenant, testApp, upload } from "../../helpers.js";

const SECRET = "manifest-round-trips-secret";

async function setup() {
  const stores = countingStores();
  const app = testApp({ storage: stores.storage, kv: stores.kv });
  const t = await newTenant(app);
  for (const p of ["a.ts", "src/b.ts", "src/c.ts"]) await upload(t, p, `// ${p}\n`);
  const manifests = new ManifestCache();
  const token = await mintSyncToken(SECRET, { t: t.tenant, w: t.ws, r: "run1" }, 60);
  /** One manifest request: its answer and its operations as round trips. */
  /** `recordGate`: the request's read of the workspace record waits for it (the listing does not). */
  const ask = async (query: unknown, recordGate?: Promise<void>) => {
    const from = stores.log.length;
    const driver: StorageDriver = recordGate ? { ...stores.storage, get: async (k, o) => (k.endsWith("/meta.json") && (await recordGate), stores.storage.get(k, o)) } : stores.storage;
    const res = await handleSync(new Request("https://api.example/v1/sync/manifest", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(query) }), { driver, manifests, kv: stores.kv, secret: SECRET, autoSeal: false });
    return { status: res.status, body: (await res.json()) as any, trips: roundTrips(stores, from, stores.log.length) };
  };
  return { t, app, ask };
}

describe("POST /v1/sync/manifest: reads beside the workspace record", { timeout: 60_000 }, () => {
  it("plain workspace: the record, the upper listing and the execute bits in one round trip", async () => {
    const { ask } = await setup();
    const r = await ask({ buckets: 1, modes: null });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.files.map((f: string[]) => f[0]).sort()).toEqual(["a.ts", "src/b.ts", "src/c.ts"]);
    expect(r.body.modes).toEqual({ etag: null, exec: [] });
    expect(r.trips).toEqual([sorted(["r2.get meta.json", "r2.list file", "r2.get internal:modes.json"])]);
    // Without the bits asked for: not read.
    expect((await ask({ buckets: 1 })).trips).toEqual([sorted(["r2.get meta.json", "r2.list file"])]);
  });

  it("layered workspace: the same round trip, then the manifest once per isolate; files merged as before", async () => {
    const { t, ask } = await setup();
    const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "base" }) });
    expect(cp.status).toBe(201);
    await upload(t, "src/d.ts", "// d\n"); // upper, over the sealed lower layer
    const first = await ask({ buckets: 1, modes: null });
    expect(first.body.files.map((f: string[]) => f[0]).sort()).toEqual(["a.ts", "src/b.ts", "src/c.ts", "src/d.ts"]);
    expect(first.trips).toEqual([sorted(["r2.get meta.json", "r2.list file", "r2.get internal:modes.json"]), ["r2.get manifest"]]);
    const again = await ask({ buckets: 1, modes: first.body.modes.etag, layer: first.body.layer });
    expect(again.body.same).toEqual([0]); // nothing changed: "all the same"
    expect(again.trips).toEqual([sorted(["r2.get meta.json", "r2.list file", "r2.get internal:modes.json"])]);
  });

  it("a checkpoint between the listing and the record's read: the answer is the files as they are, on the new layer", async () => {
    const { t, ask } = await setup();
    const before = (await ask({ buckets: 1 })).body;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const asked = ask({ buckets: 1 }, gate); // lists the upper layer, then waits to read the record
    await new Promise((r) => setTimeout(r, 200));
    const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "meanwhile" }) });
    expect(cp.status).toBe(201); // sealed every upper object into a pack, switched the record, removed them
    open();
    const r = await asked;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // The upper objects listed before the switch and the new lower layer name the same versions.
    expect(r.body.files).toEqual(before.files);
    expect(r.body.layer.base).not.toBe(before.layer.base);
    const after = await ask({ buckets: 1 });
    expect(after.body.files).toEqual(before.files);
  });

  it("a workspace deleted meanwhile: NOT_FOUND, and nothing of what was read early is answered", async () => {
    const { t, app, ask } = await setup();
    const del = await app.request(`/v1/workspaces/${t.ws}`, { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } });
    expect(del.status).toBeLessThan(300);
    const r = await ask({ buckets: 1, modes: null });
    expect(r.status).toBe(404);
    expect(JSON.stringify(r.body)).not.toContain("a.ts");
  });

  it("a bad query is refused before anything is read", async () => {
    const { ask } = await setup();
    const r = await ask({ buckets: 0 });
    expect(r.status).toBe(400);
    expect(r.trips).toEqual([]);
  });
});
