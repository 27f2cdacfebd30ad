/**
 * The process sandbox (AWS Lambda, where bubblewrap cannot start), against real processes.
 * The handler runs as root here, so commands run as a dedicated uid, as they run as the
 * function's own user on Lambda; the reap finds them by uid either way.
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imageSandbox } from "../../../infra/container/handler.js";
import { processSandbox, processesOf, reap, type ProcessSandboxOptions } from "../../../infra/container/sandbox-process.js";
import { DEFAULT_LIMITS } from "../../../infra/container/sandbox.js";
import { setup } from "./helpers.js";

const UID = 64123; // used by nothing else on the machine, so the reap only meets our processes
const ids = { uid: UID, gid: UID };
const scratch = mkdtempSync(join(tmpdir(), "toolshed-scratch-")); // stands in for Lambda's /tmp
const FAKE_SECRET = "FAKE-SECRET-789";

function make(extra: Partial<ProcessSandboxOptions> = {}, tenant = "t1", workspace = "w1") {
  const root = mkdtempSync(join(tmpdir(), "toolshed-proc-"));
  const sandbox = processSandbox({
    stateDir: join(root, "sandbox"),
    egress: "none",
    runAs: ids,
    scratchDirs: [scratch],
    keep: [join(scratch, "handler-own")],
    workspace: { link: join(root, "workspace"), path: join(root, "workspace") },
    ...extra,
  });
  const s = setup({ root, sandbox }, tenant, workspace);
  const cleanup = async () => {
    await s.cleanup();
    rmSync(root, { recursive: true, force: true });
  };
  return { ...s, root, cleanup, linkPath: join(root, "workspace") };
}

const pgrep = (pattern: string): string => {
  try {
    return execFileSync("pgrep", ["-af", pattern]).toString();
  } catch {
    return "";
  }
};

const t = make();
let server: Server;
let port = 0;

beforeAll(async () => {
  process.env.AWS_SECRET_ACCESS_KEY = FAKE_SECRET;
  chmodSync(scratch, 0o1777); // like /tmp
  mkdirSync(join(scratch, "handler-own"), { recursive: true });
  writeFileSync(join(scratch, "handler-own", "keep.txt"), "kept\n");
  server = createServer((s) => {
    s.on("error", () => {});
    s.end("hello from the host\n");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  delete process.env.AWS_SECRET_ACCESS_KEY;
  server.close();
  await t.cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

describe("process sandbox: commands", () => {
  it("runs a command that edits, creates and deletes files, in the workspace path, and writes the changes back", async () => {
    await t.write("a.txt", "one\n");
    await t.write("old.txt", "bye\n");
    await t.write("src/keep.txt", "k\n");
    const r = await t.run("pwd; id -u; sed -i s/one/two/ a.txt && echo new > b.txt && rm old.txt && echo done", { cwd: "" });
    expect(r.exit_code).toBe(0);
    expect(r.stdout).toBe(`${t.linkPath}\n${UID}\ndone\n`);
    expect(r.files_changed).toEqual(["a.txt", "b.txt"]);
    expect(r.files_deleted).toEqual(["old.txt"]);
    expect(await t.read("a.txt")).toBe("two\n");
    expect(await t.read("b.txt")).toBe("new\n");
    expect(await t.read("old.txt")).toBeNull();
    const sub = await t.run("pwd; cat keep.txt", { cwd: "src" });
    expect(sub.stdout).toBe(`${t.linkPath}/src\nk\n`);
  });

  it("gives the command an empty environment: no credentials, only the call's variables", async () => {
    expect(process.env.AWS_SECRET_ACCESS_KEY).toBe(FAKE_SECRET); // control: the handler has it
    const r = await t.run("env | sort", { env: { MY_VAR: "x" } });
    expect(r.stdout).not.toContain(FAKE_SECRET);
    expect(r.stdout).not.toContain("AWS_");
    const names = r.stdout.trim().split("\n").map((l) => l.split("=")[0]);
    const allowed = new Set(["HOME", "LANG", "MY_VAR", "OLDPWD", "PATH", "PWD", "SHLVL", "TERM", "TMPDIR", "USER", "_"]);
    expect(names.filter((n) => !allowed.has(n!))).toEqual([]);
    expect(r.stdout).toContain("MY_VAR=x");
  });

  it("a session's shell: its state is saved outside the tree and restored in the next run (cwd, exports, functions)", async () => {
    const first = await t.run("mkdir -p sh/in && cd sh/in && export KEPT='a b' && f() { echo \"f:$KEPT\"; }", { shell: { keep: "all" } });
    expect(first.shell).toEqual({ state: { cwd: "sh/in", env: { KEPT: "a b" }, functions: expect.stringContaining("f ()") }, notes: [] });
    expect(await t.paths()).not.toContainEqual(expect.stringMatching(/^sh-|\/(cwd|env|base|functions|root)$/));
    const next = await t.run("pwd; f", { shell: { keep: "all", state: first.shell!.state } });
    expect(next.stdout).toBe(`${t.linkPath}/sh/in\nf:a b\n`);
  });

  it("a session's shell that ends outside the workspace: the root is saved, and the note says the next command starts there", async () => {
    const out = await t.run("cd /tmp", { shell: { keep: "cwd" } });
    expect(out.shell?.state).toEqual({ cwd: "" });
    expect(out.shell?.notes).toEqual([expect.stringMatching(/working directory \S+ is outside the workspace and is not kept; the next command starts in the workspace root/)]);
  });

  it("runs python3 and node programs fed on stdin, as run_code sends them", async () => {
    const py = await t.run("python3 - a b", { stdin: "import sys; print('py', sys.argv[1:], 'é')" });
    expect(py.stdout).toBe("py ['a', 'b'] é\n");
    const js = await t.run("node - x", { stdin: "console.log('node', process.argv.slice(2).join(','))" });
    expect(js.stdout).toBe("node x\n");
  });

  it("runs a non-zero exit and a timeout like the bubblewrap sandbox", async () => {
    const fail = await t.run("echo out; echo err >&2; exit 3");
    expect(fail.exit_code).toBe(3);
    expect(fail.stderr).toBe("err\n");
    const slow = await t.run("echo started; touch made.txt; sleep 30", { timeout_ms: 1000 });
    expect(slow.timed_out).toBe(true);
    expect(slow.stdout).toBe("started\n");
    expect(slow.discarded).toEqual(["made.txt"]);
    expect(await t.read("made.txt")).toBeNull();
  });
});

describe("process sandbox: network is the host's, and a call it cannot honour is refused", () => {
  it("egress none: a call that asks for network is refused, nothing runs", async () => {
    await expect(t.run("echo hi > ran.txt", { network: true })).rejects.toMatchObject({ code: "UNAVAILABLE", message: expect.stringContaining("no egress") });
    expect(await t.read("ran.txt")).toBeNull();
  });

  it("egress open: a call without network is refused (never run with network it must not have); one with network runs and connects", async () => {
    const open = make({ egress: "open" });
    try {
      await expect(open.run(`echo hi > ran.txt`)).rejects.toMatchObject({ code: "UNAVAILABLE", message: expect.stringContaining("cut the network") });
      expect(await open.read("ran.txt")).toBeNull();
      const r = await open.run(`exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3`, { network: true });
      expect(r.stdout).toBe("hello from the host\n");
    } finally {
      await open.cleanup();
    }
  });
});

describe("process sandbox: limits and leftovers", () => {
  it("a fork bomb is bounded and the call returns", async () => {
    const started = Date.now();
    const r = await t.run(":(){ :|:& };:; sleep 2; ulimit -u", { timeout_ms: 6000, limits: { processes: 64 } });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(r.output).toMatch(/Resource temporarily unavailable|retry/);
    expect(await processesOf(UID, new Set())).toEqual([]);
  });

  it("cannot allocate 4 GB or write a 2 GB file", async () => {
    const mem = await t.run("python3 -c 'b = bytearray(4 * 1024**3); print(\"allocated\")' 2>&1");
    expect(mem.stdout).toContain("MemoryError");
    const big = await t.run("head -c 2G /dev/zero > big; echo rc=$?; stat -c %s big; rm -f big", { timeout_ms: 30_000 });
    expect(big.stdout).toContain("rc=153"); // 128 + SIGXFSZ
    expect(big.stdout).toContain(String(1024 * 1024 * 1024));
  }, 60_000);

  it("runs WebAssembly (address space reserved, not written) and volunteers for the OOM killer", async () => {
    const r = await t.run("node -e 'new WebAssembly.Memory({ initial: 16 }); console.log(\"wasm ok\")'; cat /proc/self/oom_score_adj");
    expect(r.stdout).toBe("wasm ok\n1000\n");
  });

  it("`sleep &`, setsid and double-forked processes are dead when the call returns", async () => {
    const r = await t.run("sleep 887654 & setsid nohup sleep 887655 > /dev/null 2>&1 & (sleep 887656 &) ; disown -a; echo started");
    expect(r.stdout).toBe("started\n");
    expect(r.duration_ms).toBeLessThan(5000);
    expect(pgrep("sleep 88765[456]")).toBe("");
    expect(await processesOf(UID, new Set())).toEqual([]);
  });

  it("a process whose first thread ended (a zombie leader) while another thread runs is dead when the call returns", async () => {
    // pthread_exit in the main thread: /proc/<pid>/status says Z, yet the process runs on in its other thread.
    const py = "import threading, time, ctypes\nthreading.Thread(target=lambda: time.sleep(887657)).start()\ntime.sleep(0.1)\nctypes.CDLL(None).pthread_exit(None)\n";
    const r = await t.run(`printf '${py}' > /tmp/z.py; setsid python3 /tmp/z.py > /dev/null 2>&1 & sleep 1; grep State /proc/$!/status; ls /proc/$!/task | wc -l`);
    expect(r.stdout).toBe("State:\tZ (zombie)\n2\n"); // control: the leader is a zombie, its thread is not
    expect(r.duration_ms).toBeLessThan(5000);
    // A zombie leader's command line reads empty: look for any thread of the uid still alive.
    const threads = readdirSync("/proc").filter((n) => /^\d+$/.test(n)).flatMap((n) => {
      try {
        return readdirSync(`/proc/${n}/task`).filter((k) => readFileSync(`/proc/${n}/task/${k}/status`, "utf8").match(/^Uid:\s+(\d+)/m)?.[1] === String(UID) && !/^State:\s+Z/m.test(readFileSync(`/proc/${n}/task/${k}/status`, "utf8")));
      } catch {
        return [];
      }
    });
    expect(threads).toEqual([]);
    expect(await processesOf(UID, new Set())).toEqual([]);
  });

  it("nothing the command leaves in HOME, TMPDIR or the scratch directories reaches the next call", async () => {
    const first = await t.run(`echo a > "$HOME/h"; echo b > "$TMPDIR/t"; echo c > ${scratch}/left; mkdir -p ${scratch}/d; echo e > ${scratch}/$'bad\\xff'; mkdir ${scratch}/$'\\xfe'; echo $HOME`);
    const home = first.stdout.trim();
    expect(existsSync(home)).toBe(false);
    expect(readdirSync(scratch).sort()).toEqual(["handler-own"]);
    const next = await t.run(`ls -a "$HOME"; cat ${scratch}/left 2>&1; cat ${scratch}/handler-own/keep.txt`);
    expect(next.stdout).not.toContain("h\n");
    expect(next.stdout).toContain("No such file");
    expect(next.stdout).toContain("kept\n"); // the handler's own entry stays
  });

  it("git works out of the box: the request's identity, main, .toolshed/ ignored", async () => {
    const r = await t.run("mkdir g && cd g && git init -q && mkdir -p .toolshed/output && echo log > .toolshed/output/x.log && echo a > a.txt && git add -A && git commit -qm x && git log --format=%an && git branch --show-current && git ls-files", { git: { name: "Proc Agent", email: "p@example.com" } });
    expect(r.stdout, r.output).toBe("Proc Agent\nmain\na.txt\n");
    await t.run("rm -rf g");
  });

  it("symlinks made by the command are kept as links, never uploaded as files", async () => {
    const r = await t.run("ln -s /etc/passwd passwd-link; echo ok");
    expect(r.skipped).toEqual([]);
    expect(await t.read("passwd-link")).toBeNull();
    expect((await t.run("readlink passwd-link")).stdout).toBe("/etc/passwd\n");
  });
});

describe("process sandbox: the host is the tenant boundary", () => {
  it("refuses an invocation without a tenant (a function without PER_TENANT isolation)", async () => {
    const r = await t.handler(t.req("echo hi > ran.txt"));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatchObject({ code: "UNAVAILABLE", details: { reason: "tenant_isolation_missing" } });
    expect(await t.read("ran.txt")).toBeNull();
  });

  it("keeps one workspace's files at a time: a run in another workspace leaves none of the first's on disk", async () => {
    // On Lambda the command runs as the handler's user and could read every tree on disk.
    const grepDisk = () => {
      try {
        return execFileSync("grep", ["-rl", "w1 secret", t.root]).toString().trim().split("\n").filter(Boolean);
      } catch {
        return []; // grep exits 1 when nothing matches
      }
    };
    await t.write("only-in-w1.txt", "w1 secret\n");
    expect((await t.run("cat only-in-w1.txt")).stdout).toBe("w1 secret\n");
    expect(grepDisk()).toHaveLength(1); // control: the w1 slot holds it
    const r = await t.run("echo in-w2", { workspace: "w2" });
    expect(r.stdout).toBe("in-w2\n");
    expect(grepDisk()).toEqual([]);
  });
});

describe("reap", () => {
  it("kills every process of the uid, daemonized ones included, and spares the excluded", async () => {
    // detached: a new session, as `setsid` would make it
    const spawnAs = (arg: string) => spawn("sleep", [arg], { uid: UID, gid: UID, detached: true, stdio: "ignore" });
    const a = spawnAs("776655");
    const b = spawnAs("776656");
    await new Promise((r) => setTimeout(r, 200));
    expect(pgrep("sleep 77665[56]").trim().split("\n")).toHaveLength(2);
    const spared = new Set([b.pid!]);
    await reap(UID, spared);
    expect(pgrep("sleep 776655")).toBe("");
    expect(pgrep("sleep 776656")).not.toBe(""); // excluded: alive
    await reap(UID, new Set());
    expect(pgrep("sleep 776656")).toBe("");
    expect(a.pid).toBeGreaterThan(0);
  });

  it("a closed gate (the run was not ours, or its workspace failed): nothing starts, the run ends as killed", async () => {
    const sandbox = processSandbox({ stateDir: join(t.root, "gate-state"), egress: "none", runAs: ids });
    const tree = mkdtempSync(join(tmpdir(), "toolshed-gate-"));
    chmodSync(tree, 0o777);
    const spec = { tree, cwd: "", command: "echo ran > ran.txt", env: {}, network: false, limits: DEFAULT_LIMITS, timeoutMs: 10_000, onStdout: () => {}, onStderr: () => {} };
    expect(await sandbox.run({ ...spec, gate: Promise.resolve(false) })).toMatchObject({ exitCode: null, killed: true, timedOut: false });
    expect(existsSync(join(tree, "ran.txt"))).toBe(false);
    expect(await sandbox.run({ ...spec, gate: Promise.resolve(true) })).toMatchObject({ exitCode: 0, killed: false });
    expect(existsSync(join(tree, "ran.txt"))).toBe(true);
    rmSync(tree, { recursive: true, force: true });
  });

  it("never runs commands as root", () => {
    expect(() => processSandbox({ stateDir: "/tmp/x", egress: "none", runAs: { uid: 0, gid: 0 } })).toThrow(/never runs commands as root/);
  });
});

describe("imageSandbox: which sandbox the image uses", () => {
  it("bubblewrap where it can start, else the process sandbox with the egress setting", async () => {
    const root = mkdtempSync(join(tmpdir(), "toolshed-image-"));
    try {
      const withBwrap = await imageSandbox(root, {});
      expect(withBwrap.hostIsolated).toBe(false);
      const spec = (network: boolean) => ({
        tree: root, cwd: "", command: "true", env: {}, network, limits: DEFAULT_LIMITS, timeoutMs: 5000, onStdout: () => {}, onStderr: () => {},
      });
      const noEgress = await imageSandbox(root, { TOOLSHED_RUNNER_EGRESS: "none" }, "/nonexistent/bwrap");
      expect(noEgress.hostIsolated).toBe(true);
      await expect(noEgress.run(spec(true))).rejects.toMatchObject({ details: { reason: "no_egress" } });
      // Unset means the host may allow egress: calls without network are refused.
      const unknown = await imageSandbox(root, {}, "/nonexistent/bwrap");
      await expect(unknown.run(spec(false))).rejects.toMatchObject({ details: { reason: "network_not_isolated" } });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
