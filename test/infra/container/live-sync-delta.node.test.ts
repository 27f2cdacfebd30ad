/**
 * A live command's sync touches only what changed (issue #29's speed targets), and gives up no
 * exactness for it. The real bwrap sandbox and the in-memory workspace of the container tests.
 *  - Sync in: after a tool changed a few files between commands, the runner reconciles only the
 *    entries the conditional manifest proved changed (RunResult.sync.reconciled counts them), and
 *    all of them (`whole`) whenever the delta cannot be applied on its own (an explicit directory).
 *  - Sync out: a command after which the change journal heard nothing makes no walk
 *    (RunResult.sync.walk_dirs.walked: false); whatever a command changes after such a one is
 *    still written back, every kind of change alike.
 * Commands come with their manifest answer, as the API hands them over (live-carried-manifest.node.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunRequest, RunResult } from "../../../lib/exec/types.js";
import { readModes } from "../../../lib/layout/modes.js";
import { liveSetup, type LiveSandbox } from "./live-helpers.js";

const { t, startLive, inTree } = liveSetup({}, "t-delta", "w-delta");
let live: LiveSandbox;

const DIRS = ["a", "b", "c", "d"];
const FILES = DIRS.flatMap((d) => Array.from({ length: 10 }, (_, i) => `${d}/f${i}.txt`));

async function cmd(command: string, x: Partial<RunRequest> = {}): Promise<RunResult> {
  const r = await live.cmd(command, x);
  expect(r.exit_code, r.stderr).toBe(0);
  return r;
}

/** Runs `true` until the journal vouches for the whole tree and makes no walk (the first walks set its watches). */
async function quiet(): Promise<RunResult> {
  let r = await cmd("true");
  for (let i = 0; i < 20 && r.sync.walk_dirs?.walked !== false; i++) r = await cmd("true");
  expect(r.sync.walk_dirs).toEqual({ total: r.sync.walk_dirs!.total, vouched: r.sync.walk_dirs!.total, walked: false, compared: 0 });
  expect(r.files_changed).toEqual([]);
  return r;
}

beforeAll(async () => {
  for (const p of FILES) await t.write(p, `${p} v0\n`);
  live = startLive({ idle_ms: 120_000, max_life_ms: 300_000 });
  live.channel.carry = (q) => t.sync.manifestSince(q); // as the API does: each command comes with its manifest answer
  await cmd("true");
});
afterAll(async () => {
  await live.end();
  await t.cleanup();
});

describe("sync in: only the entries a tool changed", () => {
  it("10 files edited, one created in a new directory, one deleted: 12 entries reconciled, not 40", async () => {
    await cmd("true");
    const edited = FILES.filter((_, i) => i % 4 === 0); // 10 files over every directory
    for (const p of edited) await t.write(p, `${p} v1\n`);
    await t.write("e/new.txt", "new\n");
    await t.sync.delete("d/f9.txt", { ifMatch: (await t.sync.manifest()).find((e) => e.path === "d/f9.txt")!.etag });
    const r = await cmd(`cat ${edited.join(" ")} e/new.txt; test ! -e d/f9.txt`);
    expect(r.sync.reconciled).toEqual({ entries: 12, whole: false });
    expect(r.sync.downloaded_files).toBe(11);
    expect(live.channel.carried).toBeGreaterThanOrEqual(3); // every command so far came with its answer
    expect(r.stdout).toBe([...edited.map((p) => `${p} v1\n`), "new\n"].join(""));
    expect(r.files_changed).toEqual([]);
    // Nothing changed since: no reconcile at all.
    expect((await cmd("true")).sync.reconciled).toBeUndefined();
  });

  it("a directory a tool emptied is gone from the tree; a file made where one was deleted comes back", async () => {
    const all = (await t.sync.manifest()).filter((e) => e.path.startsWith("c/"));
    for (const e of all) await t.sync.delete(e.path, { ifMatch: e.etag });
    const r = await cmd("test ! -e c && ls");
    expect(r.sync.reconciled).toEqual({ entries: 10, whole: false });
    expect(r.stdout.split("\n")).not.toContain("c");
    expect(inTree("c")).toBe(false);
    await t.write("c/f0.txt", "back\n");
    const back = await cmd("cat c/f0.txt");
    expect(back.stdout).toBe("back\n");
    expect(back.sync.reconciled).toEqual({ entries: 1, whole: false });
  });

  it("after a command whose changes were all written back, nothing is reconciled; then a tool's edit, only that", async () => {
    const wrote = await cmd("echo mine > b/mine.txt && echo more >> b/f0.txt && rm b/f9.txt");
    expect(wrote.files_changed).toEqual(["b/f0.txt", "b/mine.txt"]);
    expect(wrote.files_deleted).toEqual(["b/f9.txt"]);
    expect((await cmd("cat b/mine.txt")).sync.reconciled).toBeUndefined();
    await t.write("b/mine.txt", "tool\n");
    const r = await cmd("cat b/mine.txt b/f0.txt; test ! -e b/f9.txt");
    expect(r.stdout).toBe("tool\nb/f0.txt v0\nmore\n");
    expect(r.sync.reconciled).toEqual({ entries: 1, whole: false });
  });

  it("an explicit directory made by a tool: the whole manifest is reconciled, and the directory is there", async () => {
    const made = await t.sync.mkdir("empty/inner");
    expect(made.ok).toBe(true);
    const r = await cmd("test -d empty/inner");
    expect(r.sync.reconciled?.whole).toBe(true);
    // Then deltas again.
    await t.write("a/f1.txt", "a1 v2\n");
    const next = await cmd("cat a/f1.txt && test -d empty/inner");
    expect(next.stdout).toBe("a1 v2\n");
    expect(next.sync.reconciled).toEqual({ entries: 1, whole: false });
  });
});

describe("sync out: no walk when the journal heard nothing, and every change still written back", () => {
  it("a command that changes nothing makes no walk", async () => {
    const r = await quiet();
    expect(r.sync.walk_dirs!.total).toBeGreaterThanOrEqual(DIRS.length);
  });

  it("a file created in a new directory", async () => {
    await quiet();
    const r = await cmd("mkdir -p n/m && echo deep > n/m/f.txt");
    expect(r.sync.walk_dirs?.walked).toBe(true);
    expect(r.files_created).toEqual(["n/m/f.txt"]);
    expect(await t.read("n/m/f.txt")).toBe("deep\n");
  });

  it("a deleted directory", async () => {
    await quiet();
    const r = await cmd("rm -r n");
    expect(r.files_deleted).toEqual(["n/m/f.txt"]);
    expect(await t.read("n/m/f.txt")).toBe(null);
  });

  it("a rename", async () => {
    await quiet();
    const r = await cmd("mv b/f1.txt b/moved.txt");
    expect(r.files_created).toEqual(["b/moved.txt"]);
    expect(r.files_deleted).toEqual(["b/f1.txt"]);
    expect(await t.read("b/moved.txt")).toBe("b/f1.txt v0\n");
  });

  it("a chmod (no byte changed)", async () => {
    await quiet();
    const r = await cmd("chmod +x b/f2.txt");
    expect(r.files_changed).toEqual([]);
    expect((await readModes(t.driver, t.tenant, t.workspace)).exec).toContain("b/f2.txt");
  });

  it("a symlink", async () => {
    await quiet();
    const r = await cmd("ln -s f3.txt b/link");
    expect(r.links_changed).toEqual(["b/link"]);
    expect((await readModes(t.driver, t.tenant, t.workspace)).links).toEqual({ "b/link": "f3.txt" });
    expect((await cmd("rm b/link")).links_changed).toEqual(["b/link"]); // a directory holding a symlink is read on every walk
  });

  it("a same-size rewrite with its old mtime put back", async () => {
    await quiet();
    const r = await cmd("m=$(stat -c %y d/f0.txt); printf 'D/F0.TXT V0\\n' > d/f0.txt; touch -d \"$m\" d/f0.txt");
    expect(r.files_changed).toEqual(["d/f0.txt"]);
    expect(await t.read("d/f0.txt")).toBe("D/F0.TXT V0\n");
  });

  it("a hard link made to a file of a quiet directory, then a write through the new name", async () => {
    await quiet(); // every directory vouched for: a's listing is taken on the journal's word
    const linked = await cmd("mkdir -p hl && ln a/f5.txt hl/x.txt");
    expect(linked.files_created).toEqual(["hl/x.txt"]);
    // The link count's change reaches no directory's watch: only the walk's count of the file's names tells.
    const r = await cmd("echo via >> hl/x.txt");
    expect(r.files_changed).toEqual(["a/f5.txt", "hl/x.txt"]);
    expect(await t.read("a/f5.txt")).toBe("a/f5.txt v0\nvia\n");
    await cmd("rm hl/x.txt");
  });

  it("after a tool's edit of 2 files of one directory, the sync-out compares only that directory's files", async () => {
    await quiet();
    await t.write("a/f2.txt", "a2 v1\n");
    await t.write("a/f3.txt", "a3 v1\n");
    const r = await cmd("ls -p a | grep -vc /");
    expect(r.sync.reconciled).toEqual({ entries: 2, whole: false });
    expect(r.sync.walk_dirs?.walked).toBe(true);
    expect(r.sync.walk_dirs?.compared).toBe(Number(r.stdout.trim()));
    expect(r.sync.walk_dirs!.compared).toBeLessThan(r.sync.manifest_files / 2);
    // What a command changes in the directories the journal vouched for is still found (their events make them read).
    const w = await cmd("echo x >> b/f3.txt && rm d/f2.txt && echo new > a/new2.txt");
    expect(w.files_changed).toEqual(["a/new2.txt", "b/f3.txt"]);
    expect(w.files_deleted).toEqual(["d/f2.txt"]);
  });

  it("a tool's edit after a command that made no walk is in the tree, and the next command's change to it is written back", async () => {
    await quiet();
    await t.write("d/f1.txt", "tool\n");
    const r = await cmd("cat d/f1.txt && echo cmd >> d/f1.txt");
    expect(r.stdout).toBe("tool\n");
    expect(r.files_changed).toEqual(["d/f1.txt"]);
    expect(await t.read("d/f1.txt")).toBe("tool\ncmd\n");
  });
});
