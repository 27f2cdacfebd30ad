/**
 * Exactness of a warm run's change detection (walk.ts + changes.ts diff, with the slot's kept
 * directory listings): whatever a command changes is seen by its write-back, even a change
 * that leaves its directory alone and hides behind an old mtime. Each case runs on a warm slot
 * whose directories settled long before (their listings are reused), in the real sandbox.
 */
import { afterAll, describe, expect, it } from "vitest";
import { readModes } from "../../../lib/layout/modes.js";
import { LISTING_SETTLED_MS } from "../../../infra/container/listing-settled.js";
import { setup } from "./helpers.js";

const t = setup({}, "t-exact", "w-exact");
afterAll(() => t.cleanup());

const execList = async () => (await readModes(t.driver, t.tenant, t.workspace)).exec;

describe("a warm run sees every change its command made", () => {
  it("same-size rewrite with the old mtime put back, a new file, a delete, chmod +x: each written back", async () => {
    await t.write("src/a.txt", "aaaa\n");
    await t.write("src/b.txt", "keep\n");
    await t.write("src/c.txt", "gone\n");
    await t.write("src/d.sh", "echo d\n");
    await t.write("top.txt", "top\n");
    const cold = await t.run("true");
    expect(cold.sync.cache).toBe("cold");
    // Let every directory settle, so the next walks reuse their listings (only files are lstat'ed).
    await new Promise((r) => setTimeout(r, LISTING_SETTLED_MS + 500));
    expect((await t.run("true")).files_changed).toEqual([]);

    // Same size, same mtime: only the content (and the ctime no command can set) differs.
    const same = await t.run("m=$(stat -c %y src/a.txt); printf 'bbbb\\n' > src/a.txt; touch -d \"$m\" src/a.txt; stat -c %s src/a.txt");
    expect(same.sync.cache).toBe("warm");
    expect(same.stdout).toBe("5\n");
    expect(same.files_changed).toEqual(["src/a.txt"]);
    expect(await t.read("src/a.txt")).toBe("bbbb\n");

    const created = await t.run("echo new > src/new.txt");
    expect(created.files_created).toEqual(["src/new.txt"]);
    expect(await t.read("src/new.txt")).toBe("new\n");

    const deleted = await t.run("rm src/c.txt");
    expect(deleted.files_deleted).toEqual(["src/c.txt"]);
    expect(await t.read("src/c.txt")).toBe(null);

    const chmodded = await t.run("chmod +x src/d.sh");
    expect(chmodded.files_changed).toEqual([]); // no content change
    expect(await execList()).toContain("src/d.sh");
    // And back: the next warm run runs it, then a touch that changes nothing is nothing.
    const ran = await t.run("./src/d.sh; touch src/b.txt top.txt");
    expect(ran.stdout).toBe("d\n");
    expect(ran.files_changed).toEqual([]);
    expect(await t.read("src/b.txt")).toBe("keep\n");
    expect((await t.paths()).filter((p) => p.startsWith("src/"))).toEqual(["src/a.txt", "src/b.txt", "src/d.sh", "src/new.txt"]);
  });
});

describe("a file a tool replaced between runs is newer than the bytes it replaced", () => {
  it("python3 runs an edit of the same length made in the second its .pyc was written (not the cached old code)", async () => {
    await t.write("calc.py", "def add(a, b):\n    return a - b\n");
    const first = await t.run("python3 -c 'from calc import add; print(add(2, 3))'; stat -c %Y calc.py");
    const [result, mtime] = first.stdout.trim().split("\n");
    expect(result).toBe("-1");
    expect((await t.paths()).some((p) => p.startsWith("__pycache__/calc.") && p.endsWith(".pyc"))).toBe(true);
    // The edit, as the edit tool writes it: same length, at once (well within the pyc's second).
    await t.write("calc.py", "def add(a, b):\n    return a + b\n");
    const second = await t.run("python3 -c 'from calc import add; print(add(2, 3))'; stat -c %Y calc.py");
    const [fixed, newer] = second.stdout.trim().split("\n");
    expect(second.sync.cache).toBe("warm");
    expect(fixed).toBe("5");
    expect(Number(newer)).toBeGreaterThan(Number(mtime));
  });
});
