/**
 * The processes a run starts (#31, time to interactive): process creation is the dearest system
 * call on the runner's path (a fork of the runner, whose spawn() holds its event loop until the
 * child has exec'd), so it is counted here. A fresh workspace's first run, the path of create +
 * `bash node -v`, starts one process: the sandbox. A slot's tree gets ext4's top-directory flag
 * (`chattr`, spread-dirs.ts) only from the first download that makes a directory in it, once per
 * slot, never on the way to an empty workspace's command. And the session's shell around the command
 * (shell-state.ts) forks nothing, before the command or when it saves its state after it: in the
 * sandbox's own pid namespace (bwrap's init is 1, the shell 2) the command's first process is pid 3.
 * Without a spare sandbox (started ahead of a fresh slot's run after a run's answer: counted in
 * sandbox-spare.node.test.ts), as for every run a spare does not fit.
 */
import { execFileSync } from "node:child_process";
import * as childProcess from "node:child_process";
import { basename, join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { RunResult } from "../../../lib/exec/types.js";
import { setup } from "./helpers.js";

// The real functions, wrapped to count what they start.
vi.mock("node:child_process", async (real) => {
  const cp = await real<typeof import("node:child_process")>();
  return { ...cp, spawn: vi.fn(cp.spawn), execFile: vi.fn(cp.execFile) };
});

/** The program names started since the last reset, in the order they were started. */
const started = () =>
  [vi.mocked(childProcess.spawn).mock, vi.mocked(childProcess.execFile).mock]
    .flatMap((m) => m.calls.map((c, i) => [m.invocationCallOrder[i]!, basename(String(c[0]))] as const))
    .sort((a, b) => a[0] - b[0])
    .map(([, name]) => name);
const recount = () => {
  vi.mocked(childProcess.spawn).mockClear();
  vi.mocked(childProcess.execFile).mockClear();
};

describe("the processes of a run", () => {
  let t: ReturnType<typeof setup>;
  beforeAll(async () => {
    t = setup({ spares: false });
    await t.run("true"); // the handler's first run also checks its sandbox once (sandbox.ts check): not counted below
  });
  afterAll(() => t.cleanup());
  beforeEach(recount);

  it("a fresh, empty workspace's first run starts the sandbox and nothing else", async () => {
    const r = await t.run("echo hi", { workspace: "fresh-empty" });
    expect(r.stdout).toBe("hi\n");
    expect(started()).toEqual(["bwrap"]);
  });

  it("the first download that makes a directory flags the slot's tree, once; a run without one never does", async () => {
    const ws = "fresh-files";
    const { storageSyncClient } = await import("../../../lib/sync/storage.js");
    const sync = storageSyncClient(t.driver, t.tenant, ws);
    const put = async (path: string, text: string) => expect((await sync.put(path, new TextEncoder().encode(text), {})).ok).toBe(true);
    await put("top.txt", "top");
    let r: RunResult = await t.run("cat top.txt", { workspace: ws }); // a cold slot, one file at the top: no directory made
    expect(r.stdout).toBe("top");
    expect(started()).toEqual(["bwrap"]);

    recount();
    await put("src/a/one.ts", "one");
    r = await t.run("cat src/a/one.ts", { workspace: ws }); // the same (warm) slot: its first directory
    expect(r.stdout).toBe("one");
    expect(started().sort()).toEqual(["bwrap", "chattr"]); // the sandbox starts while the manifest is asked, before the download

    recount();
    await put("lib/two.ts", "two");
    r = await t.run("cat lib/two.ts", { workspace: ws }); // another new directory in the flagged slot
    expect(r.stdout).toBe("two");
    expect(started()).toEqual(["bwrap"]);

    // Where the file system takes the flag (ext4), this slot's tree carries it, and only this one of the three
    // slots (the first test's workspaces made no directory); elsewhere (best effort) there is nothing to read.
    let flags: string[];
    try {
      const trees = execFileSync("sh", ["-c", `ls -d ${join(t.handler.raw.cache.root, "*", "tree")}`]).toString().trim().split("\n");
      flags = trees.map((tree) => execFileSync("lsattr", ["-d", tree], { stdio: ["ignore", "pipe", "ignore"] }).toString().split(/\s+/)[0]!);
    } catch {
      return; // no lsattr, or a file system without attributes
    }
    expect(flags).toHaveLength(3);
    expect(flags.filter((f) => f.includes("T"))).toHaveLength(1);
  });

  describe("the session's shell around the command forks nothing", () => {
    // `(echo $BASHPID)` is the command's first process; `eval "$__toolshed_save"` is the save the wrapper runs after it.
    const firstPid = "(echo $BASHPID)";
    const afterSave = 'eval "$__toolshed_save"; (echo $BASHPID)';

    it('keep "cwd" (the bash tool\'s default): before the command and in its save', async () => {
      for (const command of [firstPid, afterSave]) {
        const r = await t.run(command, { workspace: "shell-cwd", shell: { keep: "cwd" } });
        expect(r.stdout, command).toBe("3\n");
      }
      const r = await t.run("mkdir -p sub && cd sub", { workspace: "shell-cwd", shell: { keep: "cwd" } });
      expect(r.shell?.state).toEqual({ cwd: "sub" });
    });

    it('keep "all" (keep_env): the same, and its exported variables and functions are still kept', async () => {
      for (const command of [firstPid, afterSave]) {
        const r = await t.run(command, { workspace: "shell-all", shell: { keep: "all" } });
        expect(r.stdout, command).toBe("3\n");
      }
      const r = await t.run("export KEPT='a b'$'\\n''c' NUM=1; unset -v NUM; greet() { echo hi; }; IFS=:; set -u; export TWO=2", { workspace: "shell-all", shell: { keep: "all", state: { cwd: "", env: { OLD: "o" } } } });
      expect(r.shell?.state.env).toEqual({ OLD: "o", KEPT: "a b\nc", TWO: "2" });
      expect(r.shell?.state.functions).toContain("greet");
      expect(r.shell?.notes).toEqual([]);
    });
  });
});
