/**
 * Live sandboxes (issue #29), runner side: the real bwrap sandbox, the in-memory workspace of the
 * container tests, and an in-process LiveChannel (a queue) standing in for the API's coordinator.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LIVE_LIST_MAX } from "../../../lib/sync/live-types.js";
import { SUBSHELL } from "../../../infra/container/live-session.js";
import { hostPids, liveSetup, sandboxOf, toolEditsAndBackgroundWrites, until } from "./live-helpers.js";

const live = liveSetup();
const { t, startLive, inTree } = live;
afterAll(() => t.cleanup());

describe("live sandbox: one shell across commands", () => {
  it("keeps cwd, plain and exported variables, functions and aliases; captures the shell state after each command", async () => {
    const s = startLive();
    const a = await s.cmd("mkdir -p sub/deep && cd sub && X=plain && export Y=exported && f() { echo fn:$1; } && shopt -s expand_aliases && alias hi='echo hi'");
    expect(a.exit_code).toBe(0);
    const b = await s.cmd("pwd; echo $X $Y; f 1; hi; bash -c 'echo child:$X:$Y'", { shell: { keep: "all" } });
    expect(b.stdout).toBe("/workspace/sub\nplain exported\nfn:1\nhi\nchild::exported\n");
    expect(b.shell?.state.cwd).toBe("sub");
    expect(b.shell?.state.env).toEqual({ Y: "exported" });
    expect(b.shell?.state.functions).toContain("fn:");
    expect(b.sync.cache).toBe("warm");
    // working_dir wins for its command and then stays, as cd would
    const c = await s.cmd("pwd", { cwd: "sub/deep" });
    expect(c.stdout).toBe("/workspace/sub/deep\n");
    expect((await s.cmd("pwd")).stdout).toBe("/workspace/sub/deep\n");
    // stdin (run_code's program) from a file
    expect((await s.cmd("python3 -", { stdin: "print(6*7)\n" })).stdout).toBe("42\n");
    const e = await s.end();
    expect(e.reason).toBe("deleted");
    expect(e.lost_processes).toEqual([]);
  });

  it("a shell with noclobber set still saves its state after every command (the save overwrites its own files)", async () => {
    const s = startLive();
    expect((await s.cmd("set -o noclobber; mkdir -p one two; cd one; export V=1", { shell: { keep: "all" } })).shell?.state).toMatchObject({ cwd: "one", env: { V: "1" } });
    const b = await s.cmd("cd ../two; export V=2", { shell: { keep: "all" } });
    expect(b.shell?.state).toMatchObject({ cwd: "two", env: { V: "2" } });
    expect((await s.cmd("[[ -o noclobber ]] && echo still on")).stdout).toBe("still on\n");
    await s.end();
  });

  it("what background processes print between commands is shown with the next command, marked as theirs (the last 16 KiB of each stream)", async () => {
    const s = startLive();
    await s.cmd("(sleep 0.2; echo from-bg; echo bg-err >&2; head -c 20000 /dev/zero | tr '\\0' x >&2; echo >&2; touch printed.txt) &");
    await until(() => inTree("printed.txt"), "the background output");
    const r = await s.cmd("echo mine");
    expect(r.stdout).toBe("[toolshed: stdout of background processes since the last command:]\nfrom-bg\n[toolshed: end of background output]\nmine\n");
    expect(r.stderr).toMatch(/^\[toolshed: stderr of background processes since the last command \(its last 16384 bytes; 3624 before them not shown\):\]\nx+\n\[toolshed: end of background output\]\n$/);
    expect((await s.cmd("echo alone")).stdout).toBe("alone\n"); // shown once
    await s.end();
  });

  it("a command costs the shell no process of its own: the state's save between two commands forks nothing (builtins only)", async () => {
    // bwrap's pid namespace numbers the sandbox's processes in order: with no fork between them, the second `sh` is the next pid.
    const s = startLive();
    const pid = async () => Number((await s.cmd("sh -c 'echo $$'", { shell: { keep: "all" } })).stdout);
    const first = await pid();
    expect(await pid()).toBe(first + 1);
    // What it saves is still every exported variable, whatever IFS the command set (a command substitution split on it).
    const r = await s.cmd("export A='x y' B=$'two\\nlines'; IFS=,", { shell: { keep: "all" } });
    expect(r.shell?.state.env).toEqual({ A: "x y", B: "two\nlines" });
    await s.end();
  });

  it("restores the request's shell state in its first command (a handover keeps cwd and exported variables)", async () => {
    await t.write("proj/readme.txt", "r\n");
    const s = startLive();
    const r = await s.cmd("pwd; echo $TOKEN; greet", { shell: { keep: "all", state: { cwd: "proj", env: { TOKEN: "t0" }, functions: "greet () \n{ \n    echo hello\n}\n" } } });
    expect(r.stdout).toBe("/workspace/proj\nt0\nhello\n");
    await s.end();
  });

  it("says when a command ends in the shell state the previous one reported (the API then saves nothing); never for the sandbox's first", async () => {
    const s = startLive();
    const shell = { shell: { keep: "cwd" as const, state: { cwd: "" } } };
    const first = await s.cmd("true", shell);
    expect(first.shell).toEqual({ state: { cwd: "" }, notes: [] }); // the first: the saved state may differ from what the request restored
    expect((await s.cmd("true", { shell: { keep: "cwd" } })).shell).toEqual({ state: { cwd: "" }, notes: [], unchanged: true });
    expect((await s.cmd("mkdir -p d && cd d", { shell: { keep: "cwd" } })).shell).toEqual({ state: { cwd: "d" }, notes: [] });
    expect((await s.cmd("true", { shell: { keep: "cwd" } })).shell).toEqual({ state: { cwd: "d" }, notes: [], unchanged: true });
    // What is kept is compared, whatever asked for it: an exported variable under keep "all", then only the cwd again.
    expect((await s.cmd("export V=1", { shell: { keep: "all" } })).shell).toEqual({ state: { cwd: "d", env: { V: "1" } }, notes: [] });
    expect((await s.cmd("true", { shell: { keep: "cwd" } })).shell).toEqual({ state: { cwd: "d" }, notes: [] });
    await s.end();
  });

  it("a command that ends outside the workspace: the live shell stays there, the note says so (not that the next command starts in the root), once", async () => {
    const s = startLive();
    const keep = { shell: { keep: "cwd" as const } };
    const out = await s.cmd("cd /tmp", { shell: { keep: "cwd", state: { cwd: "" } } });
    expect(out.shell?.state).toEqual({ cwd: "" }); // what a new sandbox would start in: the root
    expect(out.shell?.notes).toHaveLength(1);
    expect(out.shell?.notes[0]).toContain("working directory /tmp is outside the workspace; this session's live shell stays there");
    expect(out.shell?.notes[0]).not.toContain("is not kept");
    // The next command of the session does run there, and is not told again.
    const next = await s.cmd("pwd", keep);
    expect(next.stdout).toBe("/tmp\n");
    expect(next.shell?.notes).toEqual([]);
    // Back in the workspace, then out again: told again.
    expect((await s.cmd("cd /workspace", keep)).shell?.notes).toEqual([]);
    expect((await s.cmd("cd /tmp", keep)).shell?.notes[0]).toContain("working directory /tmp is outside the workspace; this session's live shell stays there");
    await s.end();
  });

  it("a background HTTP server started by one command answers the next, shows in the status, and is gone after the idle end", async () => {
    const s = startLive({ idle_ms: 2_000 });
    const a = await s.cmd("cd /tmp && nohup python3 -m http.server 8123 --bind 127.0.0.1 >/dev/null 2>&1 & echo started");
    expect(a.stdout).toBe("started\n");
    const b = await s.cmd(
      "python3 -c \"import time,urllib.request\nfor i in range(200):\n  try:\n    print(urllib.request.urlopen('http://127.0.0.1:8123/').status); break\n  except Exception: time.sleep(0.05)\"",
    );
    expect(b.stdout).toBe("200\n");
    expect(b.status.ports).toContain(8123);
    expect(b.status.processes.map((p) => p.command).join("\n")).toContain("http.server 8123");
    expect(b.status.rss_bytes).toBeGreaterThan(0);
    expect(hostPids("http.server 8123").length).toBe(1);
    const e = await s.ended; // nothing more comes: idle
    expect(e.reason).toBe("idle");
    expect(e.lost_processes.map((p) => p.command).join("\n")).toContain("http.server 8123");
    expect(hostPids("http.server 8123")).toEqual([]);
  });

  it("with more processes than a status lists, it lists the first LIVE_LIST_MAX and counts them all, in its status and at its end", async () => {
    const s = startLive();
    const b = await s.cmd(`for i in $(seq ${LIVE_LIST_MAX + 16}); do sleep 702 & done; echo started`);
    expect(b.stdout).toBe("started\n");
    expect(b.status.processes).toHaveLength(LIVE_LIST_MAX);
    expect(b.status.processes_total).toBe(LIVE_LIST_MAX + 16);
    const pids = b.status.processes.map((p) => p.pid);
    expect(pids).toEqual([...pids].sort((x, y) => x - y)); // the lowest first
    const e = await s.end();
    expect(e.lost_processes).toHaveLength(LIVE_LIST_MAX);
    expect(e.lost_total).toBe(LIVE_LIST_MAX + 16);
    expect(hostPids("sleep 702")).toEqual([]);
  });

  it("sees a tool's change between commands; writes back background changes at the next command's end and at the sandbox's end", async () => {
    await toolEditsAndBackgroundWrites(live, "sleep 601");
    expect(hostPids("sleep 601")).toEqual([]);
  });

  it("max_life ends it (the handover): background changes written back, processes reported lost", async () => {
    const s = startLive({ max_life_ms: 2_500 });
    await s.cmd("(echo late > late.txt; exec sleep 602) &");
    const e = await s.ended;
    expect(e.reason).toBe("max_life");
    expect(e.lost_processes.map((p) => p.command)).toContain("sleep 602");
    expect(await t.read("late.txt")).toBe("late\n");
  });

  it("two sessions of one workspace see neither each other's processes nor /tmp; a fresh run meanwhile gets a slot of its own", async () => {
    const a = startLive();
    const b = startLive();
    await a.cmd("echo A > /tmp/mine; sleep 603 &");
    await b.cmd("echo B > /tmp/mine; sleep 604 &");
    const procs = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done";
    const seenByA = await a.cmd(`cat /tmp/mine; ${procs}`);
    const seenByB = await b.cmd(`cat /tmp/mine; ${procs}`);
    expect(seenByA.stdout.startsWith("A\n")).toBe(true);
    expect(seenByA.stdout).toContain("sleep 603");
    expect(seenByA.stdout).not.toContain("sleep 604");
    expect(seenByB.stdout.startsWith("B\n")).toBe(true);
    expect(seenByB.stdout).not.toContain("sleep 603");
    const fresh = await t.run("cat /tmp/mine 2>&1; echo fresh > fresh.txt");
    expect(fresh.stdout).toContain("No such file");
    expect(await t.read("fresh.txt")).toBe("fresh\n");
    // The fresh run's change reaches the live sandboxes at their next command.
    expect((await a.cmd("cat fresh.txt")).stdout).toBe("fresh\n");
    await Promise.all([a.end(), b.end()]);
  });

  it("a command past its timeout ends the sandbox and says so", async () => {
    const s = startLive();
    await s.cmd("sleep 605 &");
    const r = await s.cmd("echo before; sleep 30", { timeout_ms: 1_000 });
    expect(r.timed_out).toBe(true);
    expect(r.stdout).toBe("before\n");
    expect(r.stderr).toContain("live sandbox ended");
    const e = await s.ended;
    expect(e.reason).toBe("timed_out");
    expect(hostPids("sleep 605")).toEqual([]);
  });

  it("`exit` ends the shell and the sandbox", async () => {
    const s = startLive();
    const r = await s.cmd("echo bye > bye.txt; exit 3");
    expect(r.exit_code).toBe(3);
    expect(r.stderr).toContain("exited the session's shell");
    expect(await t.read("bye.txt")).toBe("bye\n");
    expect((await s.ended).reason).toBe("shell_exited");
  });

  it("a background process that passes the disk limit between commands ends the sandbox; what it wrote is not written back", async () => {
    const s = startLive({}, { limits: { disk_mb: 1 } });
    // (it writes a second after its command ended: between commands)
    await s.cmd("(sleep 1; head -c 3000000 /dev/zero > big.bin; exec sleep 608) &", { limits: { disk_mb: 1 } });
    const e = await s.ended;
    expect(e.reason).toBe("limit");
    expect(await t.read("big.bin")).toBeNull();
  });

  it("a background subshell (`( … ) &`, a loop sent to the background) is listed as a subshell of the session's shell, in its status and at its end, never by the live shell's internal script", async () => {
    const s = startLive();
    const b = await s.cmd("(while true; do sleep 0.2; done) & f() { sleep 707; }; f & echo started");
    expect(b.stdout).toBe("started\n");
    const commands = b.status.processes.map((p) => p.command);
    expect(commands.filter((c) => c === SUBSHELL).length).toBeGreaterThanOrEqual(2); // the loop and the function, forks of the shell
    expect(commands.join("\n")).not.toMatch(/__toolshed/);
    const e = await s.end();
    expect(e.lost_processes.map((p) => p.command)).toContain(SUBSHELL);
    expect(e.lost_processes.map((p) => p.command).join("\n")).not.toMatch(/__toolshed/);
  });

  it("a killed sandbox ends as crashed, reports its lost processes, loses no acknowledged file", async () => {
    const s = startLive();
    const r = await s.cmd("echo keep > keep.txt; sleep 606 &");
    expect(r.files_created).toEqual(["keep.txt"]);
    await until(() => s.channel.polls >= 2, "the runner polling again");
    const [sleeper] = await until(() => hostPids("sleep 606"), "the background process");
    process.kill(sandboxOf(sleeper!), "SIGKILL");
    const e = await s.ended;
    expect(e.reason).toBe("crashed");
    expect(e.lost_processes.map((p) => p.command)).toContain("sleep 606");
    expect(await t.read("keep.txt")).toBe("keep\n");
  });

  it("a lost channel (every retry failed) ends it as crashed, background changes written back", async () => {
    const s = startLive();
    await s.cmd("(echo kept > kept.txt; exec sleep 607) &");
    await until(() => inTree("kept.txt"), "the background write");
    s.channel.failing = true;
    s.channel.push({ wait: true }); // the poll in flight answers; the next ones fail
    const e = await s.ended;
    expect(e.reason).toBe("crashed");
    expect(e.lost_processes.map((p) => p.command)).toContain("sleep 607");
    expect(await t.read("kept.txt")).toBe("kept\n");
  });

  it("never follows what a command put in its shell directory (links to host files)", async () => {
    const victim = join(t.root, "victim.txt");
    writeFileSync(victim, "host secret\n");
    const s = startLive();
    const d = "/run/toolshed-shell";
    await s.cmd(`for f in out err c2.sh c2.in c3.sh; do rm -f ${d}/$f; ln -s ${victim} ${d}/$f; done; echo planted`);
    const r = await s.channel.send(t.req("echo next"));
    const text = JSON.stringify(r);
    expect(text).not.toContain("host secret");
    expect(readFileSync(victim, "utf8")).toBe("host secret\n");
    await s.end();
    expect(readFileSync(victim, "utf8")).toBe("host secret\n");
  });

  it("refuses a start with a command, and a command of another workspace", async () => {
    const bad = await t.handler(t.req("echo no", { live: { generation: "x", idle_ms: 1000, max_life_ms: 1000 } }), { tenantId: t.tenant });
    expect(bad.ok).toBe(false);
    const s = startLive();
    const p = await s.channel.send(t.req("true", { workspace: "w2" }));
    expect(p.response.ok).toBe(false);
    expect(!p.response.ok && p.response.error.code).toBe("INVALID_ARGUMENT");
    expect((await s.cmd("echo still")).stdout).toBe("still\n");
    await s.end();
  });
});
