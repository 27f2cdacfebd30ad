/**
 * Live sandboxes on the process sandbox (AWS Lambda without user namespaces, issue #29 §4), against
 * real processes: the handler runs as root here, so commands run as a dedicated uid, as they run as
 * the function's own user on Lambda (process-sandbox.node.test.ts does the same for fresh runs). The
 * sandbox's processes are its uid's, its ports the LISTEN sockets they hold, and its end leaves
 * neither a process of the uid nor anything in the scratch directories (`scratch` stands in for
 * Lambda's /tmp). One live sandbox per environment: anything else is refused while it lives.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processSandbox, processesOf } from "../../../infra/container/sandbox-process.js";
import { SUBSHELL } from "../../../infra/container/live-session.js";
import { hostPids, liveSetup, parentOf, toolEditsAndBackgroundWrites, until } from "./live-helpers.js";

const UID = 64124; // used by nothing else on the machine (process-sandbox.node.test.ts has 64123)
const scratch = mkdtempSync(join(tmpdir(), "toolshed-live-scratch-"));
const root = mkdtempSync(join(tmpdir(), "toolshed-live-proc-"));
const linkPath = join(root, "workspace");
const sandbox = processSandbox({
  stateDir: join(root, "sandbox"),
  egress: "none",
  runAs: { uid: UID, gid: UID },
  scratchDirs: [scratch],
  keep: [join(scratch, "handler-own")],
  workspace: { link: linkPath, path: linkPath },
});
const live = liveSetup({ root, sandbox }, "t-lp", "w-lp");
const { t, startLive } = live;

/** What is left in the scratch directory but the handler's own entry. */
const leftInScratch = () => readdirSync(scratch).filter((n) => n !== "handler-own");
/** Processes of the commands' uid. */
const ofUid = () => processesOf(UID, new Set());

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = connect(port, "127.0.0.1");
    c.on("connect", () => (c.destroy(), resolve(true)));
    c.on("error", () => resolve(false));
  });

beforeAll(() => {
  chmodSync(scratch, 0o1777); // like /tmp
  mkdirSync(join(scratch, "handler-own"), { recursive: true });
  writeFileSync(join(scratch, "handler-own", "keep.txt"), "kept\n");
});

afterAll(async () => {
  await t.cleanup();
  rmSync(root, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

describe("live sandbox on the process sandbox (Lambda)", () => {
  it("keeps cwd, variables, functions, HOME and the scratch directories across commands; its end leaves no process of the uid and empties them", async () => {
    const s = startLive();
    const a = await s.cmd(`mkdir -p sub/deep && cd sub && X=plain && export Y=exported && f() { echo fn:$1; }; echo h > "$HOME/h"; echo t > ${scratch}/left; sleep 701 &`);
    expect(a.exit_code, a.stderr).toBe(0);
    const b = await s.cmd(`pwd; echo $X $Y; f 1; cat "$HOME/h" ${scratch}/left; id -u; echo "$HOME"`, { shell: { keep: "all" } });
    const [pwd, vars, fn, h, left, uid, home] = b.stdout.trim().split("\n");
    expect([pwd, vars, fn, h, left, uid]).toEqual([`${linkPath}/sub`, "plain exported", "fn:1", "h", "t", String(UID)]);
    expect(b.shell?.state).toEqual({ cwd: "sub", env: { Y: "exported" }, functions: expect.stringContaining("fn:") });
    expect(b.status.processes.map((p) => p.command)).toEqual(["sleep 701"]); // the loop shell is the sandbox's own, not listed
    expect(b.sync.cache).toBe("warm");
    // working_dir wins for its command and then stays, as cd would
    expect((await s.cmd("pwd", { cwd: "sub/deep" })).stdout).toBe(`${linkPath}/sub/deep\n`);
    expect((await s.cmd("pwd")).stdout).toBe(`${linkPath}/sub/deep\n`);
    expect(existsSync(home!)).toBe(true);
    const e = await s.end();
    expect(e.reason).toBe("deleted");
    expect(e.lost_processes.map((p) => p.command)).toEqual(["sleep 701"]);
    expect(await ofUid()).toEqual([]);
    expect(leftInScratch()).toEqual([]);
    expect(existsSync(home!)).toBe(false);
  });

  it("a background subshell is listed as a subshell of the session's shell, never by the live shell's internal script", async () => {
    const s = startLive();
    const b = await s.cmd("(while true; do sleep 0.2; done) & echo started");
    expect(b.stdout).toBe("started\n");
    expect(b.status.processes.map((p) => p.command)).toContain(SUBSHELL);
    expect(b.status.processes.map((p) => p.command).join("\n")).not.toMatch(/__toolshed/);
    expect((await s.end()).lost_processes.map((p) => p.command)).toContain(SUBSHELL);
    expect(await ofUid()).toEqual([]);
  });

  it("a background HTTP server started by one command answers the next, shows in the status (process and port), and is gone after the idle end", async () => {
    const port = await freePort();
    const own = createServer(); // the handler's own listener: a port of the environment, not the sandbox's
    await new Promise<void>((r) => own.listen(0, "127.0.0.1", r));
    try {
      const s = startLive({ idle_ms: 2_000 });
      const a = await s.cmd(`cd "$TMPDIR" && nohup python3 -m http.server ${port} --bind 127.0.0.1 >/dev/null 2>&1 & echo started`);
      expect(a.stdout).toBe("started\n");
      const b = await s.cmd(
        `python3 -c "import time,urllib.request\nfor i in range(200):\n  try:\n    print(urllib.request.urlopen('http://127.0.0.1:${port}/').status); break\n  except Exception: time.sleep(0.05)"`,
      );
      expect(b.stdout).toBe("200\n");
      expect((await s.cmd(`curl -s -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:${port}/`)).stdout).toBe("200\n");
      expect(b.status.ports).toEqual([port]);
      expect(b.status.processes.map((p) => p.command).join("\n")).toContain(`http.server ${port}`);
      expect(b.status.rss_bytes).toBeGreaterThan(0);
      expect(hostPids(`http.server ${port}`)).toHaveLength(1);
      const e = await s.ended; // nothing more comes: idle
      expect(e.reason).toBe("idle");
      expect(e.lost_processes.map((p) => p.command).join("\n")).toContain(`http.server ${port}`);
      expect(hostPids(`http.server ${port}`)).toEqual([]);
      expect(await answers(port)).toBe(false);
      expect(await ofUid()).toEqual([]);
      expect(leftInScratch()).toEqual([]);
    } finally {
      own.close();
    }
  });

  it("refuses a second live start and a fresh run while one lives, saying why; after its end a fresh run runs and finds nothing of it", async () => {
    const s = startLive();
    await s.cmd(`echo mine > ${scratch}/mine; sleep 702 &`);
    const second = startLive();
    const refused = { code: "UNAVAILABLE", details: { reason: "live_sandbox_running" } };
    await expect(second.ended).rejects.toMatchObject({ error: { ...refused, message: expect.stringContaining("cannot keep another live sandbox apart from it") } });
    const fresh = await t.handler(t.req("echo fresh > fresh.txt"), { tenantId: t.tenant });
    expect(fresh.ok).toBe(false);
    expect(!fresh.ok && fresh.error).toMatchObject({ ...refused, message: expect.stringContaining("holds a live sandbox") });
    expect(await t.read("fresh.txt")).toBeNull();
    expect((await s.cmd(`cat ${scratch}/mine`)).stdout).toBe("mine\n"); // the live sandbox goes on
    await s.end();
    expect(await ofUid()).toEqual([]);
    const after = await t.run(`ls -A ${scratch}; pgrep -f 'slee[p] 702' || echo no-sleeper; echo fresh > fresh.txt`);
    expect(after.stdout).toBe("handler-own\nno-sleeper\n");
    expect(await t.read("fresh.txt")).toBe("fresh\n");
  });

  it("refuses a live start while a fresh run is under way (that run's end reaps every process of the uid), saying why", async () => {
    const running = t.handler(t.req(`touch ${scratch}/started; while [ ! -e ${scratch}/go ]; do sleep 0.05; done; echo done`), { tenantId: t.tenant });
    await until(() => existsSync(join(scratch, "started")), "the fresh run started");
    const s = startLive();
    await expect(s.ended).rejects.toMatchObject({ error: { code: "UNAVAILABLE", details: { reason: "runner_busy" }, message: expect.stringContaining("cannot start a live sandbox beside it") } });
    writeFileSync(join(scratch, "go"), "");
    const r = await running;
    expect(r.ok && (r.result as { stdout: string }).stdout).toBe("done\n");
  });

  it("keeps one workspace's files at a time: another workspace's tree of an earlier run is gone before the live sandbox starts", async () => {
    // Commands run as a user that could read every tree on disk (on Lambda the handler's own).
    expect((await t.run("echo other secret > o.txt; cat o.txt", { workspace: "w-other" })).stdout).toBe("other secret\n");
    const s = startLive();
    const r = await s.cmd(`grep -rl 'other secret' ${root} 2>/dev/null; echo searched`);
    expect(r.stdout).toBe("searched\n");
    await s.end();
  });

  it("sees a tool's change between commands; writes back background changes at the next command's end and at the sandbox's end", async () => {
    await toolEditsAndBackgroundWrites(live, "sleep 703");
    expect(await ofUid()).toEqual([]);
  });

  it("max_life ends it (the handover): background changes written back, processes reported lost and gone, scratch emptied", async () => {
    const s = startLive({ max_life_ms: 2_500 });
    await s.cmd(`(echo late > late.txt; echo x > ${scratch}/late; exec sleep 704) &`);
    const e = await s.ended;
    expect(e.reason).toBe("max_life");
    expect(e.lost_processes.map((p) => p.command)).toContain("sleep 704");
    expect(await t.read("late.txt")).toBe("late\n");
    expect(await ofUid()).toEqual([]);
    expect(leftInScratch()).toEqual([]);
  });

  it("a killed sandbox (its shell) ends as crashed, reports its lost processes, loses no acknowledged file, leaves nothing behind", async () => {
    const s = startLive();
    const r = await s.cmd(`echo keep > keep.txt; echo x > ${scratch}/crash; sleep 705 &`);
    expect(r.files_created).toEqual(["keep.txt"]);
    await until(() => s.channel.polls >= 2, "the runner polling again");
    // The loop shell is the process the handler spawned (no bwrap above it here).
    const [loop] = (await ofUid()).filter((pid) => parentOf(pid) === process.pid);
    process.kill(loop!, "SIGKILL");
    const e = await s.ended;
    expect(e.reason).toBe("crashed");
    expect(e.lost_processes.map((p) => p.command)).toContain("sleep 705");
    expect(await t.read("keep.txt")).toBe("keep\n");
    expect(await ofUid()).toEqual([]);
    expect(leftInScratch()).toEqual([]);
  });
});
