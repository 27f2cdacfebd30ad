/**
 * A cgroup per execution environment (environment-cgroup.ts), its sandboxes' cgroups inside it: on a
 * runner host shared by tenants the CPU is shared equally between environments whatever the number of
 * their sandboxes (real bwrap, real cgroups: the CPU time the kernel accounted to each busy process
 * over one common second and a half); its name is the runner's and random bits, never a tenant's; it goes
 * when the environment ends, and a crashed runner's are swept with what they hold. Skipped, naming why,
 * only on a host where the runner can make no cgroup (or has no writable cpu controller, for the share).
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { findCgroupPlace, type CgroupPlace } from "../../../infra/container/cgroup-place.js";
import { bwrapSandbox, DEFAULT_LIMITS, type Sandbox } from "../../../infra/container/sandbox.js";
import { sandboxCgroups } from "../../../infra/container/sandbox-cgroup.js";
import { setup } from "./helpers.js";

const place = findCgroupPlace();
const none = "none" in place ? place.none : null;
const noCpu = none ?? ((place as CgroupPlace).cpu === null ? "no writable cpu controller" : null);
if (none) console.warn(`environment-cgroup tests skipped: this host has no writable cgroup (${none})`);
else if (noCpu) console.warn(`the CPU share test skipped: ${noCpu}`);

/** One busy process: says "ready", waits for /workspace/go, spins for 1.5 s of wall time, then prints the CPU time the kernel gave it meanwhile. */
const BUSY = `python3 -c '
import os, time
print("ready", flush=True)
while not os.path.exists("/workspace/go"): time.sleep(0.005)
t0 = time.process_time(); end = time.monotonic() + 1.5
while time.monotonic() < end: pass
print("cpu", time.process_time() - t0)'`;

describe.skipIf(none !== null)("a cgroup per execution environment", () => {
  const where = place as CgroupPlace;
  const hierarchies = [...new Set([where.memory, where.pids, where.cpu])].filter((d) => d !== null);
  const root = mkdtempSync(join(tmpdir(), "toolshed-envcg-"));
  chmodSync(root, 0o711);
  const ns = /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))![1]!;
  /** This process's environments' cgroups (cgroup-dirs.ts: named after the runner's pid). */
  const environments = () => readdirSync(where.memory).filter((n) => n.startsWith(`toolshed-${ns}-${process.pid}-`) && /-env-[0-9a-f]{16}$/.test(n));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** A tree of its own (a run's /workspace) for `command` in `sandbox`; resolves to its output. */
  function start(sandbox: Sandbox, name: string, command: string, onOut: (text: string) => void = () => {}) {
    const tree = join(root, name);
    mkdirSync(tree, { mode: 0o777 });
    chmodSync(tree, 0o777);
    let out = "";
    const took = (c: Buffer) => ((out += c.toString()), onOut(out));
    const done = sandbox.run({ tree, cwd: "", command, env: {}, network: false, limits: DEFAULT_LIMITS, timeoutMs: 60_000, onStdout: took, onStderr: took }).then((r) => ({ ...r, output: out }));
    return { tree, done };
  }

  it.skipIf(noCpu !== null)("CPU: tenant A's 4 busy sandboxes and tenant B's 1 share it equally: B's one process gets far more than each of A's", { timeout: 120_000 }, async () => {
    const [a, b] = [bwrapSandbox({ stateDir: join(root, "state-a") }), bwrapSandbox({ stateDir: join(root, "state-b") })];
    try {
      let ready = 0;
      const seen = new Set<string>();
      const onOut = (name: string) => (out: string) => {
        if (out.includes("ready") && !seen.has(name)) (seen.add(name), ready++);
      };
      const runs = [...["a1", "a2", "a3", "a4"].map((n) => start(a, n, BUSY, onOut(n))), start(b, "b", BUSY, onOut("b"))];
      // Every process waits at its start line: then the same period for all, whatever the sandboxes' start took.
      await vi.waitFor(() => expect(ready).toBe(5), { timeout: 60_000, interval: 20 });
      for (const r of runs) writeFileSync(join(r.tree, "go"), "");
      const cpu = await Promise.all(
        runs.map(async (r) => {
          const { exitCode, output } = await r.done;
          expect(exitCode, output).toBe(0);
          return Number(/^cpu (\S+)$/m.exec(output)![1]);
        }),
      );
      const [ofA, ofB] = [cpu.slice(0, 4), cpu[4]!];
      const meanA = ofA.reduce((x, y) => x + y, 0) / 4;
      console.log(`CPU s over 1.5 s: A's four ${ofA.map((x) => x.toFixed(3)).join(", ")}; B's one ${ofB.toFixed(3)}; B / mean of A's = ${(ofB / meanA).toFixed(2)}`);
      // Equal shares: ~4:1 (one per process, before: ~1:1).
      expect(ofB / meanA).toBeGreaterThan(2);
      for (const x of ofA) expect(ofB).toBeGreaterThan(x);
    } finally {
      await a.close?.();
      await b.close?.();
    }
  });

  it("its name is the runner's and random bits, no tenant's; it holds its sandboxes' cgroups in every hierarchy, with the CPU weight; gone when the environment ends", { timeout: 60_000 }, async () => {
    const tenant = "tenantw8q3z";
    const t = setup({}, tenant, "wsk2v7m");
    const before = new Set(environments());
    let held: { name: string; sandboxes: string[][]; weight: string | null } | null = null;
    const r = t.run("sleep 0.5");
    await vi.waitFor(() => {
      const [name, ...more] = environments().filter((n) => !before.has(n));
      expect(more).toEqual([]);
      const sandboxes = hierarchies.map((d) => (existsSync(join(d, name!)) ? readdirSync(join(d, name!)).filter((n) => n.startsWith("toolshed-")) : []));
      expect(sandboxes.every((s) => s.length === 1)).toBe(true);
      const weight = where.cpu ? readFileSync(join(where.cpu, name!, where.version === 2 ? "cpu.weight" : "cpu.shares"), "utf8").trim() : null;
      held = { name: name!, sandboxes, weight };
    }, { timeout: 30_000, interval: 10 });
    expect((await r).exit_code).toBe(0);
    const { name, weight } = held!;
    expect(name).toMatch(new RegExp(`^toolshed-${ns}-${process.pid}-\\d+-env-[0-9a-f]{16}$`)); // the runner's numbers and 64 random bits: nothing of the tenant, no count
    expect(name).not.toContain(tenant);
    if (where.cpu) expect(weight).toBe(where.version === 2 ? "800" : "8192"); // eight processes' worth each, the same for all
    for (const d of hierarchies) expect(existsSync(join(d, name))).toBe(true); // its sandboxes' are gone; it stays with its environment
    await t.cleanup(); // the environment ends (its handler closes)
    for (const d of hierarchies) expect(existsSync(join(d, name))).toBe(false);
  });

  it("a crashed runner's environments are swept at the next start with the sandboxes' cgroups inside; a running runner's are kept", async () => {
    const pid1Start = readFileSync("/proc/1/stat", "utf8").split(") ")[1]!.split(" ")[19];
    const dead = `toolshed-${ns}-999999999-1-env-1`; // no such pid
    const live = `toolshed-${ns}-1-${pid1Start}-env-1`; // pid 1, running
    const elsewhere = `toolshed-1-999999999-1-env-1`; // another pid namespace's: not this runner's to judge
    for (const d of hierarchies) for (const n of [dead, live, elsewhere]) mkdirSync(join(d, n, `toolshed-${ns}-999999999-1-2`), { recursive: true });
    const lines: string[] = [];
    const cgroups = sandboxCgroups({ log: (l) => lines.push(l) });
    const cg = cgroups.make(64, 10)!;
    await cg.remove();
    await cgroups.close();
    for (const d of hierarchies) {
      await vi.waitFor(() => expect(existsSync(join(d, dead))).toBe(false));
      for (const n of [live, elsewhere]) {
        expect(existsSync(join(d, n))).toBe(true);
        rmdirSync(join(d, n, `toolshed-${ns}-999999999-1-2`));
        rmdirSync(join(d, n));
      }
    }
    // (another test process starting meanwhile may have swept them first: the count is not asserted)
    expect(lines).toEqual([expect.stringMatching(/^cgroups: v[12], one per sandbox under .*, inside its execution environment's; /)]);
  });

  it("a host without a writable cpu controller: its sandboxes run as before, under their memory bound, and the runner says so once", { timeout: 60_000 }, async () => {
    const lines: string[] = [];
    const sandbox = bwrapSandbox({ stateDir: join(root, "state-nocpu"), cgroups: sandboxCgroups({ find: () => ({ ...where, cpu: null }), log: (l) => lines.push(l) }) });
    try {
      for (const n of ["nocpu-1", "nocpu-2"]) {
        const r = await start(sandbox, n, "echo ok").done;
        expect(r).toMatchObject({ exitCode: 0, output: "ok\n", memory: { limitMb: DEFAULT_LIMITS.sandbox_memory_mb, oomKills: 0 } });
      }
      expect(lines).toEqual([expect.stringMatching(/^cgroups: v[12], one per sandbox under .*; no writable cpu controller, so CPU is not weighed per execution environment$/)]);
      if (where.cpu && where.cpu !== where.memory) expect(readdirSync(where.cpu).filter((n) => n.startsWith(`toolshed-${ns}-${process.pid}-`))).toEqual([]);
    } finally {
      await sandbox.close?.();
    }
  });
});
