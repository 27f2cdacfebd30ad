/**
 * A live command comes with the answer to its conditional manifest (lib/sync/live-types.ts,
 * LiveCommand.manifest): the runner's poll carries the query of its view, the API answers it right
 * after handing the command over, and the command makes no manifest request of its own. The runner
 * still asks itself when its view changed since the query (background processes' changes written
 * back before the command), or when the answer is not one it can take. The real bwrap sandbox and
 * the in-memory workspace of the container tests; the channel answers queries as the sync server's
 * live route does (answerManifest over the same storage). Not timed: requests are counted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunRequest, RunResult } from "../../../lib/exec/types.js";
import type { SyncClient } from "../../../lib/sync/types.js";
import type { ConditionalSync, ManifestQuery } from "../../../lib/sync/manifest.js";
import { storageSyncClient } from "../../../lib/sync/storage.js";
import { readModes, updateModes } from "../../../lib/layout/modes.js";
import { liveSetup, until, type LiveSandbox } from "./live-helpers.js";

/** The runner's manifest requests (conditional and plain), counted across every sync client it makes. */
let asked = 0;
const counted = (c: SyncClient & ConditionalSync): SyncClient & ConditionalSync => ({
  ...c,
  manifestSince: (q) => (asked++, c.manifestSince(q)),
  manifest: () => (asked++, c.manifest()),
});

const { t, startLive, inTree } = liveSetup({ syncClient: (r) => counted(storageSyncClient(t.driver, r.tenant, r.workspace)) }, "t-carry", "w-carry");
let live: LiveSandbox;
/** The API's answer to a live poll's manifest query (as lib/sync/live-server.ts makes it), over the same storage; not counted. */
const answerQuery = (q: ManifestQuery) => t.sync.manifestSince(q);

const FILES = ["a", "b", "c", "d"].flatMap((d) => Array.from({ length: 10 }, (_, i) => `${d}/f${i}.txt`));

/** Runs a command; its result, and how many manifest requests the runner made for it. */
async function cmd(command: string, x: Partial<RunRequest> = {}): Promise<RunResult & { asked: number }> {
  const before = asked;
  const r = await live.cmd(command, x);
  expect(r.exit_code, r.stderr).toBe(0);
  return { ...r, asked: asked - before };
}

beforeAll(async () => {
  for (const p of FILES) await t.write(p, `${p} v0\n`);
  live = startLive({ idle_ms: 120_000, max_life_ms: 300_000 });
  live.channel.carry = answerQuery;
  await cmd("true");
});
afterAll(async () => {
  await live.end();
  await t.cleanup();
});

describe("the manifest answer comes with the command", () => {
  it("a command on an unchanged workspace makes no manifest request", async () => {
    await cmd("true");
    const carriedBefore = live.channel.carried;
    const r = await cmd("true");
    expect(r.asked).toBe(0);
    expect(live.channel.carried).toBe(carriedBefore + 1);
    expect(r.sync.reconciled).toBeUndefined();
    expect(r.sync.downloaded_files).toBe(0);
  });

  it("a tool's edits between calls are in the tree, reconciled from the carried answer alone", async () => {
    const edited = FILES.filter((_, i) => i % 4 === 0); // 10 files over every directory
    for (const p of edited) await t.write(p, `${p} v1\n`);
    const r = await cmd(`cat ${edited.join(" ")}`);
    expect(r.asked).toBe(0);
    expect(r.stdout).toBe(edited.map((p) => `${p} v1\n`).join(""));
    expect(r.sync.reconciled).toEqual({ entries: 10, whole: false });
    expect(r.files_changed).toEqual([]);
  });

  it("a directory a tool deleted, a rename by a tool, a tool's chmod and symlink: all seen, no request", async () => {
    for (const e of (await t.sync.manifest()).filter((e) => e.path.startsWith("c/"))) await t.sync.delete(e.path, { ifMatch: e.etag });
    const moved = (await t.sync.manifest()).find((e) => e.path === "d/f3.txt")!;
    await t.write("d/renamed.txt", "d/f3.txt v0\n");
    await t.sync.delete("d/f3.txt", { ifMatch: moved.etag });
    await updateModes(t.driver, t.tenant, t.workspace, { add: ["b/f1.txt"], remove: [], links: { "b/to-f2": "f2.txt" } });
    const r = await cmd("test ! -e c && test ! -e d/f3.txt && cat d/renamed.txt && test -x b/f1.txt && readlink b/to-f2 && cat b/to-f2");
    expect(r.asked).toBe(0);
    expect(r.stdout).toBe("d/f3.txt v0\nf2.txt\nb/f2.txt v1\n"); // b/f2.txt: edited by the test above
  });

  it("a command's own changes are written back, and the next command still needs no request", async () => {
    const w = await cmd("echo mine > a/mine.txt && rm a/f1.txt");
    expect(w.files_created).toEqual(["a/mine.txt"]);
    expect(w.files_deleted).toEqual(["a/f1.txt"]);
    const r = await cmd("cat a/mine.txt");
    expect(r.asked).toBe(0);
    expect(r.sync.reconciled).toBeUndefined();
  });

  it("after background processes changed files, the runner asks itself (its view changed since the query), exactly", async () => {
    await cmd("(sleep 0.2; echo bg > a/bg.txt; sleep 60) > /dev/null 2>&1 &");
    await until(() => inTree("a/bg.txt"), "the background write");
    await t.write("b/f5.txt", "tool v2\n");
    const r = await cmd("cat a/bg.txt b/f5.txt");
    expect(r.stdout).toBe("bg\ntool v2\n");
    expect(r.files_changed).toEqual(["a/bg.txt"]);
    expect(r.asked).toBe(1);
    expect(await t.read("a/bg.txt")).toBe("bg\n");
  });

  it("an answer the runner cannot take is not used: it asks, and is exact", async () => {
    await t.write("a/f2.txt", "a2 v9\n");
    live.channel.carry = async () => ({ count: 5, buckets: 1, same: [], files: [{ path: "nonsense", etag: "x", size: 1 }] }); // its count is not its entries': apply refuses it before changing anything
    try {
      const r = await cmd("cat a/f2.txt");
      expect(r.stdout).toBe("a2 v9\n");
      expect(r.asked).toBe(1);
    } finally {
      live.channel.carry = answerQuery;
    }
    expect((await readModes(t.driver, t.tenant, t.workspace)).exec).toContain("b/f1.txt");
  });
});
