import { afterAll, describe, expect, it } from "vitest";
import { createHandler } from "../../../infra/container/handler.js";
import { localExecutor } from "../../../infra/container/local-executor.js";
import { KEEP_OUTPUT_LOGS, readOutputLog } from "../../../lib/sync/output-logs.js";
import { OUTPUT_LOG_NAME, outputLogsPrefix } from "../../../lib/layout/paths.js";
import { runIdOf } from "../../../infra/container/run-request.js";
import { runIdFor } from "../../../lib/sync/run-records.js";
import { killTask, pollTask, startTask } from "../../../lib/exec/tasks.js";
import type { RunResult } from "../../../lib/exec/types.js";
import type { ExecResponse } from "../../../lib/sync/types.js";
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { signEvent } from "../../../lib/exec/runner-auth.js";
import { RUNNER_SECRET, setup, signing, unsigned } from "./helpers.js";

const t = setup();
afterAll(() => t.cleanup());
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A command held by the test, not by a guessed sleep: `held(body)` touches .started in its tree,
 * waits until .go appears there, removes both, then runs `body`. The tree is a host directory bound
 * into the sandbox, so the test finds .started under the runner's root (startedIn) and lets the
 * command go by writing .go beside it (release). Neither marker outlives the command.
 */
const held = (body: string) => `touch .started; while [ ! -e .go ]; do sleep 0.02; done; rm .started .go; ${body}`;
async function startedIn(root: string): Promise<string> {
  for (const until = Date.now() + 20_000; ; await sleep(20)) {
    let found: string | undefined;
    try {
      found = readdirSync(root, { recursive: true }).map(String).find((f) => f.endsWith(".started"));
    } catch {
      found = undefined; // the root not made yet, or a directory removed while it was read (another run's slot)
    }
    if (found) return `${root}/${found.slice(0, -".started".length)}`;
    if (Date.now() > until) throw new Error(`no command started under ${root}`);
  }
}
const release = (dir: string) => writeFileSync(`${dir}.go`, "");

describe("container handler: happy paths", () => {
  it("edits, creates and deletes files; the write-back shows exactly those changes", async () => {
    await t.write("a.txt", "hello\n");
    await t.write("b.txt", "bye\n");
    await t.write("dir/c.txt", "keep\n");
    const r = await t.run("sed -i s/hello/HELLO/ a.txt && echo new > new.txt && mkdir -p sub && echo d > sub/d.txt && rm b.txt && touch dir/c.txt && echo out && echo err >&2");
    expect(r.exit_code).toBe(0);
    expect(r.stdout).toBe("out\n");
    expect(r.stderr).toBe("err\n");
    expect(r.output).toBe("out\nerr\n");
    expect(r.files_changed).toEqual(["a.txt", "new.txt", "sub/d.txt"]); // touch: same bytes, no upload
    expect(r.files_created).toEqual(["new.txt", "sub/d.txt"]);
    expect(r.files_deleted).toEqual(["b.txt"]);
    expect(r.conflicts).toEqual([]);
    expect(await t.paths()).toEqual(["a.txt", "dir/c.txt", "new.txt", "sub/d.txt"]);
    expect(await t.read("a.txt")).toBe("HELLO\n");
    expect(await t.read("sub/d.txt")).toBe("d\n");
    expect(await t.read("dir/c.txt")).toBe("keep\n");
  });

  it("a warm call on an unchanged workspace downloads nothing; a one-file change downloads one file", async () => {
    const first = await t.run("cat a.txt");
    expect(first.stdout).toBe("HELLO\n");
    const warm = await t.run("ls -R | wc -l");
    expect(warm.sync.cache).toBe("warm");
    expect(warm.sync.downloaded_files).toBe(0);
    expect(warm.sync.uploaded_files).toBe(0);
    await t.write("dir/c.txt", "changed by a tool\n");
    const after = await t.run("cat dir/c.txt");
    expect(after.stdout).toBe("changed by a tool\n");
    expect(after.sync.downloaded_files).toBe(1);
    expect(after.sync.manifest_files).toBe(4);
  });

  it("runs python3 and node, with the program on stdin", async () => {
    const py = await t.run("python3 - one two", { stdin: "import sys\nprint('py', sys.argv[1:], 6*7)\n" });
    expect(py.stdout).toBe("py ['one', 'two'] 42\n");
    const js = await t.run("node - x", { stdin: "console.log('js', process.argv.slice(2).join(','), 6*7)" });
    expect(js.stdout).toBe("js x 42\n");
  });

  it("runs in working_dir (created when missing) and passes env", async () => {
    const r = await t.run('pwd; echo "$GREETING"; echo in-sub > here.txt', { cwd: "dir/deeper", env: { GREETING: "hi there" } });
    expect(r.stdout).toBe("/workspace/dir/deeper\nhi there\n");
    expect(await t.read("dir/deeper/here.txt")).toBe("in-sub\n");
  });

  it("a failing command still writes back what it completed", async () => {
    const r = await t.run("echo partial > failed.txt; exit 3");
    expect(r.exit_code).toBe(3);
    expect(r.files_changed).toEqual(["failed.txt"]);
    expect(await t.read("failed.txt")).toBe("partial\n");
  });

  it("cuts long output (head + tail) and saves the full output outside the workspace's files", async () => {
    const r = await t.run("seq 1 100000", { limits: { output_bytes: 2000 } });
    expect(r.truncated).toBe(true);
    expect(r.stdout.startsWith("1\n2\n3\n")).toBe(true);
    expect(r.stdout.endsWith("99999\n100000\n")).toBe(true);
    expect(r.output).toContain(`of 588,895 bytes omitted, lines `);
    expect(r.output).toContain(`of 100,000. The full output is saved as ${r.output_file} (not a workspace file): read it with bash_output (output_file: "${r.output_file}", offset: `);
    expect(r.output_cut).toMatchObject({ total_bytes: 588_895, total_lines: 100_000 });
    expect(r.output_file).toMatch(OUTPUT_LOG_NAME);
    expect((await t.paths()).filter((p) => p.startsWith(".toolshed"))).toEqual([]);
    const full = await t.driver.get(outputLogsPrefix(t.tenant, t.workspace) + r.output_file);
    expect((await new Response(full!.body).text()).split("\n").length).toBe(100001);
    // Where the note says to read, the first omitted line is.
    const from = r.output_cut!.omitted_from_line;
    expect((await readOutputLog(t.driver, t.tenant, t.workspace, r.output_file!, from, 2)).text).toBe(`${String(from).padStart(6)}\t${from}\n${String(from + 1).padStart(6)}\t${from + 1}\n`);
  });

  it(`keeps the newest ${KEEP_OUTPUT_LOGS} full outputs; older ones are deleted`, async () => {
    const logs = async () => (await t.driver.list({ prefix: outputLogsPrefix(t.tenant, t.workspace) })).objects.map((o) => o.key.slice(outputLogsPrefix(t.tenant, t.workspace).length));
    const made: string[] = [];
    for (let i = 0; i < KEEP_OUTPUT_LOGS + 3; i++) made.push((await t.run(`seq ${i} 20000`, { limits: { output_bytes: 500 } })).output_file!);
    const left = await logs();
    expect(left).toHaveLength(KEEP_OUTPUT_LOGS);
    expect(left.sort()).toEqual(made.slice(-KEEP_OUTPUT_LOGS).sort());
    expect((await readOutputLog(t.driver, t.tenant, t.workspace, made.at(-1)!, 1, 2)).text).toBe("     1\t22\n     2\t23\n");
    await expect(readOutputLog(t.driver, t.tenant, t.workspace, made[0]!, 1, 2)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("container handler: write-back rules", () => {
  it("a file a tool changed during the run is not overwritten; both versions survive", async () => {
    await t.write("race.txt", "v0\n");
    await t.write("gone.txt", "v0\n");
    // The tool's writes land after the run's sync-in (the command has started) and before its command writes.
    const req = t.req(held("echo from-command > race.txt; echo cmd-new > created.txt; rm gone.txt; echo ok > clean.txt"));
    const h = t.freshHandler();
    const running = h(req, { tenantId: req.tenant }).then((x) => t.unwrap<RunResult>(x));
    const dir = await startedIn(`${t.root}-env${t.envCount()}`);
    await t.write("race.txt", "from-tool\n");
    await t.write("created.txt", "tool-new\n");
    await t.write("gone.txt", "tool-edit\n");
    release(dir);
    const r = await running;
    expect(r.conflicts.map((c) => [c.path, c.change])).toEqual([
      ["created.txt", "created"],
      ["gone.txt", "deleted"],
      ["race.txt", "modified"],
    ]);
    expect(r.files_changed).toEqual(["clean.txt"]);
    expect(await t.read("race.txt")).toBe("from-tool\n");
    expect(await t.read("created.txt")).toBe("tool-new\n");
    expect(await t.read("gone.txt")).toBe("tool-edit\n");
    const saved = r.conflicts.find((c) => c.path === "race.txt")!.saved_as!;
    expect(saved).toMatch(/^\.toolshed\/conflicts\/r[0-9a-f]+\/race\.txt$/);
    expect(await t.read(saved)).toBe("from-command\n");
    expect(await t.read(r.conflicts.find((c) => c.path === "created.txt")!.saved_as!)).toBe("cmd-new\n");
    // The next run sees the tool's versions, not the command's leftovers.
    expect((await t.run("cat race.txt created.txt gone.txt")).stdout).toBe("from-tool\ntool-new\ntool-edit\n");
  });

  it("timeout: every process is killed, the output so far is returned, nothing is written back", async () => {
    await t.write("keep.txt", "original\n");
    const started = Date.now();
    const r = await t.run("echo before; echo changed > keep.txt; echo made > made.txt; sleep 30; echo never", { timeout_ms: 1000 });
    expect(Date.now() - started).toBeLessThan(6000);
    expect(r.timed_out).toBe(true);
    expect(r.exit_code).toBeNull();
    expect(r.output).toBe("before\n");
    expect(r.files_changed).toEqual([]);
    expect(r.discarded).toEqual(["keep.txt", "made.txt"]);
    expect(await t.read("keep.txt")).toBe("original\n");
    expect(await t.read("made.txt")).toBeNull();
    // ...and the local tree was put back: the next run sees storage, not the discarded edits.
    expect((await t.run("cat keep.txt; ls made.txt 2>&1 || true")).stdout).toContain("original\n");
  });

  it("two concurrent runs on one workspace get separate trees; both write back", async () => {
    const [a, b] = await Promise.all([t.run("sleep 0.5; echo a > par-a.txt; ls par-b.txt 2>&1 || true"), t.run("sleep 0.5; echo b > par-b.txt")]);
    expect(a.files_changed).toEqual(["par-a.txt"]);
    expect(b.files_changed).toEqual(["par-b.txt"]);
    expect(a.stdout).toContain("No such file"); // b's file was not in a's tree
    expect(await t.read("par-a.txt")).toBe("a\n");
    expect(await t.read("par-b.txt")).toBe("b\n");
  });

  it("the same idempotency key twice runs the command once (sequential and concurrent)", async () => {
    const req = t.req("echo x >> counter.txt; echo ran");
    const a = t.unwrap<RunResult>(await t.handler(req));
    const b = t.unwrap<RunResult>(await t.handler({ ...req }));
    expect(b).toEqual(a);
    expect(await t.read("counter.txt")).toBe("x\n");
    const req2 = t.req("echo y >> counter2.txt");
    const [c, d] = await Promise.all([t.handler(req2), t.handler({ ...req2 })]);
    expect(c).toEqual(d);
    expect(await t.read("counter2.txt")).toBe("y\n");
  });

  it("a retry landing in another execution environment (new root, no memory) returns the stored result; the command ran once", async () => {
    const req = t.req("echo z >> counter3.txt; echo ran");
    const a = await t.handler(req);
    expect(a.ok).toBe(true);
    const elsewhere = t.freshHandler();
    expect(await elsewhere({ ...req })).toEqual(a);
    expect(await t.read("counter3.txt")).toBe("z\n");
  });

  it("a retry while the first attempt still runs waits, then answers CONFLICT naming the run to follow; later the stored result", async () => {
    const req = t.req(held("echo once >> slow.txt; echo finished"));
    const first = t.handler(req);
    // The first attempt holds the run: its command has started and waits for the test's release (a
    // guessed sleep let the retry claim first, or the first end first, on a loaded machine).
    const ref = { tenant: t.tenant, workspace: t.workspace, task_id: runIdOf(req) };
    const dir = await startedIn(t.root);
    const elsewhere = t.freshHandler({ claimWaitMs: 700 });
    const retry = await elsewhere({ ...req });
    expect(retry.ok).toBe(false);
    if (!retry.ok) {
      expect(retry.error.code).toBe("CONFLICT");
      expect(retry.error.details?.task_id).toBe(runIdOf(req));
      expect(retry.error.message).toContain(`bash_output task_id ${runIdOf(req)}`);
    }
    // What the CONFLICT says to do works: the foreground run can be followed like a task.
    expect((await pollTask(t.driver, ref)).status).toBe("running");
    release(dir);
    const followed = await pollTask(t.driver, ref, { wait_ms: 15_000 });
    expect(followed).toMatchObject({ status: "completed", exit_code: 0, output: "finished\n" });
    await expect(killTask(t.driver, ref)).resolves.toEqual({ status: "already_completed" });
    const done = await first;
    expect(await t.freshHandler()({ ...req })).toEqual(done);
    expect(await t.read("slow.txt")).toBe("once\n");
  });

  it("a run that never started (the workspace could not be fetched) releases its claim: a retry runs it", async () => {
    const req = t.req("echo r >> released.txt");
    const down = new Proxy({}, { get: () => async () => { throw new Error("storage down"); } }) as typeof t.sync;
    const broken = t.freshHandler({ syncClient: () => down });
    const failed = await broken(req);
    expect(failed.ok ? null : failed.error.code).toBe("INTERNAL");
    const retried = await t.handler({ ...req });
    expect(retried.ok).toBe(true);
    expect(await t.read("released.txt")).toBe("r\n");
  });

  it("the run id of the runner and of the API agree (the record a retry finds is the one the API reads)", async () => {
    const req = t.req("true");
    expect(await runIdFor(req.tenant, req.workspace, req.idempotency_key)).toBe(runIdOf(req));
  });
});

describe("container handler: names the workspace cannot hold", () => {
  it("skips unsafe names from storage and from the command, and file/dir clashes", async () => {
    const prefix = `t/${t.tenant}/w/${t.workspace}/f/`;
    await t.driver.put(`${prefix}odd\\name.txt`, "x");
    await t.driver.put(`${prefix}clash`, "file");
    await t.driver.put(`${prefix}clash/inner.txt`, "below a file");
    const r = await t.run("ls; printf x > 'back\\slash'; printf y > \"$(printf 'new\\nline')\"; echo ok > fine.txt");
    const reasons = Object.fromEntries(r.skipped.map((s) => [s.path, s.reason]));
    expect(reasons["odd\\name.txt"]).toBe("invalid_name");
    expect(reasons["clash/inner.txt"]).toBe("path_conflict");
    expect(reasons["back\\slash"]).toBe("invalid_name");
    expect(reasons["new\nline"]).toBe("invalid_name");
    expect(r.files_changed).toEqual(["fine.txt"]);
    expect(r.stdout).toContain("clash\n");
    await t.driver.delete([`${prefix}odd\\name.txt`, `${prefix}clash`, `${prefix}clash/inner.txt`]);
  });
});

describe("container handler: background tasks (run records in storage, nothing kept in the runner)", () => {
  // The local executor hands the run over without waiting, as an asynchronous Invoke does.
  const exec = localExecutor({ handler: t.handler.raw, secret: RUNNER_SECRET });
  const ref = (task_id: string) => ({ tenant: t.tenant, workspace: t.workspace, task_id });
  /** Polls the task (every 50 ms, at most 20 s) until a poll satisfies `done`; returns that poll. */
  const pollUntil = async (task_id: string, done: (p: Awaited<ReturnType<typeof pollTask>>) => boolean) => {
    for (const until = Date.now() + 20_000; ; await sleep(50)) {
      const p = await pollTask(t.driver, ref(task_id));
      if (done(p)) return p;
      if (Date.now() > until) throw new Error(`task ${task_id}: the awaited poll never came (last: ${JSON.stringify(p).slice(0, 300)})`);
    }
  };

  it("start, poll (running, then completed with the output), write-back at the end", async () => {
    const { task_id } = await startTask(t.driver, exec, t.req("echo begin; sleep 4; echo done; echo bg > bg.txt"));
    // Polled until its first output arrives (the command then sleeps 4 s: it is still running).
    const p1 = await pollUntil(task_id, (p) => p.output !== "");
    expect(p1.status).toBe("running");
    expect(p1.output).toBe("begin\n");
    const p2 = await pollTask(t.driver, ref(task_id), { wait_ms: 10_000 });
    expect(p2.status).toBe("completed");
    expect(p2.exit_code).toBe(0);
    expect(p2.output).toBe("done\n");
    expect(p2.result!.files_changed).toEqual(["bg.txt"]);
    expect(await t.read("bg.txt")).toBe("bg\n");
    // Output is handed out once; the chunks are gone from storage afterwards.
    expect((await pollTask(t.driver, ref(task_id))).output).toBe("");
    expect((await t.driver.list({ prefix: `t/${t.tenant}/w/${t.workspace}/x/runs/${task_id}/out/` })).objects).toEqual([]);
  });

  it("kill stops a long task; killing again says already_completed; unknown or foreign ids are NOT_FOUND", async () => {
    const { task_id } = await startTask(t.driver, exec, t.req("echo long > long.txt; echo started; sleep 1000"));
    expect((await pollUntil(task_id, (p) => p.output !== "")).output).toBe("started\n"); // long.txt is written
    expect(await killTask(t.driver, ref(task_id))).toEqual({ status: "killed" });
    const p = await pollTask(t.driver, ref(task_id));
    expect(p.status).toBe("killed");
    expect(p.result!.discarded).toEqual(["long.txt"]);
    expect(await t.read("long.txt")).toBeNull();
    expect(await killTask(t.driver, ref(task_id))).toEqual({ status: "already_completed" });
    await expect(pollTask(t.driver, { tenant: "someone-else", workspace: t.workspace, task_id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(pollTask(t.driver, { tenant: t.tenant, workspace: "other-ws", task_id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(killTask(t.driver, { tenant: "someone-else", workspace: t.workspace, task_id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(killTask(t.driver, ref("rffffffffffffff0"))).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(pollTask(t.driver, ref("../../x"))).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("a kill that arrives before the runner claimed the task: the command never writes anything", async () => {
    const req = t.req("echo early > early.txt; sleep 1000");
    let handOver: () => void = () => {};
    const slow = { start: async (r: typeof req) => void new Promise<void>((go) => (handOver = go)).then(() => t.handler({ ...r, task: true })), run: exec.run };
    const { task_id } = await startTask(t.driver, slow, req);
    expect((await pollTask(t.driver, ref(task_id))).status).toBe("running");
    expect(await killTask(t.driver, ref(task_id), { wait_ms: 200 })).toEqual({ status: "stopping" });
    handOver();
    const p = await pollTask(t.driver, ref(task_id), { wait_ms: 10_000 });
    expect(p.status).toBe("killed");
    expect(await t.read("early.txt")).toBeNull();
  });

  it("a task whose runner cannot run anything reports that to its record", async () => {
    const nobwrap = localExecutor({ handler: createHandler({ root: `${t.root}-nobwrap`, syncClient: () => t.sync, runRecords: t.runRecords, bwrapPath: "/nonexistent/bwrap", secret: RUNNER_SECRET }), secret: RUNNER_SECRET });
    const { task_id } = await startTask(t.driver, nobwrap, t.req("echo never > never.txt"));
    const p = await pollTask(t.driver, ref(task_id), { wait_ms: 10_000 });
    expect(p.status).toBe("completed");
    expect(p.error?.code).toBe("UNAVAILABLE");
    expect(await t.read("never.txt")).toBeNull();
  });

  it("an event with another action is refused", async () => {
    const r = (await t.handler({ ...t.req("true"), action: "poll" as "run" })) as ExecResponse;
    expect(r.ok ? null : r.error.code).toBe("INVALID_ARGUMENT");
  });
});

describe("container handler: refusals", () => {
  it("without bubblewrap, answers UNAVAILABLE with how to install it, and runs nothing", async () => {
    const h = signing(createHandler({ root: `${t.root}-nobwrap`, syncClient: () => t.sync, bwrapPath: "/nonexistent/bwrap", secret: RUNNER_SECRET }));
    const r = await h(t.req("echo should-not-run > nope.txt"));
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe("UNAVAILABLE");
      expect(r.error.message).toContain("apt-get install bubblewrap");
    }
    expect(await t.read("nope.txt")).toBeNull();
  });

  it("the in-process handler refuses an unsigned event, a reordered-but-altered one and one signed with another secret: no record, no slot, no command", async () => {
    const root = `${t.root}-refuse`;
    const h = createHandler({ root, syncClient: () => t.sync, runRecords: t.runRecords, secret: RUNNER_SECRET });
    try {
      const req = t.req("echo never > never.txt");
      const forged = await signEvent("another-secret-entirely-0123", req);
      const altered = { ...(await signEvent(RUNNER_SECRET, req)), timeout_ms: 600_000 };
      for (const [event, reason] of [[unsigned(req), "invocation_unsigned"], [forged, "invocation_bad_signature"], [altered, "invocation_bad_signature"]] as const) {
        const r = await h(event, { tenantId: req.tenant });
        expect(r.ok ? null : { code: r.error.code, reason: r.error.details?.reason }).toEqual({ code: "UNAVAILABLE", reason });
      }
      expect((await t.driver.list({ prefix: `t/${t.tenant}/w/${t.workspace}/x/runs/${runIdOf(req)}/` })).objects).toEqual([]);
      expect(existsSync(`${root}/slots`) ? readdirSync(`${root}/slots`) : []).toEqual([]);
      expect(await t.read("never.txt")).toBeNull();
      // Signed as the API signs it, with the keys in another order (another JSON parser): it runs.
      const signed = await signEvent(RUNNER_SECRET, t.req("echo ran"));
      const reordered = Object.fromEntries(Object.entries(signed).reverse()) as typeof signed;
      expect(t.unwrap<RunResult>(await h(reordered, { tenantId: req.tenant })).stdout).toBe("ran\n");
    } finally {
      await h.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("rejects bad requests and a TenantId that does not match", async () => {
    const bad = await t.handler({ ...t.req("true"), timeout_ms: 0 });
    expect(bad.ok ? null : bad.error.code).toBe("INVALID_ARGUMENT");
    const badEnv = await t.handler(t.req("true", { env: { "A=B": "x" } }));
    expect(badEnv.ok ? null : badEnv.error.code).toBe("INVALID_ARGUMENT");
    const badCwd = await t.handler(t.req("true", { cwd: "../x" }));
    expect(badCwd.ok ? null : badCwd.error.code).toBe("INVALID_PATH");
    const wrongTenant = await t.handler(t.req("true"), { tenantId: "other" });
    expect(wrongTenant.ok ? null : wrongTenant.error.code).toBe("PERMISSION_DENIED");
  });
});
