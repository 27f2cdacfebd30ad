/**
 * The walk of a layered workspace kept per isolate (lib/search/listing-cache.ts): a second search
 * of an unchanged tree walks nothing again and asks storage for no more than the upper layer's one
 * listing; any write, through this app or another one over the same storage, is seen at once.
 *
 * The workspace: files uploaded one by one through the raw files route, then sealed (a checkpoint,
 * as the background seal does after uploads): a manifest and an empty upper layer.
 */
import { describe, expect, it } from "vitest";
import { IsolateMemory } from "../../../lib/shared/isolate-memory.js";
import { ListingCache, type WalkedTree } from "../../../lib/search/listing-cache.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { newTenant, testApp, upload, type Tenant } from "../../helpers.js";
import { loggedStorage, measured, rawDelete, sourceText } from "./helpers.js";

/** A ListingCache that counts the walks it gave back. */
class CountingListings extends ListingCache {
  hits = 0;
  override get(key: string, version: string): WalkedTree | undefined {
    const t = super.get(key, version);
    if (t) this.hits++;
    return t;
  }
}

const N = 40;
const path = (i: number) => `src/d${i % 4}/f${i}.ts`;

async function sealedRawWorkspace() {
  const { driver, ops } = loggedStorage();
  const listings = new CountingListings(new IsolateMemory());
  const app = testApp({ storage: driver, listingCache: listings });
  const t = await newTenant(app);
  for (let i = 0; i < N; i++) await upload(t, path(i), `${sourceText(i, 6)}${i === 7 ? "const oldNeedle = 1;\n" : ""}`);
  const cp = await t.req(`/v1/workspaces/${t.ws}/checkpoints`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "sealed" }) });
  expect(cp.status, await cp.clone().text()).toBe(201);
  return { driver, ops, listings, app, t };
}

const find = (t: Tenant, ops: { op: string; key: string }[], pattern: string) => measured(t, ops, "grep", { pattern, output_mode: "files_with_matches" });

describe("grep and glob on a sealed raw workspace: the walk kept per isolate", { timeout: 120_000 }, () => {
  it("a second search of the unchanged tree reuses the walk: one listing (the upper layer's), no file read, the same answers", async () => {
    const { driver, ops, listings, t } = await sealedRawWorkspace();
    const first = await find(t, ops, "oldNeedle");
    expect(first.output).toContain(path(7));
    const hitsBefore = listings.hits;
    const second = await find(t, ops, "oldNeedle");
    expect(listings.hits).toBe(hitsBefore + 1);
    expect(second.output).toBe(first.output);
    expect(second.fileLists).toBe(1); // the (empty) upper layer: what proves the tree unchanged
    expect(second.fileGets).toBe(0);
    expect(second.gets).toBeLessThanOrEqual(first.gets);
    // A common word, content mode, and glob over the same kept walk answer as a fresh app does.
    const fresh = callsOnFreshApp(driver, t);
    for (const [tool, args] of [
      ["grep", { pattern: "export", output_mode: "content", head_limit: 30 }],
      ["grep", { pattern: "const\\s+\\w+", output_mode: "count" }],
      ["glob", { pattern: "**/*.ts" }],
    ] as const) {
      const kept = await t.call(tool, args);
      const other = await fresh(tool, args);
      expect(kept.status).toBe(200);
      expect(kept.body.output).toBe(other.body.output);
      expect(kept.body.data.matches ?? kept.body.data.files).toEqual(other.body.data.matches ?? other.body.data.files);
    }
  });

  it("a write, an overwrite and a delete between two greps through the same app are seen", async () => {
    const { ops, t } = await sealedRawWorkspace();
    expect((await find(t, ops, "oldNeedle")).output).toContain(path(7));
    await upload(t, "src/new.ts", "const newNeedle = 2;\n");
    expect((await find(t, ops, "newNeedle")).output).toContain("src/new.ts");
    await upload(t, path(3), "const newNeedle = 3;\n"); // over a file the manifest holds
    const both = await find(t, ops, "newNeedle");
    expect(both.output).toContain(path(3));
    expect(both.output).toContain("src/new.ts");
    await rawDelete(t, path(7)); // a whiteout over the manifest's file
    const gone = await find(t, ops, "oldNeedle");
    expect(gone.output).not.toContain(path(7));
    expect(gone.data.stats.candidates).toBe(0);
  });

  it("a write through another app instance over the same storage (another isolate) is seen by the next grep here", async () => {
    const { driver, ops, listings, t } = await sealedRawWorkspace();
    await find(t, ops, "oldNeedle");
    await find(t, ops, "oldNeedle");
    const hits = listings.hits;
    expect(hits).toBeGreaterThan(0);
    const other = testApp({ storage: driver }); // its own isolate memory and caches
    const put = await other.request(`/v1/workspaces/${t.ws}/files/src/d1/f5.ts`, { method: "PUT", headers: { authorization: `Bearer ${t.key}`, "content-length": "26" }, body: "const elsewhereNeedle = 1;" });
    expect(put.status).toBe(200);
    const seen = await find(t, ops, "elsewhereNeedle");
    expect(seen.output).toContain("src/d1/f5.ts");
    expect(listings.hits).toBe(hits); // a new version of the tree: walked again, not served from the kept walk
    // And a delete there, of a file this app's kept walk holds.
    const del = await other.request(`/v1/workspaces/${t.ws}/files/${path(7)}`, { method: "DELETE", headers: { authorization: `Bearer ${t.key}` } });
    expect(del.status).toBeLessThan(300);
    expect((await find(t, ops, "oldNeedle")).output).not.toContain(path(7));
  });
});

/** Tool calls of `t`'s key and workspace on a fresh app (no kept walk) over the same storage. */
function callsOnFreshApp(storage: StorageDriver, t: Tenant) {
  const app = testApp({ storage });
  return async (tool: string, args: unknown) => {
    const r = await app.request(`/v1/workspaces/${t.ws}/tools/${tool}`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "s1" }, body: JSON.stringify(args) });
    return { status: r.status, body: (await r.json()) as any };
  };
}
