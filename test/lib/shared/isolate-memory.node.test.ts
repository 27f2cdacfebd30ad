/** The isolate's one cache budget (lib/shared/isolate-memory.ts): regions share one bound and one least-recently-used order. */
import { describe, expect, it } from "vitest";
import { cacheBytesFor, IsolateMemory, ISOLATE_CACHE_BYTES, MAX_CACHE_BYTES } from "../../../lib/shared/isolate-memory.js";
import { fromAwsEnv } from "../../../lib/runtime/aws.js";
import { Manifest, ManifestCache, MANIFEST_ENTRY_BYTES } from "../../../lib/layers/manifest.js";
import { SegmentCache } from "../../../lib/search/segment-cache.js";
import { VersionCache } from "../../../lib/workspace/version-cache.js";

const bytes = (n: number) => new Uint8Array(n).fill(7);
const info = (size: number) => ({ etag: `e${size}`, size, modified: new Date(0) });

describe("IsolateMemory", () => {
  it("regions count their own bytes toward one bound; the least recently used of any region goes first", () => {
    const m = new IsolateMemory(1000);
    const a = m.region<string>("a");
    const b = m.region<string>("b");
    a.set("x", "a-x", 300);
    b.set("x", "b-x", 300); // same key, another region: another entry
    a.set("y", "a-y", 300);
    expect([a.get("x"), b.get("x"), a.get("y")]).toEqual(["a-x", "b-x", "a-y"]); // used in this order
    expect(m.bytes).toBe(900);
    a.get("x"); // a.x most recent: b.x is the least recently used
    b.set("z", "b-z", 300); // 1200 > 1000: b.x goes
    expect(b.get("x")).toBeUndefined();
    expect([a.get("x"), a.get("y"), b.get("z")]).toEqual(["a-x", "a-y", "b-z"]);
    expect({ all: m.bytes, a: a.bytes, b: b.bytes }).toEqual({ all: 900, a: 600, b: 300 });
    b.set("w", "b-w", 250); // 1150: a.x, the least recently used now, goes
    expect(a.get("x")).toBeUndefined();
    expect({ all: m.bytes, a: a.bytes, b: b.bytes }).toEqual({ all: 850, a: 300, b: 550 });
  });

  it("replacing and deleting keep each region's count exact; a value over the whole budget is kept alone", () => {
    const m = new IsolateMemory(1000);
    const a = m.region<number>("a");
    const b = m.region<number>("b");
    a.set("k", 1, 400);
    a.set("k", 2, 100); // replaced
    b.set("k", 3, 200);
    expect({ all: m.bytes, a: a.bytes, b: b.bytes }).toEqual({ all: 300, a: 100, b: 200 });
    a.delete("k");
    a.delete("k"); // twice: nothing more
    expect({ all: m.bytes, a: a.bytes, b: b.bytes }).toEqual({ all: 200, a: 0, b: 200 });
    a.set("huge", 4, 5000);
    expect(a.get("huge")).toBe(4);
    expect(b.get("k")).toBeUndefined();
    expect({ all: m.bytes, a: a.bytes, b: b.bytes }).toEqual({ all: 5000, a: 5000, b: 0 });
    expect(() => m.region("bad\u0000name")).toThrow();
  });

  it("the manifest, segment and version caches of one memory never hold more than its budget together", () => {
    const budget = 64 * 1024;
    const m = new IsolateMemory(budget);
    const manifests = new ManifestCache(m);
    const segments = new SegmentCache(m);
    const versions = new VersionCache(m);
    const entries = 40; // 40 × 200 bytes per entry
    const manifest = (id: string) => new Manifest(id, ["p1"], Array.from({ length: entries }, (_, i) => ({ path: `f${i}`, etag: `e${i}`, size: 1, modified: 0, pack: 0, offset: i })));
    let max = 0;
    for (let i = 0; i < 200; i++) {
      if (i % 3 === 0) manifests.remember("t", manifest(`m${i}`));
      if (i % 3 === 1) segments.set(`s${i}`, bytes(5000));
      if (i % 3 === 2) versions.remember(`v${i}`, info(3000), bytes(3000));
      max = Math.max(max, m.bytes);
      expect(m.bytes).toBe(m.bytesOf("manifests") + m.bytesOf("segments") + m.bytesOf("versions"));
    }
    expect(max).toBeLessThanOrEqual(budget);
    expect(m.bytesOf("manifests")).toBeGreaterThan(0);
    expect(m.bytesOf("manifests") % (entries * MANIFEST_ENTRY_BYTES)).toBe(0);
    expect(segments.bytes).toBeGreaterThan(0);
    expect(versions.bytes).toBeGreaterThan(0);
    // A segment range over a quarter of the budget (or 4 MB) is never kept.
    segments.set("big", bytes(budget / 4 + 1));
    expect(segments.get("big")).toBeUndefined();
  });

  it("a larger runtime gets a quarter of its memory, within [the Workers default, 512 MB]; Lambda's deps use it", () => {
    const MB = 1024 * 1024;
    expect([undefined, NaN, 0, -5, 128, 192].map(cacheBytesFor)).toEqual(Array(6).fill(ISOLATE_CACHE_BYTES));
    expect(cacheBytesFor(1024)).toBe(256 * MB);
    expect(cacheBytesFor(10240)).toBe(MAX_CACHE_BYTES);
    expect(fromAwsEnv({ TOOLSHED_BUCKET: "b", AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "1024" }).memory?.maxBytes).toBe(256 * MB);
    expect(fromAwsEnv({ TOOLSHED_BUCKET: "b" }).memory?.maxBytes).toBe(ISOLATE_CACHE_BYTES);
  });
});
