/**
 * A cgroup per bubblewrap sandbox (sandbox-cgroup.ts): processes that each stay under the
 * per-process limit but together pass the sandbox's bound are OOM-killed inside it, as is a
 * sandbox filling /dev/shm and /tmp past it; a sandbox beside it and a control under the bound run
 * untouched; no cgroup is left after the runs. The bound is made small here (64 MiB) so the
 * tests stay fast. Skipped, naming why, only on a host where the runner can make no cgroup.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { RunLimits } from "../../../lib/exec/types.js";
import { findCgroupPlace, mountsOf, ownPaths, type CgroupPlace } from "../../../infra/container/cgroup-place.js";
import { stoppedError } from "../../../lib/exec/tool-support.js";
import { setup } from "./helpers.js";
import { liveSetup } from "./live-helpers.js";
import { bwrapSandbox, DEFAULT_LIMITS } from "../../../infra/container/sandbox.js";
import { sandboxCgroups } from "../../../infra/container/sandbox-cgroup.js";
import type { SandboxExit } from "../../../infra/container/sandbox-spec.js";

const place = findCgroupPlace();
const none = "none" in place ? place.none : null;
if (none) console.warn(`sandbox-cgroup tests skipped: this host has no writable cgroup (${none})`);

/** MiB a python3 process writes and holds, then sleeps; each well under the per-process 2 GiB. */
const hold = (mb: number, s = 2) => `python3 -c 'import time; b = bytearray(${mb} << 20); time.sleep(${s})'`;

describe.skipIf(none !== null)("a cgroup per sandbox", () => {
  const where = place as CgroupPlace;
  const root = mkdtempSync(join(tmpdir(), "toolshed-memcg-"));
  chmodSync(root, 0o711);
  const sandbox = bwrapSandbox({ stateDir: join(root, "state") });
  // No spare sandbox (sandbox-spare.ts: its cgroup waits with it) among the cgroups counted here; sandbox-spare.node.test.ts counts its own.
  const t = setup({ spares: false }, "tenant-memcg", "ws-memcg");
  const live = liveSetup({ spares: false }, "tenant-memcg-live", "ws-memcg-live");
  afterAll(async () => {
    await t.cleanup();
    await live.t.cleanup();
    rmSync(root, { recursive: true, force: true });
  });
  const small: RunLimits = { ...DEFAULT_LIMITS, sandbox_memory_mb: 64 };
  /** This test process's sandbox cgroups (sandbox-cgroup.ts names them after the runner's pid) in `dir`. */
  const ns = /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))![1]!;
  const mine = (dir = where.memory) => readdirSync(dir).filter((n) => n.startsWith(`toolshed-${ns}-${process.pid}-`));

  async function run(command: string, limits = small, onOutput?: () => void): Promise<SandboxExit & { output: string }> {
    const tree = join(root, `tree-${Math.random().toString(36).slice(2)}`);
    mkdirSync(tree, { recursive: true, mode: 0o777 });
    chmodSync(tree, 0o777);
    const out: Buffer[] = [];
    const took = (c: Buffer) => (out.push(c), onOutput?.());
    const r = await sandbox.run({ tree, cwd: "", command, env: {}, network: false, limits, timeoutMs: 30_000, onStdout: took, onStderr: took });
    return { ...r, output: Buffer.concat(out).toString() };
  }

  it("every process of the command is in it, under its memory and process bounds", async () => {
    let seen: { procs: number; memory: string; pids: string } | null = null;
    const r = await run("sleep 0.3 & echo started; wait", { ...small, processes: 50 }, () => {
      if (seen) return;
      const [name] = mine();
      const mem = join(where.memory, name!);
      const pidsDir = where.version === 2 ? mem : join(where.pids!, name!);
      seen = {
        procs: readFileSync(join(mem, "cgroup.procs"), "utf8").split("\n").filter(Boolean).length,
        memory: readFileSync(join(mem, where.version === 2 ? "memory.max" : "memory.limit_in_bytes"), "utf8").trim(),
        pids: readFileSync(join(pidsDir, "pids.max"), "utf8").trim(),
      };
    });
    expect(r.exitCode).toBe(0);
    expect(r.memory).toEqual({ limitMb: 64, oomKills: 0 });
    // bwrap's two, the command's shell and its sleep at least
    expect(seen!.procs).toBeGreaterThanOrEqual(4);
    expect(seen!.memory).toBe(String(64 * 1024 * 1024));
    expect(seen!.pids).toBe("52"); // and bwrap's own two
  });

  it("processes that each stay far under the per-process limit but together pass the bound are OOM-killed in it; a sandbox beside it is untouched", async () => {
    const beside = run(`${hold(30, 3)}; echo beside-ok`);
    const r = await run(`${hold(40)} & ${hold(40)} & ${hold(40)} & wait; echo done`);
    expect(r.memory!.oomKills).toBeGreaterThan(0);
    expect(r.output).toContain("Killed");
    expect(r.output).toContain("done"); // the kernel killed a process of it; the run went on
    const other = await beside;
    expect(other).toMatchObject({ exitCode: 0, memory: { limitMb: 64, oomKills: 0 } });
    expect(other.output).toContain("beside-ok");
  });

  it("a control under the bound: nothing is killed", async () => {
    const r = await run(`${hold(20, 1)} & ${hold(20, 1)} & wait; echo done`);
    expect(r).toMatchObject({ exitCode: 0, memory: { limitMb: 64, oomKills: 0 } });
    expect(r.output).toBe("done\n");
  });

  it("filling /dev/shm and /tmp (tmpfs, each under its own 512 MiB size) past the bound is stopped: their pages count", async () => {
    const r = await run("head -c 40M /dev/zero > /dev/shm/a; head -c 40M /dev/zero > /tmp/b; echo survived");
    expect(r.memory!.oomKills).toBeGreaterThan(0);
    expect(r.output).not.toContain("survived");
    // control: the same files under a bound that holds them
    const ok = await run("head -c 40M /dev/zero > /dev/shm/a; head -c 40M /dev/zero > /tmp/b; echo survived", { ...small, sandbox_memory_mb: 256 });
    expect(ok).toMatchObject({ exitCode: 0, memory: { limitMb: 256, oomKills: 0 } });
    expect(ok.output).toBe("survived\n");
  });

  it("the runner's result and output say so: the note names the limit and what to do, limit_exceeded.memory_mb, and the run's files are written back", async () => {
    const r = await t.run(`echo kept > a.txt; ${hold(40)} & ${hold(40)} & ${hold(40)} & wait; echo done`, { limits: { sandbox_memory_mb: 64 } });
    expect(r.limit_exceeded).toEqual({ memory_mb: 64 });
    expect(r.output).toContain("[toolshed: the sandbox reached its memory limit (64 MiB for all its processes together");
    expect(r.output).toContain("Use less memory at once");
    expect(r.files_changed).toEqual(["a.txt"]);
    expect(stoppedError(r, 20)).toBeNull(); // not the tools' QUOTA_EXCEEDED: the command ran on
    const calm = await t.run("echo hi", { limits: { sandbox_memory_mb: 64 } });
    expect(calm.limit_exceeded).toBeUndefined();
    expect(calm.output).toBe("hi\n");
  });

  it("a crashed runner's leftovers are swept at the next start; a running runner's are kept", async () => {
    const dead = `toolshed-${ns}-999999999-1-1`; // no such pid
    const alive = `toolshed-${ns}-${process.pid}-0-1`; // this process, but not its start time: a runner gone whose pid came back
    const live = `toolshed-${ns}-1-${readFileSync("/proc/1/stat", "utf8").split(") ")[1]!.split(" ")[19]}-1`; // pid 1, running
    const elsewhere = `toolshed-1-999999999-1-1`; // another pid namespace's: not this runner's to judge
    for (const n of [dead, alive, live, elsewhere]) mkdirSync(join(where.memory, n));
    const lines: string[] = [];
    const cgroups = sandboxCgroups({ log: (l) => lines.push(l) });
    const cg = cgroups.make(64, 10)!;
    await cg.remove();
    await vi.waitFor(() => expect(readdirSync(where.memory).filter((n) => n === dead || n === alive)).toEqual([]));
    expect(readdirSync(where.memory)).toEqual(expect.arrayContaining([live, elsewhere]));
    for (const n of [live, elsewhere]) rmdirSync(join(where.memory, n));
    expect(lines).toEqual([expect.stringMatching(/^cgroups: v[12], one per sandbox under .* \(2 left by an ended runner removed\)$/)]);
  });

  it("a live sandbox: one cgroup for its life; the command whose processes passed the bound gets the note, the next one does not; gone at its end", async () => {
    const { startLive } = live;
    const s = startLive({}, { limits: { sandbox_memory_mb: 64 } });
    const first = await s.cmd("echo one");
    expect(first.limit_exceeded).toBeUndefined();
    expect(mine()).toHaveLength(1);
    const hog = await s.cmd(`${hold(40)} & ${hold(40)} & ${hold(40)} & wait; echo done`);
    expect(hog.limit_exceeded).toEqual({ memory_mb: 64 });
    expect(hog.output).toContain("[toolshed: the sandbox reached its memory limit (64 MiB");
    expect(hog.output).toContain("Files in /tmp and /dev/shm hold memory until they are deleted");
    const after = await s.cmd("echo three");
    expect(after.limit_exceeded).toBeUndefined();
    expect(after.output).toBe("three\n");
    await s.end();
    expect(mine()).toEqual([]);
  });

  it("two runners' environments in one process (the local Invoke stand-in: one per tenant) never make the same cgroup, nor drop each other's", async () => {
    const before = new Set(mine());
    const a = sandboxCgroups({ log: () => {} }).make(64, 10);
    const b = sandboxCgroups({ log: () => {} }).make(64, 10);
    try {
      expect(a).not.toBeNull();
      expect(b).not.toBeNull(); // before: both were "-1"; the second's mkdir met the first's and it ran without a cgroup
      const made = mine().filter((n) => !before.has(n));
      expect(made).toHaveLength(2); // before: the second's failed make dropped the first's cgroup, killing what ran in it
    } finally {
      await a?.remove();
      await b?.remove();
    }
    expect(mine().filter((n) => !before.has(n))).toEqual([]);
  });

  it("no cgroup is left after the runs, in any hierarchy", async () => {
    await Promise.all(Array.from({ length: 5 }, () => run("true")));
    for (const dir of [where.memory, where.pids]) if (dir) expect(mine(dir)).toEqual([]);
  });
});

describe("where no cgroup is writable", () => {
  it("the place is none, with the reason", () => {
    expect(findCgroupPlace("", "")).toEqual({ none: "no cgroup file system is mounted" });
    // cgroup v2 with its controllers elsewhere, and no v1 memory hierarchy: none
    const mountinfo = "40 30 0:37 / /nonexistent-cgroup rw,relatime - cgroup2 cgroup2 rw";
    expect(findCgroupPlace("0::/\n", mountinfo)).toHaveProperty("none");
  });

  it("sandboxes run as before, without a cgroup, and the runner says so once", async () => {
    const lines: string[] = [];
    const cgroups = sandboxCgroups({ find: () => ({ none: "test: none writable" }), log: (l) => lines.push(l) });
    const root = mkdtempSync(join(tmpdir(), "toolshed-nocg-"));
    chmodSync(root, 0o711);
    const tree = join(root, "tree");
    mkdirSync(tree, { mode: 0o777 });
    chmodSync(tree, 0o777);
    try {
      const sandbox = bwrapSandbox({ stateDir: join(root, "state"), cgroups });
      for (let i = 0; i < 2; i++) {
        const r = await sandbox.run({ tree, cwd: "", command: "true", env: {}, network: false, limits: DEFAULT_LIMITS, timeoutMs: 10_000, onStdout: () => {}, onStderr: () => {} });
        expect(r.exitCode).toBe(0);
        expect(r.memory).toBeUndefined();
      }
      expect(lines).toEqual([expect.stringMatching(/^cgroups: test: none writable; sandboxes run without a memory and process bound per sandbox/)]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("the runner's own cgroup", () => {
  it("is read per hierarchy from /proc/self/cgroup and the mounts", () => {
    const own = ownPaths("12:pids:/a\n4:memory:/process_api/x\n3:cpu,cpuacct:/\n0::/user.slice/r.scope\n");
    expect(Object.fromEntries(own)).toEqual({ pids: "/a", memory: "/process_api/x", cpu: "/", cpuacct: "/", "": "/user.slice/r.scope" });
    const mounts = mountsOf(["34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory", "40 30 0:37 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw", "41 30 0:38 /sub /x rw - cgroup cgroup rw,pids"].join("\n"));
    expect(mounts).toEqual([{ dir: "/sys/fs/cgroup/memory", v2: false, controllers: ["rw", "memory"] }, { dir: "/sys/fs/cgroup", v2: true, controllers: [] }]);
  });
});
