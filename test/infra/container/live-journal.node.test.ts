/**
 * A live sandbox's change journal (infra/container/change-journal.ts): after the first commands
 * its walk re-reads only the directories something happened in, and every change is still
 * written back, whichever way it was made. The real bwrap sandbox and the in-memory workspace of
 * the container tests; each case checks that the journal vouched for the directories nothing
 * happened in (so the case ran on the journal's word, not on a full walk).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveSetup, until, type LiveSandbox } from "./live-helpers.js";

const { t, startLive, inTree } = liveSetup({}, "t-journal", "w-journal");
let live: LiveSandbox;
const cmd = (command: string) => live.cmd(command);

/** Directories of the workspace nothing touches: the journal must vouch for them on every command. */
const QUIET = Array.from({ length: 8 }, (_, i) => `quiet${i}`);

beforeAll(async () => {
  for (const d of QUIET) for (let i = 0; i < 5; i++) await t.write(`${d}/f${i}.txt`, `${d} ${i}\n`);
  await t.write("src/a.txt", "aaaa\n");
  await t.write("src/b.txt", "bbbb\n");
  await t.write("src/c.txt", "cccc\n");
  await t.write("deep/x/y.txt", "y\n");
  live = startLive({ idle_ms: 120_000, max_life_ms: 300_000 });
  // The first walk sets the watches (a full walk); the next ones take the quiet directories on its word once
  // their listings are kept, i.e. once they have been unchanged for the settle margin (walk.ts): commands run until then.
  await cmd("true");
  for (let i = 0; i < 200 && ((await cmd("true")).sync.walk_dirs?.vouched ?? 0) < QUIET.length; i++);
});
afterAll(async () => {
  await live.end();
  await t.cleanup();
});

/** Runs a command and checks the journal vouched for every quiet directory. */
async function run(command: string) {
  const r = await cmd(command);
  expect(r.exit_code).toBe(0);
  expect(r.sync.walk_dirs?.vouched).toBeGreaterThanOrEqual(QUIET.length);
  return r;
}

describe("a live sandbox's journal sees every change", () => {
  it("an unchanged tree: nothing written back, every directory vouched for", async () => {
    // A directory changed within the settle margin (walk.ts) is read again whatever the journal says: on a
    // loaded machine the first commands can land inside it, so commands run until every directory has settled.
    let r = await run("cat src/a.txt >/dev/null");
    for (let i = 0; i < 50 && r.sync.walk_dirs!.vouched < r.sync.walk_dirs!.total; i++) {
      expect(r.files_changed).toEqual([]);
      r = await run("cat src/a.txt >/dev/null");
    }
    expect(r.files_changed).toEqual([]);
    expect(r.sync.walk_dirs).toMatchObject({ total: r.sync.walk_dirs!.vouched, vouched: r.sync.walk_dirs!.vouched });
  });

  it("a new file, a delete, a rename", async () => {
    expect((await run("echo new > src/new.txt")).files_created).toEqual(["src/new.txt"]);
    expect(await t.read("src/new.txt")).toBe("new\n");
    expect((await run("rm src/c.txt")).files_deleted).toEqual(["src/c.txt"]);
    expect(await t.read("src/c.txt")).toBe(null);
    const moved = await run("mv src/b.txt src/b2.txt");
    expect(moved.files_created).toEqual(["src/b2.txt"]);
    expect(moved.files_deleted).toEqual(["src/b.txt"]);
    expect(await t.read("src/b2.txt")).toBe("bbbb\n");
  });

  it("a same-size rewrite with its old mtime put back", async () => {
    await run("true"); // src settles: the next command's walk takes it on the journal's word unless told
    const r = await run("m=$(stat -c %y src/a.txt); printf 'AAAA\\n' > src/a.txt; touch -d \"$m\" src/a.txt");
    expect(r.files_changed).toEqual(["src/a.txt"]);
    expect(await t.read("src/a.txt")).toBe("AAAA\n");
  });

  it("a change in a deep new directory, and a directory renamed and made again under its old name", async () => {
    const deep = await run("mkdir -p n1/n2/n3/n4 && echo deep > n1/n2/n3/n4/f.txt");
    expect(deep.files_created).toEqual(["n1/n2/n3/n4/f.txt"]);
    await run("true");
    const swapped = await run("mv deep gone && mkdir -p deep/x && echo other > deep/x/y.txt && echo z > gone/x/z.txt");
    expect(swapped.files_created.sort()).toEqual(["gone/x/y.txt", "gone/x/z.txt"]);
    expect(swapped.files_changed).toContain("deep/x/y.txt");
    expect(await t.read("deep/x/y.txt")).toBe("other\n");
    await run("true");
    // The renamed directory's files are reached under its new name (its old watches are gone).
    expect((await run("echo more >> gone/x/z.txt")).files_changed).toEqual(["gone/x/z.txt"]);
    expect((await run("echo again >> deep/x/y.txt")).files_changed).toEqual(["deep/x/y.txt"]);
    expect(await t.read("deep/x/y.txt")).toBe("other\nagain\n");
  });

  it("a change a background process made between commands", async () => {
    await run("(sleep 0.3; echo more >> src/a.txt; echo late > src/late.txt) >/dev/null 2>&1 &");
    await until(() => inTree("src/late.txt"), "the background write");
    const r = await run("true");
    expect(r.files_changed).toEqual(["src/a.txt", "src/late.txt"]);
    expect(await t.read("src/late.txt")).toBe("late\n");
    expect(await t.read("src/a.txt")).toBe("AAAA\nmore\n");
  });

  it("a file written through a second hard link in another directory", async () => {
    await run("mkdir -p links && ln src/new.txt links/h.txt");
    // When src was taken on the journal's word, the link's other name went unstated: the next walk trusts no directory.
    await cmd("true");
    await run("true");
    const r = await run("echo via-link >> links/h.txt");
    expect(r.files_changed.sort()).toEqual(["links/h.txt", "src/new.txt"]);
    expect(await t.read("src/new.txt")).toBe("new\nvia-link\n");
  });
});
