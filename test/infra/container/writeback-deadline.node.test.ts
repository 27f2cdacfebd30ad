/**
 * A write-back that cannot finish in its share of the call's time answers anyway: what was
 * written, and what was not (`unsynced`), which is then not in the workspace. Real sandbox;
 * the sync client is slowed down to stand in for a storage that takes its time.
 */
import { afterAll, describe, expect, it } from "vitest";
import { MIN_WRITEBACK_MS, writeBackDeadline } from "../../../infra/container/run-request.js";
import { storageSyncClient } from "../../../lib/sync/storage.js";
import type { SyncClient } from "../../../lib/sync/types.js";
import { setup } from "./helpers.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let delayMs = 0;
/** Every write and delete takes delayMs. */
const slowed = (s: SyncClient): SyncClient => ({
  ...s,
  put: async (...a) => (await sleep(delayMs), s.put(...a)),
  delete: async (...a) => (await sleep(delayMs), s.delete(...a)),
});
const t = setup({ syncClient: (r) => slowed(storageSyncClient(t.driver, r.tenant, r.workspace)) }, "t-deadline", "w-deadline");
afterAll(() => t.cleanup());

describe("write-back deadline", () => {
  it("the deadline rule: the rest of the timeout, at least max(10 s, timeout / 4) after the command; or the limit given", () => {
    expect(writeBackDeadline(0, 1_000, 120_000, 0)).toBe(120_000); // a quick command: the rest of its timeout
    expect(writeBackDeadline(0, 110_000, 120_000, 0)).toBe(140_000); // a long one: a quarter of the timeout after it
    expect(writeBackDeadline(0, 5_000, 8_000, 0)).toBe(5_000 + MIN_WRITEBACK_MS); // a short timeout: 10 s at least
    expect(writeBackDeadline(0, 5_000, 8_000, 700)).toBe(5_700);
  });

  it("past the deadline the run answers with what was written and what was not; the rest is not in the workspace", async () => {
    for (let i = 0; i < 30; i++) await t.write(`z/old${String(i).padStart(2, "0")}.txt`, "old\n");
    delayMs = 100; // 16 in flight: ~160 changes a second
    const started = Date.now();
    const r = await t.run("mkdir -p out && for i in $(seq -w 1 400); do echo $i > out/f$i.txt; done; rm -r z; echo made", { limits: { writeback_ms: 1000 } });
    const took = Date.now() - started;
    delayMs = 0;
    expect(r.stdout).toBe("made\n");
    expect(took).toBeLessThan(r.duration_ms + 4000); // 1 s of write-back + requests in flight + walk and settle
    const u = r.unsynced!;
    expect(u.reasons).toEqual(["deadline"]);
    const written = r.files_changed.length + r.files_deleted.length;
    expect(written).toBeGreaterThan(20);
    expect(written + u.count).toBe(430);
    expect(u.paths).toHaveLength(20);
    expect([...u.paths].sort()).toEqual(u.paths);
    // Path order: what was written comes before what was not; deletions of z/ come last and were not sent.
    expect(r.files_changed.every((p) => p < u.paths[0]!)).toBe(true);
    const stored = await t.paths();
    expect(stored.filter((p) => p.startsWith("out/"))).toEqual(r.files_changed);
    expect(stored.filter((p) => p.startsWith("z/"))).toHaveLength(30); // deletions not sent: still there
    // The runner's tree was settled to storage: the next run sees the same.
    const next = await t.run("ls out | wc -l; ls z | wc -l");
    expect(next.stdout).toBe(`${r.files_changed.length}\n30\n`);
    expect(next.unsynced).toBeUndefined();
    await t.run("rm -r out z");
  });

  it("more changed files than max_writeback_files: the rest is reported (limit), not written", async () => {
    const r = await t.run("for i in 1 2 3 4 5 6 7 8; do echo $i > n$i.txt; done", { limits: { max_writeback_files: 5 } });
    expect(r.files_changed).toEqual(["n1.txt", "n2.txt", "n3.txt", "n4.txt", "n5.txt"]);
    expect(r.unsynced).toEqual({ count: 3, paths: ["n6.txt", "n7.txt", "n8.txt"], reasons: ["limit"] });
    expect(r.skipped).toEqual([]);
    expect((await t.paths()).filter((p) => p.startsWith("n"))).toEqual(r.files_changed);
  });
});
