/**
 * Live sessions end to end (issue #29) as `npm start` runs them: the app in the Workers runtime
 * (wrangler dev, the LIVE Durable Object per session), the real runner behind the local Invoke
 * stand-in started by an asynchronous Invoke, taking its session's commands by long poll over
 * /v1/sync/live/*, in one real bubblewrap sandbox for the session's life.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { LocalInvokeServer } from "../../infra/container/local-server.js";
import { startWorkerWithRunner, type WorkerWithRunner } from "../support/worker-with-runner.js";
import { setupTenant, type WorkerProcess } from "../support/wrangler-dev.js";

let w: WorkerProcess;
let runner: LocalInvokeServer;
let toolshed: WorkerWithRunner;

beforeAll(async () => {
  toolshed = await startWorkerWithRunner("worker-live");
  ({ worker: w, runner } = toolshed);
}, 120_000);

afterAll(async () => {
  await toolshed?.stop();
});

/** A python3 one-liner that prints the HTTP status of the sandbox's own loopback server, or "refused". */
const probe = (port: number) => `python3 -c "import urllib.request as u
try: print(u.urlopen('http://127.0.0.1:${port}/', timeout=2).status)
except Exception as e: print('refused')"`;
/** Waits (inside the sandbox) until the port answers. */
const waitFor = (port: number) => `for i in $(seq 100); do ${probe(port)} | grep -q 200 && break; sleep 0.1; done`;

const sandbox = (t: { key: string; base: string }, session: string, method = "GET") =>
  fetch(`${t.base}/sessions/${session}/sandbox`, { method, headers: { authorization: `Bearer ${t.key}` } });

it("shell state, /tmp and a background server live across calls; tool edits and background writes meet the files; DELETE ends it and the next call says what was lost", async () => {
  const t = await setupTenant(w, "live1");
  const live = (command: string, session = "s1") => t.call("bash", { command, keep_alive: true, idle_timeout_s: 120 }, session);

  const first = await live(`mkdir -p sub && cd sub && export FOO=bar && BAZ=qux && f() { echo "fn-$1"; } && echo mark > /tmp/mark && (python3 -m http.server 8123 --bind 127.0.0.1 >/dev/null 2>&1 &) && echo started`);
  expect(first.ok, JSON.stringify(first)).toBe(true);
  expect(first.output).toContain("started");
  expect(first.output).toMatch(/live sandbox started/i);

  const second = await live(`${waitFor(8123)}; ${probe(8123)}; pwd; echo "$FOO $BAZ"; f x; cat /tmp/mark`);
  expect(second.ok, JSON.stringify(second)).toBe(true);
  expect(second.output).toContain("200\n/workspace/sub\nbar qux\nfn-x\nmark");

  const status = await sandbox(t, "s1");
  expect(status.status).toBe(200);
  const st = (await status.json()) as any;
  expect(st.ports).toContain(8123);
  expect(st.processes.some((p: any) => /http\.server/.test(p.command))).toBe(true);

  // A tool's edit between calls is in the sandbox before the next command; a background write between calls is written back.
  expect((await t.call("write", { file_path: "sub/t.txt", content: "from the tool\n" })).ok).toBe(true);
  const third = await live(`cat t.txt; (sleep 0.3; echo later > late.txt) & echo bg`);
  expect(third.output).toContain("from the tool\nbg");
  const fourth = await live(`while [ ! -f late.txt ]; do sleep 0.1; done; echo seen`);
  expect(fourth.output).toContain("seen");
  expect((await t.call("read", { file_path: "sub/late.txt" })).output).toBe("     1\tlater");

  // Another session never sees its processes or /tmp; a session without a live sandbox runs fresh, as before (no note).
  const other = await live(`${probe(8123)}; cat /tmp/mark 2>&1 || true`, "s2");
  expect(other.output).toContain("refused");
  expect(other.output).toContain("No such file");
  const none = await t.call("bash", { command: `${probe(8123)}; cat /tmp/mark 2>/dev/null || echo no-mark` }, "s3");
  expect(none.output).toBe("refused\nno-mark\n");
  // A later call of the session without keep_alive runs in its live sandbox; keep_alive: false runs fresh and says the live one was left alone.
  const joined = await t.call("bash", { command: `${probe(8123)}; pwd; cat /tmp/mark` }, "s1");
  expect(joined.output).toBe("200\n/workspace/sub\nmark\n");
  const rc = await t.call("run_code", { language: "bash", code: `${probe(8123)}; echo "$FOO"` }, "s1");
  expect(rc.output).toBe("200\nbar\n");
  const fresh = await t.call("bash", { command: `${probe(8123)}; cat /tmp/mark 2>/dev/null || echo no-mark`, keep_alive: false }, "s1");
  expect(fresh.output).toMatch(/^\[keep_alive: false: this call ran in a fresh sandbox; the session's live sandbox was left alone .*\]\nrefused\nno-mark\n$/);
  expect((await t.call("bash", { command: probe(8123) }, "s1")).output).toBe("200\n"); // still there

  // Another tenant never learns the session exists.
  const b = await setupTenant(w, "live2");
  expect((await sandbox(b, "s1")).status).toBe(404);
  expect((await sandbox(b, "s1", "DELETE")).status).toBe(404);
  expect((await sandbox(t, "s1")).status).toBe(200);

  // DELETE ends it at once; the next call runs in a new sandbox and says what was lost; files and the replayed cwd stay.
  const del = await sandbox(t, "s1", "DELETE");
  expect(del.status).toBe(200);
  const after = await live(`${probe(8123)}; pwd; cat /tmp/mark 2>&1 || true; cat late.txt`);
  expect(after.ok, JSON.stringify(after)).toBe(true);
  expect(after.output).toMatch(/live sandbox (lost|ended)/i);
  expect(after.output).toContain("refused\n/workspace/sub");
  expect(after.output).toContain("later");
  expect(after.output).toContain("No such file");
}, 240_000);

it("a live command's errors and line numbers are a fresh run's: 'line 2:' and $LINENO its own, no file of the shell directory named", async () => {
  const t = await setupTenant(w, "live-lines");
  const script = 'echo one\nnot_a_command_here\necho "at line $LINENO"\nif then';
  const fresh = await t.call("bash", { command: script }, "fresh");
  for (const r of [await t.call("bash", { command: script, keep_alive: true }, "s1"), await t.call("bash", { command: script, keep_alive: true }, "s1")]) {
    expect(r.output).toMatch(/line 2: not_a_command_here: command not found/);
    expect(r.output).toContain("at line 3\n");
    expect(r.output).toMatch(/line 4: syntax error near unexpected token `then'/);
    expect(r.output).not.toMatch(/toolshed|c\d+\.sh/);
    // The same lines as a fresh run's (a live sandbox tails stdout and stderr apart: their order between them may differ).
    const lined = (output: string) => output.split("\n").filter((l) => /line \d/.test(l)).sort();
    expect(lined(r.output)).toEqual(lined(fresh.output));
  }
}, 180_000);

it("calls of one session are serialized: two at once run one after the other, never interleaved", async () => {
  const t = await setupTenant(w, "live3");
  const cmd = `echo "start $(date +%s%N)"; sleep 1; echo "end $(date +%s%N)"`;
  const warm = await t.call("bash", { command: "true", keep_alive: true }, "s1");
  expect(warm.ok, JSON.stringify(warm)).toBe(true);
  const [a, b] = await Promise.all([t.call("bash", { command: cmd, keep_alive: true }, "s1"), t.call("bash", { command: cmd, keep_alive: true }, "s1")]);
  for (const r of [a, b]) expect(r.ok, JSON.stringify(r)).toBe(true);
  const span = (r: any) => [Number(/start (\d+)/.exec(r.output)![1]), Number(/end (\d+)/.exec(r.output)![1])] as const;
  const [sa, ea] = span(a);
  const [sb, eb] = span(b);
  expect(ea <= sb || eb <= sa).toBe(true);
}, 180_000);

it("the idle timeout ends the sandbox: its server is gone, the next call says so", async () => {
  const t = await setupTenant(w, "live4");
  const first = await t.call("bash", { command: `(python3 -m http.server 8124 --bind 127.0.0.1 >/dev/null 2>&1 &) ; ${waitFor(8124)}; ${probe(8124)}`, keep_alive: true, idle_timeout_s: 10 }, "s1");
  expect(first.output).toContain("200");
  // Ended by itself after 10 s without a command: GET answers 404 then (polled: no fixed sleep).
  const deadline = Date.now() + 90_000;
  while ((await sandbox(t, "s1")).status !== 404) {
    expect(Date.now()).toBeLessThan(deadline);
    await new Promise((r) => setTimeout(r, 500));
  }
  const next = await t.call("bash", { command: probe(8124), keep_alive: true }, "s1");
  expect(next.output).toContain("refused");
  expect(next.output).toMatch(/idle/i);
  // Its end (the runner's own POST /v1/sync/live/ended) reached the usage store (the Durable Object GET /v1/usage/export reads),
  // polled (records are held 1 s). Before (2026-12-02) its record went to the store outside every waitUntil and workerd dropped it.
  const manage = ((await (await fetch(`${w.url}/v1/admin/tenants/live4/keys`, { method: "POST", headers: { authorization: `Bearer ${w.adminToken}`, "content-type": "application/json" }, body: JSON.stringify({ scopes: ["manage"] }) })).json()) as { key: string }).key;
  const liveRecords = async () => {
    const text = await (await fetch(`${w.url}/v1/usage/export?limit=1000`, { headers: { authorization: `Bearer ${manage}` } })).text();
    return text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { route?: string; sandbox_ms?: number }).filter((r) => r.route === "live sandbox");
  };
  const until = Date.now() + 20_000;
  let records = await liveRecords();
  while (records.length < 1 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    records = await liveRecords();
  }
  expect(records).toHaveLength(1);
  expect(records[0]!.sandbox_ms).toBeGreaterThanOrEqual(10_000);
}, 180_000);

it("Anthropic's bash with X-Toolshed-Keep-Alive runs in the session's live sandbox (later calls without the header too; false: fresh); its restart ends it, as native bash's restart does", async () => {
  const t = await setupTenant(w, "live5");
  const anthropic = async (input: unknown, keepAlive: "true" | "false" | undefined = "true") => {
    const r = await fetch(`${t.base}/compat/anthropic/bash`, { method: "POST", headers: { authorization: `Bearer ${t.key}`, "content-type": "application/json", "x-session-id": "claude-1", ...(keepAlive ? { "x-toolshed-keep-alive": keepAlive } : {}) }, body: JSON.stringify(input) });
    expect(r.status).toBe(200);
    return ((await r.json()) as { content: { text: string }[] }).content[0]!.text;
  };
  expect(await anthropic({ command: `PLAIN=kept; (python3 -m http.server 8125 --bind 127.0.0.1 >/dev/null 2>&1 &); ${waitFor(8125)}; echo up` })).toContain("up");
  expect(await anthropic({ command: `echo "$PLAIN"; ${probe(8125)}` })).toContain("kept\n200");
  expect((await sandbox(t, "claude-1")).status).toBe(200);
  // Without the header the command runs in the session's live sandbox; with false, the shell is replayed in a fresh sandbox: no server there.
  expect(await anthropic({ command: `echo "$PLAIN"; ${probe(8125)}` }, undefined)).toBe("kept\n200\n");
  expect(await anthropic({ command: probe(8125) }, "false")).toMatch(/live sandbox was left alone.*\]\nrefused\n$/s);
  expect(await anthropic({ restart: true })).toBe("tool has been restarted.");
  expect((await sandbox(t, "claude-1")).status).toBe(404);
  // Native bash: restart ends it too.
  expect((await t.call("bash", { command: "sleep 60 & echo bg", keep_alive: true }, "n1")).output).toContain("bg");
  expect((await sandbox(t, "n1")).status).toBe(200);
  const r = await t.call("bash", { restart: true }, "n1");
  expect(r.output).toContain("live sandbox was ended");
  expect((await sandbox(t, "n1")).status).toBe(404);
}, 180_000);
