/**
 * A failed import leaves nothing behind (lib/layers/import.ts): no pack, no manifest, no index
 * segment (it stages the segments it writes while the archive streams, and removes them), and
 * GC reclaims the segments of an import whose process died midway (lib/search/reachability.ts:
 * the workspace's file listing is the index's root). In workerd with local R2.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { collectGarbage } from "../../../lib/layers/gc.js";
import { buildSegment } from "../../../lib/search/segment.js";
import { IndexStore } from "../../../lib/search/store.js";
import { TrigramCollector } from "../../../lib/search/trigrams.js";
import { r2Driver } from "../../../lib/storage/drivers/r2.js";
import type { PutBody, PutOptions, StorageDriver } from "../../../lib/storage/types.js";
import { newTenant, testApp, type Tenant } from "../../helpers.js";
import { tar } from "../archive/archives.js";
import { bigText, expectRefusedUnchanged, importReq, snapshot } from "../archive/helpers.js";

const app = testApp();
const storage = r2Driver(env.FILES);
const LATER = () => Date.now() + 2 * 3600 * 1000;

const segmentsOf = (t: Tenant, ws = t.ws) => new IndexStore(storage, t.tenant, ws).listSegments();
const grepFiles = async (t: Tenant, pattern: string) => (await t.call("grep", { pattern, output_mode: "files_with_matches" })).body;

describe("a failed import leaves no index segment, pack or manifest", () => {
  it("an archive cut after a batch of index segments was written", async () => {
    const t = await newTenant(app);
    const whole = tar([...bigText(7), { name: "z.txt", body: "end" }], false);
    let sent = 0;
    const cut = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= whole.length - 400_000) return c.error(new Error("connection reset by peer")); // within the 7th file
        c.enqueue(whole.slice(sent, sent + 65536));
        sent += 65536;
      },
    });
    await expectRefusedUnchanged(t, cut, 400);
  });

  it("a file over the size limit late in the archive", async () => {
    const limited = testApp({ archiveLimits: { maxFileBytes: 2_000_000 } });
    const t = await newTenant(limited);
    const error = await expectRefusedUnchanged(t, tar([...bigText(6), { name: "huge.bin", body: new Uint8Array(2_500_000) }]), 413);
    expect(error.details).toMatchObject({ reason: "file_size" });
  });

  it("the same archive whole imports, and its staged segments serve grep", async () => {
    const t = await newTenant(app);
    const r = await importReq(t, tar([...bigText(6), { name: "z.txt", body: "end needle" }]));
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    expect((await segmentsOf(t)).length).toBeGreaterThanOrEqual(2);
    const found = JSON.stringify(await grepFiles(t, "needle"));
    for (const f of ["big/t0.txt", "big/t5.txt", "z.txt"]) expect(found).toContain(f);
  });
});

describe("GC reclaims index segments nothing reaches", () => {
  /** A segment for files that are not (or no longer) in the workspace: what an import that died midway leaves. */
  async function plantOrphan(t: Tenant, paths: string[]) {
    const store = new IndexStore(storage, t.tenant, t.ws);
    const enc = new TextEncoder();
    const inputs = paths.map((path) => ({ path, etag: "0".repeat(32), size: 6, modified: 0, flags: 0, content: enc.encode("ghost\n") }));
    // An id from two hours ago: an import that crashed long before this GC.
    const built = buildSegment(inputs, new TrigramCollector());
    const key = store.segmentKey(built).replace(/seg\/[0-9a-z]+-/, `seg/${(Date.now() - 2 * 3600 * 1000).toString(36).padStart(9, "0")}-`);
    return (await store.putSegment(built, key)).key;
  }

  it("removes planted orphans older than the grace period, keeps live and young segments, and grep stays exact", async () => {
    const t = await newTenant(app);
    expect((await t.call("write", { file_path: "live.txt", content: "live needle\n" })).status).toBe(200);
    expect((await importReq(t, tar([{ name: "lower.txt", body: "lower needle\n" }]))).status).toBe(200);
    const live = (await segmentsOf(t)).map((s) => s.key);
    expect(live.length).toBeGreaterThanOrEqual(2);
    const orphan = await plantOrphan(t, ["gone/a.txt", "gone/b.txt"]);
    // A segment for a file that exists, but in another version: nothing reaches it either.
    const stale = await plantOrphan(t, ["live.txt"]);

    const dry = await collectGarbage(storage, t.tenant, { now: LATER(), dryRun: true });
    expect(dry.segments_deleted).toBe(2);
    expect((await segmentsOf(t)).map((s) => s.key).sort()).toEqual([...live, orphan, stale].sort());

    // GC run "two hours later": every segment is past the grace period; only the unreached ones go.
    const r = await collectGarbage(storage, t.tenant, { now: LATER() });
    expect(r.segments_deleted).toBe(2);
    expect(r.bytes_freed).toBeGreaterThan(0);
    expect((await segmentsOf(t)).map((s) => s.key).sort()).toEqual([...live].sort());
    const found = JSON.stringify(await grepFiles(t, "needle"));
    expect(found).toContain("live.txt");
    expect(found).toContain("lower.txt");
    expect(JSON.stringify(await grepFiles(t, "ghost"))).not.toContain("gone/");
  });

  it("a young orphan (an import in flight) is kept; the deletion budget is shared and `more` says so", async () => {
    const t = await newTenant(app);
    const store = new IndexStore(storage, t.tenant, t.ws);
    const young = await store.putSegment(buildSegment([{ path: "in-flight.txt", etag: "1".repeat(32), size: 1, modified: 0, flags: 0, content: new Uint8Array([65]) }], new TrigramCollector()));
    const old = [await plantOrphan(t, ["x.txt"]), await plantOrphan(t, ["y.txt"])];
    const first = await collectGarbage(storage, t.tenant, { maxDeletions: 1 });
    expect(first).toMatchObject({ segments_deleted: 1, more: true });
    const second = await collectGarbage(storage, t.tenant);
    expect(second.segments_deleted).toBe(1);
    const left = (await segmentsOf(t)).map((s) => s.key);
    expect(left).toContain(young.key);
    for (const k of old) expect(left).not.toContain(k);
  });
});

/** Local R2 with a layer switch (the If-Match PUT of a workspace's meta.json) that can be made to fail, and a count of the modes table's writes. */
function switchFaults() {
  const inner = r2Driver(env.FILES);
  const state = { failSwitch: null as null | "error" | "conflict" | "modes", modesWrites: 0 };
  const put = async (key: string, body: PutBody, opts?: PutOptions) => {
    if (key.endsWith("/x/modes.json")) {
      state.modesWrites++;
      if (state.failSwitch === "modes") throw new Error("injected: storage failed writing the modes table");
    }
    if ((state.failSwitch === "error" || state.failSwitch === "conflict") && key.endsWith("/meta.json") && opts?.ifMatch) {
      if (state.failSwitch === "error") throw new Error("injected: storage failed at the layer switch");
      return inner.put(key, body, { ...opts, ifMatch: "0123456789abcdef0123456789abcdef" }); // a real refused condition: CONFLICT
    }
    return inner.put(key, body, opts);
  };
  const storage = new Proxy(inner, {
    get: (target, prop, receiver) => {
      if (prop === "put") return put;
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as StorageDriver;
  return { storage, state };
}

describe("the layer switch commits the import's links and execute bits (#26)", () => {
  const { storage: faulty, state } = switchFaults();
  const withFaults = testApp({ storage: faulty });
  const FIRST = tar([
    { name: "run.sh", body: "#!/bin/sh\necho run\n", mode: 0o755 },
    { name: "a.txt", body: "a\n" },
    { name: "l", type: "2", linkname: "a.txt" },
    { name: "bin/tool", type: "2", linkname: "../run.sh" },
  ]);

  it("an import that carries links and execute bits writes the modes table once", async () => {
    const t = await newTenant(withFaults);
    state.modesWrites = 0;
    const r = await importReq(t, FIRST);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ executable: 1, symlinks: 2 });
    expect(state.modesWrites).toBe(1);
    const ls = await t.call("ls", { path: "", recursive: true });
    expect(ls.body.output).toContain("l -> a.txt");
  });

  const what = { error: "a storage failure at the switch (its packs left for GC: the PUT might still land)", conflict: "a refused condition at the switch", modes: "a failed write of the links and execute bits (the step the switch commits)" };
  for (const failure of ["error", "conflict", "modes"] as const) {
    it(`${what[failure]} leaves storage as it was, links and execute bits included`, async () => {
      const t = await newTenant(withFaults);
      expect((await importReq(t, FIRST)).status).toBe(200);
      const before = await snapshot(t.tenant);
      state.failSwitch = failure;
      try {
        // A file over link l, a new link m, run.sh no longer executable, b.sh executable; replace drops bin/tool and a.txt.
        const r = await importReq(t, tar([
          { name: "l", body: "a file where the link was\n" },
          { name: "run.sh", body: "plain now\n", mode: 0o644 },
          { name: "b.sh", body: "#!/bin/sh\n", mode: 0o755 },
          { name: "m", type: "2", linkname: "b.sh" },
        ]), "?mode=replace");
        expect(r.status, JSON.stringify(r.body)).toBe(failure === "conflict" ? 409 : 500);
      } finally {
        state.failSwitch = null;
      }
      // Every object with its etag: the modes table (links and execute bits) is byte for byte as before; no pack, manifest or segment
      // left, but after a storage error at the switch, whose PUT might still land, the import's packs, manifest and segments stay for GC.
      const after = await snapshot(t.tenant);
      const forGc = (k: string) => /^t\/[^/]+\/(packs|manifests)\//.test(k) || k.includes("/x/search/");
      if (failure === "error") expect(after.filter((k) => !before.includes(k)).every(forGc)).toBe(true);
      expect(failure === "error" ? after.filter((k) => before.includes(k) || !forGc(k)) : after).toEqual(before);
    });
  }
});
