/**
 * A sandbox started ahead of its run (sandbox-spare.ts; #31 §4, time to interactive): after a run's
 * answer, the runner leaves one bwrap sandbox waiting at its gate on an empty tree of its own; a fresh
 * slot's next run of the same tenant, whose sandbox would be started with the same fixed arguments,
 * takes it and starts no process on its path. Pinned by the processes started (counted as in
 * run-processes.node.test.ts) and by what the command sees: its own fresh tree, /tmp and /dev/shm,
 * the run's cwd, environment and limits, its cgroup's bound.
 */
import * as childProcess from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_LIMITS, bwrapSandbox } from "../../../infra/container/sandbox.js";
import { Spares } from "../../../infra/container/sandbox-spare.js";
import { findCgroupPlace } from "../../../infra/container/cgroup-place.js";
import { setup } from "./helpers.js";

vi.mock("node:child_process", async (real) => {
  const cp = await real<typeof import("node:child_process")>();
  return { ...cp, spawn: vi.fn(cp.spawn), execFile: vi.fn(cp.execFile) };
});

/** The program names started since the last reset. */
const started = () => vi.mocked(childProcess.spawn).mock.calls.map((c) => basename(String(c[0])));
const recount = () => {
  vi.mocked(childProcess.spawn).mockClear();
};
/** The spare's start comes after the answer (off the call's path; recount() right after the run's await comes before it): wait until it was spawned. */
const spareStarted = () => vi.waitFor(() => expect(started()).toContain("bwrap"), { timeout: 20_000, interval: 20 });

const place = findCgroupPlace();
const ns = /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))![1]!;
/** This test process's sandbox cgroups. */
const cgroupsNow = () => ("none" in place ? [] : readdirSync(place.memory).filter((n) => n.startsWith(`toolshed-${ns}-${process.pid}-`)));

describe("a sandbox started ahead of its run", () => {
  const t = setup({}, "tenant-spare", "ws-spare");
  afterAll(() => t.cleanup());
  beforeEach(recount);

  it("a fresh workspace's run after another run's answer starts no process on its path, and sees only its own fresh tree, /tmp and /dev/shm, and its own cwd, environment and limits", async () => {
    await t.run("echo left > /tmp/left; echo left > /dev/shm/left; echo left > mine.txt", { workspace: "spare-a" });
    recount();
    await spareStarted();
    recount();
    const probe = "pwd; ls -A /workspace /tmp /dev/shm; ulimit -n; ulimit -t; echo \"$FOO|$HOME\"; env | sort | grep -v '^PWD=\\|^OLDPWD=\\|^_=\\|^SHLVL='";
    const r = await t.run(probe, { workspace: "spare-b", cwd: "sub/dir", env: { FOO: "a b", HOME: "/tmp/h", UID: "7" }, timeout_ms: 9_000, limits: { open_files: 99 } });
    expect(started()).toEqual([]); // the spare: nothing spawned on the way to the command
    recount();
    const [pwd, ...rest] = r.stdout.split("\n");
    expect(pwd).toBe("/workspace/sub/dir");
    expect(rest.join("\n")).toContain("/dev/shm:\n\n/tmp:\n.config\n.gitconfig\n\n/workspace:\nsub\n"); // nothing of the run before it
    expect(r.stdout).toContain("\n99\n10\na b|/tmp/h\n"); // ulimit -n, -t (the timeout's 9 s, rounded up, + 1), the run's variables
    await spareStarted(); // the next one, after this answer
    // The same command in a sandbox started for it (a warm slot takes no spare) sees the same environment.
    recount();
    const own = await t.run(probe, { workspace: "spare-b", cwd: "sub/dir", env: { FOO: "a b", HOME: "/tmp/h", UID: "7" }, timeout_ms: 9_000, limits: { open_files: 99 } });
    expect(started()).toEqual(["bwrap"]);
    expect(own.stdout).toBe(r.stdout);
  });

  it("a run whose sandbox would be started otherwise (stdin, another tmpfs size) starts its own; the spare waits for one that fits", async () => {
    await t.run("true", { workspace: "fit-a" });
    recount();
    await spareStarted();
    recount();
    expect((await t.run("cat", { workspace: "fit-b", stdin: "in" })).stdout).toBe("in");
    expect(started()).toEqual(["bwrap"]);
    recount();
    expect((await t.run("echo fits", { workspace: "fit-c" })).stdout).toBe("fits\n");
    expect(started()).toEqual([]);
    recount();
    await spareStarted();
    recount();
    expect((await t.run("df --output=size -m /tmp | tail -1", { workspace: "fit-d", limits: { tmp_mb: 64 } })).stdout.trim()).toBe("64");
    expect(started()).toEqual(["bwrap"]);
  });

  it("the spare is its tenant's: another tenant's fresh run in the same environment starts its own sandbox", async () => {
    await t.run("true", { workspace: "ten-a" });
    recount();
    await spareStarted();
    recount();
    const other = await t.run("ls -A /workspace", { tenant: "tenant-other", workspace: "ten-b" });
    expect(other.stdout).toBe("");
    expect(started()[0]).toBe("bwrap"); // its own, on its path
  });

  it.skipIf("none" in place)("its command runs in the spare's cgroup, under the run's memory bound", async () => {
    const hold = (mb: number) => `python3 -c 'import time; b = bytearray(${mb} << 20); time.sleep(2)'`;
    const limits = { sandbox_memory_mb: 64 };
    await t.run("true", { workspace: "cg-a", limits });
    recount();
    await spareStarted();
    recount();
    const r = await t.run(`${hold(40)} & ${hold(40)} & ${hold(40)} & wait; echo done`, { workspace: "cg-b", limits });
    expect(started()).toEqual([]);
    expect(r.limit_exceeded).toEqual({ memory_mb: 64 });
  });
});

describe("a spare no run takes", () => {
  const root = mkdtempSync(join(tmpdir(), "toolshed-spare-"));
  chmodSync(root, 0o711);
  const stage = join(root, "ws");
  const sandbox = bwrapSandbox({ stateDir: join(root, "sandbox") });
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const t = setup({}, "tenant-idle", "ws-idle");
  afterAll(() => t.cleanup());
  const req = t.req("true");

  it("is ended after its wait: its processes, its cgroup and its tree", async () => {
    await sandbox.check();
    mkdirSync(stage, { mode: 0o711 });
    const before = new Set(cgroupsNow());
    const spares = new Spares(sandbox, stage, null, 300);
    await spares.after(req, DEFAULT_LIMITS);
    const [tree] = readdirSync(stage);
    expect(tree).toBeDefined();
    if (!("none" in place)) expect(cgroupsNow().filter((n) => !before.has(n))).toHaveLength(1);
    await vi.waitFor(() => expect(readdirSync(stage)).toEqual([]), { timeout: 10_000, interval: 50 });
    expect(cgroupsNow().filter((n) => !before.has(n))).toEqual([]);
    expect(spares.take(req, DEFAULT_LIMITS)).toBeNull();
  });

  it("is ended when its environment closes", async () => {
    await t.run("true", { workspace: "close-a" });
    const stageDir = join(t.root, "ws");
    await vi.waitFor(() => expect(readdirSync(stageDir)).toHaveLength(1), { timeout: 20_000, interval: 20 });
    await t.handler.close();
    expect(readdirSync(stageDir)).toEqual([]); // its tree (and its processes and cgroup with it: the test above)
  });
});
