/**
 * Empty directories across bash calls, through the real sandbox: the runner writes back a marker
 * for each directory a command leaves empty, removes the marker of each directory it removes,
 * and materializes markers on warm and cold starts (infra/container/dirs.ts).
 */
import { afterAll, describe, expect, it } from "vitest";
import type { RunRequest, RunResult } from "../../../lib/exec/types.js";
import { dirMarkerKey, fileKey } from "../../../lib/layout/paths.js";
import { setup } from "./helpers.js";

const t = setup();
afterAll(() => t.cleanup());

/** Markers in storage (manifest entries ending in "/"). */
const markers = async () => (await t.paths()).filter((p) => p.endsWith("/"));
/** A run in another execution environment: a fresh runner cache, the same storage. */
const cold = async (command: string, extra: Partial<RunRequest> = {}): Promise<RunResult> => {
  const r = t.req(command, extra);
  const res = t.unwrap<RunResult>(await t.freshHandler()(r, { tenantId: r.tenant }));
  expect(res.sync.cache).toBe("cold");
  return res;
};
const GIT = "git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main";

describe("bash: directories are first-class entries", () => {
  it("mkdir -p a/b survives into the next call, warm and cold; find -type d and ls see it", async () => {
    const made = await t.run("mkdir -p a/b");
    expect(made.exit_code).toBe(0);
    expect(made.dirs_created).toEqual(["a/b"]); // a holds b: implied by the marker, no marker of its own
    expect(made.files_changed).toEqual([]);
    expect(await markers()).toEqual(["a/b/"]);

    const warm = await t.run("test -d a/b && echo yes");
    expect(warm.sync.cache).toBe("warm");
    expect(warm.stdout).toBe("yes\n");
    expect(warm.dirs_created).toEqual([]);
    expect(warm.dirs_deleted).toEqual([]);
    expect(warm.sync.downloaded_files).toBe(0);

    const fresh = await cold("find . -type d | sort");
    expect(fresh.stdout).toBe(".\n./a\n./a/b\n");
    expect(fresh.dirs_created).toEqual([]);
    expect(fresh.skipped).toEqual([]);
  });

  it("rmdir removes the marker; the parent left empty gets one; a marked directory stays when its files go", async () => {
    const r = await t.run("rmdir a/b");
    expect(r.dirs_deleted).toEqual(["a/b"]);
    expect(r.dirs_created).toEqual(["a"]);
    expect(await markers()).toEqual(["a/"]);
    expect((await t.run("test -d a && test ! -e a/b && echo ok")).stdout).toBe("ok\n");

    // Files into the marked directory, then out again: the marker was kept, the directory stays.
    const filled = await t.run("echo x > a/f && mkdir -p a/sub && echo y > a/sub/g");
    expect(filled.files_created).toEqual(["a/f", "a/sub/g"]);
    expect(filled.dirs_created).toEqual([]);
    const emptied = await t.run("rm a/f a/sub/g");
    expect(emptied.files_deleted).toEqual(["a/f", "a/sub/g"]);
    expect(emptied.dirs_created).toEqual(["a/sub"]); // sub was implied by g; the command left it (empty)
    expect((await cold("find a | sort")).stdout).toBe("a\na/sub\n");

    const gone = await t.run("rm -r a");
    expect(gone.dirs_deleted).toEqual(["a", "a/sub"]);
    expect(await markers()).toEqual([]);
    expect((await t.run("test -e a || echo gone")).stdout).toBe("gone\n");
    expect((await cold("test -e a || echo gone")).stdout).toBe("gone\n");
  });

  it("git init, then a failed commit: git status works in the next call (warm and cold)", async () => {
    const init = await t.run(`${GIT} init -q repo && cd repo && ${GIT} commit -q -m nothing`);
    expect(init.exit_code).not.toBe(0); // nothing to commit
    expect(init.dirs_created).toEqual(expect.arrayContaining(["repo/.git/refs/heads", "repo/.git/refs/tags", "repo/.git/objects/info", "repo/.git/objects/pack"]));
    for (const run of [t.run, cold]) {
      const st = await run(`cd repo && ${GIT} status --short && echo status-ok`);
      expect(st.stderr).toBe("");
      expect(st.stdout).toBe("status-ok\n");
      expect(st.exit_code).toBe(0);
    }
  });

  it("git pack-refs --all on a repository with a commit: git log works in the next call (warm and cold)", async () => {
    const c = await t.run(`cd repo && echo hi > f.txt && ${GIT} add f.txt && ${GIT} commit -q -m first && ${GIT} pack-refs --all && ls .git/refs/heads | wc -l`);
    expect(c.exit_code).toBe(0);
    expect(c.stdout).toBe("0\n"); // refs/heads is empty now: only its marker keeps it
    for (const run of [t.run, cold]) {
      const log = await run(`cd repo && ${GIT} log --format=%s`);
      expect(log.stderr).toBe("");
      expect(log.stdout).toBe("first\n");
    }
  });

  it("a working_dir the runner made is not the command's: no marker for it", async () => {
    const r = await t.run("pwd", { cwd: "made/by/runner" });
    expect(r.stdout).toBe("/workspace/made/by/runner\n");
    expect(r.dirs_created).toEqual([]);
    expect(await markers()).not.toContain("made/by/runner/");
    expect((await t.run("test -e made || echo none")).stdout).toBe("none\n");
  });

  it("a command that times out writes no directory back", async () => {
    const r = await t.run("mkdir late; sleep 30", { timeout_ms: 1000 });
    expect(r.timed_out).toBe(true);
    expect(r.discarded).toContain("late/");
    expect(await markers()).not.toContain("late/");
    expect((await t.run("test -e late || echo none")).stdout).toBe("none\n");
  });

  it("directories made and removed by tools (markers in storage) reach a warm slot", async () => {
    expect((await t.run("true")).sync.cache).toBe("warm");
    const m = await t.sync.mkdir("tooldir/x");
    expect(m.ok).toBe(true);
    expect((await t.run("test -d tooldir/x && echo there")).stdout).toBe("there\n");
    expect(m.ok && (await t.sync.rmdir("tooldir/x", { ifMatch: m.etag }))).toEqual({ ok: true });
    expect((await t.run("test -e tooldir || echo gone")).stdout).toBe("gone\n");
  });

  it("a directory the command made where a tool meanwhile wrote a file: a conflict, the file wins", async () => {
    const running = t.run("sleep 1; mkdir race && echo made");
    await new Promise((r) => setTimeout(r, 300));
    await t.write("race", "from a tool\n");
    const r = await running;
    expect(r.stdout).toBe("made\n");
    expect(r.dirs_created).toEqual([]);
    expect(r.conflicts).toEqual([{ path: "race/", change: "created", reason: "changed_meanwhile" }]);
    expect(await markers()).not.toContain("race/");
    expect((await t.run("cat race")).stdout).toBe("from a tool\n");
  });

  it("directories count against the write-back limit after files", async () => {
    const r = await t.run("echo 1 > lim.txt && mkdir lim-dir", { limits: { max_writeback_files: 1 } });
    expect(r.files_created).toEqual(["lim.txt"]);
    expect(r.dirs_created).toEqual([]);
    expect(r.skipped).toContainEqual(expect.objectContaining({ path: "lim-dir/", reason: "limit" }));
    expect((await t.run("test -e lim-dir || echo none")).stdout).toBe("none\n");
  });

  it("a marker where storage also has a file of that path is skipped; the file wins", async () => {
    await t.write("clash", "file\n");
    // The sync API refuses it (a file is there) ...
    expect(await t.sync.mkdir("clash")).toEqual({ ok: false, conflict: true });
    expect(await t.sync.mkdir("clash/below")).toEqual({ ok: false, conflict: true });
    // ... but storage written behind its back may hold both.
    await t.driver.put(dirMarkerKey(t.tenant, t.workspace, "clash"), new Uint8Array(0));
    expect(await t.driver.head(fileKey(t.tenant, t.workspace, "clash"))).not.toBeNull();
    const r = await cold("cat clash");
    expect(r.stdout).toBe("file\n");
    expect(r.skipped).toEqual([{ path: "clash/", reason: "path_conflict", detail: "clash is a file" }]);
  });
});
