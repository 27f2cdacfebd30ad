/**
 * The seccomp filter of the bubblewrap sandbox (infra/container/seccomp.ts). Each test has a
 * control that shows it can fail: the same system call outside the sandbox and in the same
 * sandbox without the filter answers something other than EPERM; a tiny BPF interpreter
 * runs the program for both architectures.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bwrapSandbox, DEFAULT_LIMITS } from "../../../infra/container/sandbox.js";
import type { Sandbox } from "../../../infra/container/sandbox-spec.js";
import {
  AUDIT_ARCH, deniedSyscalls, EOPNOTSUPP, EPERM, FALLOCATE, hostSeccompProgram, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS, seccompProgram, type SeccompArch,
} from "../../../infra/container/seccomp.js";
import { setup } from "./helpers.js";

// ---------------------------------------------------------------------------------------------
// The program itself, for both architectures.

/** Classic BPF over seccomp_data, as much of it as the program uses. Returns the action. */
function runBpf(prog: Buffer, arch: number, nr: number, args: number[] = []): number {
  const data = Buffer.alloc(64); // struct seccomp_data: nr, arch, instruction_pointer, args[6]
  data.writeUInt32LE(nr >>> 0, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  args.forEach((v, i) => data.writeUInt32LE(v >>> 0, 16 + 8 * i)); // each arg's low 32 bits
  const n = prog.length / 8;
  let a = 0;
  for (let pc = 0; pc < n; pc++) {
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) a = data.readUInt32LE(k); // ld [k]
    else if (code === 0x15) pc += a === k ? jt : jf; // jeq #k
    else if (code === 0x35) pc += a >= k ? jt : jf; // jge #k
    else if (code === 0x54) a = (a & k) >>> 0; // and #k
    else if (code === 0x06) return k; // ret #k
    else throw new Error(`unknown opcode 0x${code.toString(16)} at ${pc}`);
    if (pc >= n) throw new Error(`jump past the end at ${pc}`);
  }
  throw new Error("fell off the end of the program");
}

const ERRNO_EPERM = (SECCOMP_RET_ERRNO | EPERM) >>> 0;
/** Allowed calls on each architecture (kernel tables): read, write, execve, clone, clone3, ptrace, personality. */
const ALLOWED: Record<SeccompArch, Record<string, number>> = {
  x64: { read: 0, write: 1, execve: 59, clone: 56, clone3: 435, ptrace: 101, personality: 135 },
  arm64: { read: 63, write: 64, execve: 221, clone: 220, clone3: 435, ptrace: 117, personality: 92 },
};
const AUDIT_ARCH_I386 = 0x40000003;
const AUDIT_ARCH_ARM = 0x40000028;

describe.each(["x64", "arm64"] as const)("the program for %s", (arch) => {
  const prog = seccompProgram(arch);
  const other = arch === "x64" ? "arm64" : "x64";

  it("is whole instructions; first loads arch (offset 4); ends with a return", () => {
    expect(prog.length % 8).toBe(0);
    expect(prog.length / 8).toBeLessThan(4096); // BPF_MAXINSNS
    expect(prog.readUInt16LE(0)).toBe(0x20);
    expect(prog.readUInt32LE(4)).toBe(4);
    expect(prog.readUInt16LE(prog.length - 8)).toBe(0x06);
  });

  it("allows ordinary calls, denies the listed ones with EPERM, kills another architecture", () => {
    for (const [name, nr] of Object.entries(ALLOWED[arch])) expect([name, runBpf(prog, AUDIT_ARCH[arch], nr)]).toEqual([name, SECCOMP_RET_ALLOW]);
    const denied = deniedSyscalls(arch);
    expect(denied.size).toBeGreaterThan(40);
    for (const [name, nr] of denied) expect([name, runBpf(prog, AUDIT_ARCH[arch], nr)]).toEqual([name, ERRNO_EPERM]);
    // Every number from 0 to 1023 that is not denied is allowed: nothing else in between.
    const deniedNrs = new Set(denied.values());
    for (let nr = 0; nr < 1024; nr++) expect(runBpf(prog, AUDIT_ARCH[arch], nr)).toBe(deniedNrs.has(nr) ? ERRNO_EPERM : SECCOMP_RET_ALLOW);
    // Another ABI's numbers mean other calls: the process is killed, whatever the number.
    for (const wrong of [AUDIT_ARCH[other], AUDIT_ARCH_I386, AUDIT_ARCH_ARM, 0]) {
      for (const nr of [0, 1, ALLOWED[arch].read!, denied.get("keyctl")!]) expect(runBpf(prog, wrong, nr)).toBe(SECCOMP_RET_KILL_PROCESS);
    }
  });

  it("uses this architecture's numbers, and leaves out calls it does not have", () => {
    const mine = deniedSyscalls(arch);
    const theirs = deniedSyscalls(other);
    expect(mine.get("keyctl")).toBe(arch === "x64" ? 250 : 219);
    expect(mine.get("io_uring_setup")).toBe(425);
    expect(mine.has("uselib")).toBe(arch === "x64");
    expect(mine.has("iopl")).toBe(arch === "x64");
    // Control: the same name has another number on the other architecture.
    expect(theirs.get("keyctl")).not.toBe(mine.get("keyctl"));
    for (const name of ["personality", "ptrace", "clone", "clone3", "execve"]) expect(mine.has(name)).toBe(false);
  });

  it("fallocate: keeping the size without punching a hole is EOPNOTSUPP; every other mode is allowed", () => {
    const nr = FALLOCATE[arch];
    const mode = (m: number) => runBpf(prog, AUDIT_ARCH[arch], nr, [3, m]);
    // KEEP_SIZE, ZERO_RANGE | KEEP_SIZE, UNSHARE_RANGE | KEEP_SIZE: blocks past the end, the size unchanged.
    for (const m of [0x01, 0x11, 0x41]) expect([m, mode(m)]).toEqual([m, (SECCOMP_RET_ERRNO | EOPNOTSUPP) >>> 0]);
    // Plain, PUNCH_HOLE | KEEP_SIZE (frees), COLLAPSE_RANGE, ZERO_RANGE, INSERT_RANGE: the size tells.
    for (const m of [0x00, 0x03, 0x08, 0x10, 0x20]) expect([m, mode(m)]).toEqual([m, SECCOMP_RET_ALLOW]);
    // Control: the same mode on another call is not looked at.
    expect(runBpf(prog, AUDIT_ARCH[arch], ALLOWED[arch].write!, [3, 0x01])).toBe(SECCOMP_RET_ALLOW);
  });

  it("x32 calls are refused on x86_64 and nr -1 passes (a tracer's skipped call)", () => {
    const x32Getpid = 0x40000000 | 39;
    expect(runBpf(prog, AUDIT_ARCH[arch], x32Getpid)).toBe(arch === "x64" ? ERRNO_EPERM : SECCOMP_RET_ALLOW);
    expect(runBpf(prog, AUDIT_ARCH[arch], 0x40000000 | 250)).toBe(arch === "x64" ? ERRNO_EPERM : SECCOMP_RET_ALLOW);
    expect(runBpf(prog, AUDIT_ARCH[arch], -1)).toBe(SECCOMP_RET_ALLOW);
  });
});

it("the host's program is the one for process.arch; an unknown architecture has none", () => {
  const host = hostSeccompProgram();
  if (process.arch === "x64" || process.arch === "arm64") expect(host?.equals(seccompProgram(process.arch))).toBe(true);
  else expect(host).toBeNull();
  expect(() => seccompProgram("ia32" as SeccompArch)).toThrow(/no seccomp filter/);
});

// ---------------------------------------------------------------------------------------------
// The filter in the real sandbox.

const hostArch = process.arch === "x64" || process.arch === "arm64" ? process.arch : null;

/** Calls each system call and prints name → errno (0: success) as JSON. No single quotes. */
const PROBE = `
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, nr, args in json.loads(sys.argv[1]):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    out[name] = ctypes.get_errno() if r == -1 else 0
print(json.dumps(out))
`;

/**
 * Denied calls, with arguments for which the kernel itself answers something other than
 * EPERM to an unprivileged process (checked by the controls below), so EPERM can only
 * come from the filter.
 */
const PROBES: [string, number[]][] = [
  ["keyctl", [0x7fff]], // no such operation: EOPNOTSUPP
  ["add_key", [0, 0, 0, 0, 0]], // NULL type: EFAULT
  ["bpf", [9999, 0, 0]], // no such command: EINVAL
  ["perf_event_open", [0, 0, -1, -1, 0]], // NULL attr: EFAULT
  ["io_uring_setup", [0, 0]], // NULL params: EFAULT
  ["io_uring_enter", [-1, 0, 0, 0, 0, 0]], // EBADF
  ["userfaultfd", [1]], // UFFD_USER_MODE_ONLY: allowed unprivileged, a descriptor
  ["mount", [0, 0, 0, 0, 0]], // NULL target: EFAULT
  ["unshare", [0]], // no flags: a no-op, 0
  ["setns", [-1, 0]], // EBADF
  ["open_tree", [-1, 0, 0]], // EFAULT
  ["process_madvise", [-1, 0, 0, 0, 0]], // EBADF
  ["kcmp", [0, 0, 99, 0, 0]], // ESRCH
  ["set_mempolicy", [0, 0, 0]], // MPOL_DEFAULT: 0
];
const ENOSYS = 38;
const ALLOWED_GETPID: Record<SeccompArch, number> = { x64: 39, arm64: 172 };

function probeArgs(arch: SeccompArch): string {
  const denied = deniedSyscalls(arch);
  const calls: [string, number, number[]][] = PROBES.map(([name, args]) => [name, denied.get(name)!, args]);
  calls.push(["getpid", ALLOWED_GETPID[arch], []], ["nr_minus_1", -1, []]);
  if (arch === "x64") calls.push(["x32_getpid", 0x40000000 | 39, []]);
  return JSON.stringify(calls);
}
const probeCommand = (arch: SeccompArch) => `python3 -c '${PROBE}' '${probeArgs(arch)}'`;

/** i386 getpid through `int 0x80` from a 64-bit process: another audit arch in seccomp_data. */
const INT80 = `python3 -c '
import ctypes, mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(bytes([0xb8, 0x14, 0, 0, 0, 0xcd, 0x80, 0xc3]))  # mov eax, 20; int 0x80; ret
f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("int80", f())
'; echo rc=$?`;

describe.skipIf(!hostArch)("in the bubblewrap sandbox", () => {
  const arch = hostArch!;
  const t = setup({}, "tenant-sc", "ws-sc");
  // The control: the same sandbox without the filter, run directly.
  const root = mkdtempSync(join(tmpdir(), "toolshed-seccomp-"));
  chmodSync(root, 0o711);
  const unfiltered = bwrapSandbox({ stateDir: join(root, "nofilter"), seccomp: null });
  afterAll(async () => {
    await t.cleanup();
    rmSync(root, { recursive: true, force: true });
  });

  async function runIn(sandbox: Sandbox, command: string): Promise<{ stdout: string; stderr: string; exitCode: number | null }> {
    const tree = join(root, "tree");
    mkdirSync(tree, { recursive: true, mode: 0o755 });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const r = await sandbox.run({
      tree, cwd: "", command, env: {}, network: false, limits: DEFAULT_LIMITS, timeoutMs: 20_000,
      onStdout: (c) => out.push(c), onStderr: (c) => err.push(c),
    });
    return { stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(), exitCode: r.exitCode };
  }

  it("denied calls get EPERM inside; the same calls get other answers on the host and in the sandbox without the filter", async () => {
    const inside = await t.run(probeCommand(arch));
    expect(inside.stderr).toBe("");
    const got = JSON.parse(inside.stdout) as Record<string, number>;
    for (const [name] of PROBES) expect([name, got[name]]).toEqual([name, EPERM]);
    expect(got.getpid).toBe(0); // an allowed call succeeds
    expect(got.nr_minus_1).toBe(ENOSYS); // let through: the kernel's own answer
    if (arch === "x64") expect(got.x32_getpid).toBe(EPERM);

    // Control 1: directly on the host, outside any sandbox.
    const host = JSON.parse(execFileSync("python3", ["-c", PROBE, probeArgs(arch)]).toString()) as Record<string, number>;
    // Control 2: the identical sandbox without the filter (namespaces, no capabilities, same uid).
    const bare = await runIn(unfiltered, probeCommand(arch));
    expect(bare.stderr).toBe("");
    const plain = JSON.parse(bare.stdout) as Record<string, number>;
    for (const [name] of PROBES) {
      expect([name, host[name]]).not.toEqual([name, EPERM]);
      expect([name, plain[name]]).not.toEqual([name, EPERM]);
    }
    if (arch === "x64") expect(plain.x32_getpid).not.toBe(EPERM); // ENOSYS, or a pid with x32 enabled
    expect(plain.nr_minus_1).toBe(ENOSYS);
  });

  it("the filter is installed in the command (and absent in the control)", async () => {
    const cmd = "grep -E '^Seccomp(_filters)?:' /proc/self/status | tr -s '\\t ' ' '";
    const r = await t.run(cmd);
    expect(r.stdout).toMatch(/^Seccomp: 2\nSeccomp_filters: [1-9]/);
    expect((await runIn(unfiltered, cmd)).stdout).toMatch(/^Seccomp: 0\n/);
  });

  it.skipIf(arch !== "x64")("a 32-bit call (int 0x80) kills the process; without the filter it runs", async () => {
    // Control: unfiltered, the i386 getpid returns a pid; a kernel without ia32 emulation faults the
    // instruction itself (SIGSEGV: 139) before any system call is made, so no filter can see it there.
    const bare = await runIn(unfiltered, INT80);
    expect(bare.stdout).not.toContain("rc=159");
    expect(bare.stdout).toMatch(/int80 \d+\nrc=0|rc=139/);
    const ia32 = bare.stdout.includes("int80");
    const r = await t.run(INT80);
    expect(r.stdout).not.toContain("int80"); // never runs
    expect(r.stdout).toContain(ia32 ? "rc=159" : "rc=139"); // 128 + SIGSYS: the filter killed it (where the kernel would have run it)
  });

  it("ordinary work runs: python, node (WebAssembly, a worker, child processes, fs), git, ptrace, personality, java", async () => {
    await t.write(
      "probe.js",
      [
        'const { Worker } = require("node:worker_threads");',
        'const { execFileSync } = require("node:child_process");',
        'const fs = require("node:fs");',
        "const mem = new WebAssembly.Memory({ initial: 16 });",
        'const w = new Worker("require(\\"node:worker_threads\\").parentPort.postMessage(6 * 7)", { eval: true });',
        'w.on("message", async (v) => {',
        '  console.log("wasm", mem.buffer.byteLength, "worker", v, "child", execFileSync("sh", ["-c", "echo $$"]).toString().trim() > 0);',
        '  console.log("fs", (await fs.promises.readFile("probe.js", "utf8")).length > 0);',
        "  await w.terminate();",
        "});",
      ].join("\n"),
    );
    const script = [
      "python3 -c 'print(\"py\", sum(range(10)))'",
      "node probe.js",
      "cd /tmp && git init -q repo && cd repo && echo x > f && git add f && git -c user.email=a@b -c user.name=a commit -qm first && git log --oneline | wc -l | sed 's/^/git /'",
      "python3 -c 'import ctypes; print(\"ptrace\", ctypes.CDLL(None, use_errno=True).ptrace(0, 0, 0, 0))'",
      "if command -v strace >/dev/null; then strace -f -o /dev/null true && echo strace-ok; else echo strace-ok no-strace; fi",
      "setarch $(uname -m) -R true && echo personality-ok",
      "if command -v java >/dev/null; then java -version 2>&1 | head -1; else echo 'no-java: java is not installed, its check is skipped'; fi",
    ].join("; ");
    const r = await t.run(script);
    expect(r.stdout).toContain("py 45\n");
    expect(r.stdout).toContain(`wasm ${16 * 65536} worker 42 child true\n`);
    expect(r.stdout).toContain("fs true\n");
    expect(r.stdout).toContain("git 1\n");
    expect(r.stdout).toContain("ptrace 0\n");
    expect(r.stdout).toContain("strace-ok");
    expect(r.stdout).toContain("personality-ok\n");
    expect(r.stdout).toMatch(/no-java|version "/);
    if (r.stdout.includes("no-java")) console.log("seccomp test: java is not installed here; its check was skipped");
    expect(r.exit_code).toBe(0);
  });

  it("a program the kernel refuses makes the sandbox unavailable: it never runs without its filter", async () => {
    const broken = bwrapSandbox({ stateDir: join(root, "broken"), seccomp: Buffer.from([1, 2, 3]) });
    await expect(broken.check()).rejects.toMatchObject({ code: "UNAVAILABLE" });
    // Control: the real program passes the same probe.
    await expect(bwrapSandbox({ stateDir: join(root, "good") }).check()).resolves.toBeUndefined();
  });
});
