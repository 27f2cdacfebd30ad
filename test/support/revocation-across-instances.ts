/**
 * A revocation across two separate API instances (issue #28 §5; docs/tenant-keys.md "How soon a
 * revocation takes effect"), the same on Lambda (test/infra/lambda-revocation.node.test.ts) and on
 * Workers (test/infra/worker-revocation.node.test.ts). A key is used on instances A and B (each then
 * holds it in its key cache); on B, in the real sandbox, a background task of it runs, a `bash_output`
 * wait of it waits on another key's task, and a foreground command of it runs; the key is revoked through A.
 * Measured from the revocation's start: A's answer to the key, B's acceptances and its first refusal of
 * a plain request (polled 50 ms apart), the call and the wait answering, each command's `sleep` gone
 * from /proc, the foreground run's Invoke answered (the runner done); then the task's stored result and
 * whether any command's file was written back. `expectDocumentedBounds` holds them to the page's bounds.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { startLocalInvokeServer } from "../../infra/container/local-server.js";
import { RUNNER_SECRET } from "../infra/container/helpers.js";
import { startPassThroughProxy } from "./pass-through-proxy.js";

/** The documented bounds (docs/tenant-keys.md): the key cache's TTL, the key watch's interval, the runner's kill-flag look. */
export const KEY_CACHE_TTL_MS = 5_000;
export const KEY_WATCH_MS = 5_000;
export const KILL_LOOK_MS = 1_000;
/** A background task's runner asks the API about every second (its pump): `kill` once its starting key is gone. */
export const TASK_PUMP_MS = 1_000;
/** Past a bound: one poll (50 ms) and one request's round trip on a busy 2-core machine (CI runs two
 * test files at once, each with its own wrangler dev and runner: a round trip there has taken over 1 s).
 * The bounds stay tight where it matters: no request sent at or past the cache's TTL is accepted. */
export const MARGIN_MS = 2_500;

export interface RevocationSetup {
  a: string;
  b: string;
  adminToken: string;
  tenant: string;
  /** When each answer of the runner's Invoke endpoint ended (Date.now()), in order; a proxy before the runner appends to it. */
  invokeAnswers: number[];
}

export interface Refusal {
  status: number;
  code?: string;
  refusedBy?: string;
  message: string;
  answeredMs: number;
}

/** Times in ms from the revocation's start (the DELETE sent through A). */
export interface RevocationTimes {
  revokeMs: number;
  aStatus: number;
  /** How many of B's requests were still accepted after the revocation, and when the last of them was sent (null: none). */
  bAccepted: { count: number; lastSentMs: number | null };
  bRefused: { status: number; code?: string; refusedBy?: string; sentMs: number; answeredMs: number };
  /** The foreground command's call, and the `bash_output` wait on another key's background task. */
  call: Refusal;
  wait: Refusal;
  /** When the foreground command's `sleep` was gone and its run's Invoke answered; when the task's `sleep` was gone. */
  sleepGoneMs: number;
  runEndedMs: number;
  taskGoneMs: number;
  /** The task's stored result, as another key reads it. */
  task: { status?: string; killedBy?: string };
  /** The commands' files as another key of the tenant reads them, once their runs ended. */
  files: Record<"early" | "f" | "task-early" | "task-f", number>;
}

/**
 * The real runner (bubblewrap, behind the local Invoke endpoint, RUNNER_SECRET) with a proxy before it
 * that notes when each Invoke answer ended: `url` is the instances' TOOLSHED_RUNNER_URL.
 */
export async function startWatchedRunner(): Promise<{ url: string; invokeAnswers: number[]; close(): Promise<void> }> {
  const root = mkdtempSync(join(tmpdir(), "toolshed-revocation-runner-"));
  chmodSync(root, 0o711); // the sandbox uid traverses to its tree
  const runner = await startLocalInvokeServer({ root, secret: RUNNER_SECRET });
  const invokeAnswers: number[] = [];
  const proxy = await startPassThroughProxy(runner.url, { onAnswer: (a) => void (a.path.includes("/invocations") && invokeAnswers.push(Date.now())) });
  return {
    url: proxy.url,
    invokeAnswers,
    async close() {
      await proxy.close();
      await runner.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

type Answer = { status: number; json: any };

async function send(base: string, method: string, path: string, token: string, body?: unknown): Promise<Answer> {
  const r = await fetch(base + path, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, json };
}

/** The pids of every process whose command line is `sleep <arg>` (the sandbox's, seen from outside). */
function sleepPids(arg: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, "utf8") === `sleep\0${arg}\0`) out.push(Number(e));
    } catch {}
  }
  return out;
}

/** Polls `check` every 50 ms until it gives a value; throws past `ms`. */
async function poll<T>(what: string, ms: number, check: () => T | undefined | false | Promise<T | undefined | false>): Promise<T> {
  for (const until = Date.now() + ms; ; ) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function revokeAcrossInstances(s: RevocationSetup): Promise<RevocationTimes> {
  const admin = (method: string, path: string, body?: unknown) => send(s.a, method, path, s.adminToken, body);
  expect((await admin("POST", "/v1/admin/tenants", { id: s.tenant })).status).toBe(201);
  const made = (await admin("POST", `/v1/admin/tenants/${s.tenant}/keys`, {})).json as { key: string; key_id: string };
  const other = (await admin("POST", `/v1/admin/tenants/${s.tenant}/keys`, {})).json.key as string;
  const tool = (base: string, name: string, args: unknown, token = made.key) => send(base, "POST", `/v1/workspaces/main/tools/${name}`, token, args).then((r) => ({ ...r, at: Date.now() }));
  expect((await send(s.a, "POST", "/v1/workspaces", made.key, { id: "main" })).status).toBe(201);
  for (const base of [s.a, s.b]) expect((await send(base, "GET", "/v1/workspaces", made.key)).status).toBe(200);

  // What the key does on B: a background task of its own, a wait on another key's task (which its
  // revocation does not end), a foreground command; each command would write a file at once and another at its end.
  const [taskArg, otherArg, arg] = [40, 50, 60].map((n) => (n + Math.random() * 10).toFixed(3)) as [string, string, string];
  const background = async (command: string, token: string) => {
    const r = await tool(s.b, "bash", { command, run_in_background: true }, token);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    return r.json.data.task_id as string;
  };
  const taskId = await background(`echo early > task-early; sleep ${taskArg}; echo done > task-f`, made.key);
  const otherTask = await background(`sleep ${otherArg}`, other);
  await poll("the tasks' sleeps to start", 60_000, () => sleepPids(taskArg).length > 0 && sleepPids(otherArg).length > 0);
  const wait = tool(s.b, "bash_output", { task_id: otherTask, wait: true, timeout: 120 });
  const invokes = s.invokeAnswers.length; // the tasks' asynchronous Invokes were answered at their start
  const call = tool(s.b, "bash", { command: `echo early > early; sleep ${arg}; echo done > f`, timeout: 120 });
  await poll("the command's sleep to start", 60_000, () => sleepPids(arg).length > 0);
  // B reads the key again just before the revocation: at most its cache's TTL left.
  expect((await send(s.b, "GET", "/v1/workspaces", made.key)).status).toBe(200);

  const start = Date.now();
  expect((await admin("DELETE", `/v1/admin/tenants/${s.tenant}/keys/${made.key_id}`)).status).toBe(200);
  const revokeMs = Date.now() - start;
  // Watched from now on, beside the polls of B below.
  const gone = (a: string) => poll(`sleep ${a} to end`, 60_000, () => sleepPids(a).length === 0 && Date.now() - start);
  const [sleepGone, taskGone] = [gone(arg), gone(taskArg)];
  for (const p of [sleepGone, taskGone]) p.catch(() => {}); // awaited below, unless a step before it fails
  const aStatus = (await send(s.a, "GET", "/v1/workspaces", made.key)).status;
  const bAccepted: RevocationTimes["bAccepted"] = { count: 0, lastSentMs: null };
  const bRefused = await poll("B to refuse the key", 30_000, async () => {
    const sent = Date.now() - start;
    const r = await send(s.b, "GET", "/v1/workspaces", made.key);
    if (r.status === 200) return void Object.assign(bAccepted, { count: bAccepted.count + 1, lastSentMs: sent });
    return { status: r.status, code: r.json?.error?.code, refusedBy: r.json?.error?.details?.refused_by, sentMs: sent, answeredMs: Date.now() - start };
  });
  const refusal = (r: { status: number; json: any; at: number }) => ({ status: r.status, code: r.json?.error?.code, refusedBy: r.json?.error?.details?.refused_by, message: String(r.json?.error?.message ?? JSON.stringify(r.json)), answeredMs: r.at - start });
  const [answered, waited] = [refusal(await call), refusal(await wait)];
  const sleepGoneMs = await sleepGone;
  const taskGoneMs = await taskGone;
  const runEndedMs = await poll("the runner's answer", 60_000, () => s.invokeAnswers.length > invokes && s.invokeAnswers[invokes]! - start);
  // The task's result, stored once its runner ended, as another key of the tenant reads it.
  const task = (await tool(s.a, "bash_output", { task_id: taskId, wait: true, timeout: 60 }, other)).json?.data;
  expect((await tool(s.a, "kill_shell", { task_id: otherTask }, other)).status).toBe(200);
  const file = async (path: string) => (await send(s.a, "GET", `/v1/workspaces/main/files/${path}`, other)).status;
  return {
    revokeMs, aStatus, bAccepted, bRefused, sleepGoneMs, runEndedMs, call: answered, wait: waited, taskGoneMs,
    task: { status: task?.status, killedBy: task?.killed_by },
    files: { early: await file("early"), f: await file("f"), "task-early": await file("task-early"), "task-f": await file("task-f") },
  };
}

/**
 * The page's bounds: A refuses at once; B accepts only while the entry it read before the revocation is
 * fresh (so nothing sent `KEY_CACHE_TTL_MS` after the revocation's start) and refuses within that TTL
 * (+ the margin: `extraMs` is the store's propagation where there is one); the call and the wait under
 * way answer key_gone within the TTL + the key watch's interval; the foreground run is killed within one
 * more kill-flag look, the background task within the TTL + its runner's next ask; nothing written back.
 */
export function expectDocumentedBounds(t: RevocationTimes, extraMs = 0): void {
  const said = JSON.stringify(t);
  expect(t.aStatus, said).toBe(401);
  expect(t.bAccepted.lastSentMs ?? 0, said).toBeLessThan(KEY_CACHE_TTL_MS + extraMs);
  expect(t.bRefused, said).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
  expect(t.bRefused.answeredMs, said).toBeLessThanOrEqual(KEY_CACHE_TTL_MS + extraMs + MARGIN_MS);
  expect(t.call, said).toMatchObject({ status: 401, code: "UNAUTHORIZED", refusedBy: "key_gone" });
  expect(t.call.message, said).toContain("its command was killed");
  expect(t.call.answeredMs, said).toBeLessThanOrEqual(KEY_CACHE_TTL_MS + extraMs + KEY_WATCH_MS + MARGIN_MS);
  expect(t.sleepGoneMs, said).toBeLessThanOrEqual(KEY_CACHE_TTL_MS + extraMs + KEY_WATCH_MS + KILL_LOOK_MS + MARGIN_MS);
  expect(t.runEndedMs, said).toBeLessThanOrEqual(KEY_CACHE_TTL_MS + extraMs + KEY_WATCH_MS + KILL_LOOK_MS + MARGIN_MS);
  expect(t.wait, said).toMatchObject({ status: 401, code: "UNAUTHORIZED", refusedBy: "key_gone" });
  expect(t.wait.answeredMs, said).toBeLessThanOrEqual(KEY_CACHE_TTL_MS + extraMs + KEY_WATCH_MS + MARGIN_MS);
  expect(t.taskGoneMs, said).toBeLessThanOrEqual(KEY_CACHE_TTL_MS + extraMs + TASK_PUMP_MS + MARGIN_MS);
  expect(t.task, said).toEqual({ status: "killed", killedBy: "key_gone" });
  expect(t.files, said).toEqual({ early: 404, f: 404, "task-early": 404, "task-f": 404 });
}
