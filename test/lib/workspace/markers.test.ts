/**
 * Removing explicit directories' markers (Workspace.deleteMarkers / removeDirectory, markers.ts):
 * each only in the version given, like files; a marker already gone counts as removed. On the
 * memory driver every put is a new version; on R2 a marker's etag is the MD5 of nothing, so a
 * marker made again has the same etag and only "gone or not" can differ.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { RecordStore } from "../../../lib/workspace/records.js";
import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import type { StorageDriver } from "../../../lib/storage/types.js";
import { Workspace } from "../../../lib/workspace/workspace.js";

const kv = { get: async () => null, put: async () => {}, delete: async () => {}, list: async () => ({ keys: [] }) };
const workspace = (driver: StorageDriver) => new Workspace({ driver, records: new RecordStore(kv, "t/w", "s"), tenant: "t1", id: `w${crypto.randomUUID().slice(0, 8)}` });
const markerKeys = async (ws: Workspace) => (await ws.driver.list({ prefix: ws.dirPrefix("") })).objects.map((o) => ws.pathOf(o.key) + (o.key.endsWith("/") ? "/" : "")).sort();

describe.each([
  ["memory", () => memoryDriver()],
  ["r2", () => r2Driver(env.FILES)],
])("deleteMarkers (%s)", (_name, makeDriver) => {
  it("removes markers in the version given, whatever is there for null, and counts a gone marker as removed", async () => {
    const ws = workspace(makeDriver());
    const a = await ws.makeDirectory("a");
    const b = await ws.makeDirectory("b/c");
    await ws.makeDirectory("d");
    await ws.put("b/c/f.txt", "f");
    const r = await ws.deleteMarkers([{ path: "a", etag: a.etag }, { path: "b/c", etag: b.etag }, { path: "d", etag: null }, { path: "never", etag: a.etag }]);
    expect(r).toEqual({ refused: [], gone: ["never"] }); // never there: removed as far as the caller is concerned, freeing nothing
    // The file below a removed marker stays (its directory is implied by it).
    expect(await markerKeys(ws)).toEqual(["b/c/f.txt"]);
    expect((await ws.stat("b/c"))?.type).toBe("directory");
  });

  it("removeDirectory with ifMatch: true when removed or already gone", async () => {
    const ws = workspace(makeDriver());
    const m = await ws.makeDirectory("e");
    expect(await ws.removeDirectory("e", { ifMatch: m.etag })).toBe(true);
    expect(await ws.removeDirectory("e", { ifMatch: m.etag })).toBe(true);
    expect(await markerKeys(ws)).toEqual([]);
  });
});

describe("deleteMarkers: a marker made again in another version is kept", () => {
  it("refuses it (memory: every put is a new version) and still removes the others", async () => {
    const ws = workspace(memoryDriver());
    const old = await ws.makeDirectory("x");
    const y = await ws.makeDirectory("y");
    await ws.removeDirectory("x");
    const again = await ws.makeDirectory("x");
    expect(again.etag).not.toBe(old.etag);
    expect(await ws.deleteMarkers([{ path: "x", etag: old.etag }, { path: "y", etag: y.etag }])).toEqual({ refused: ["x"], gone: [] });
    expect(await markerKeys(ws)).toEqual(["x/"]);
    expect(await ws.removeDirectory("x", { ifMatch: old.etag })).toBe(false);
    expect(await ws.removeDirectory("x", { ifMatch: again.etag })).toBe(true);
    expect(await markerKeys(ws)).toEqual([]);
  });
});
