/**
 * A revocation across two separate API instances (issue #28 §5; docs/tenant-keys.md "How soon a
 * revocation takes effect"), the same on Lambda (test/infra/lambda-revocation.node.test.ts) and on
 * Workers (test/infra/worker-revocation.node.test.ts). A key is used on instances A and B (each then
 * holds it in its key cache); a foreground command of it is under way on B in the real sandbox; the key
 * is revoked through A. Measured from the revocation's start: A's answer to the key, B's acceptances and
 * its first refusal of a plain request (polled 50 ms apart), B's call answering, the command's `sleep`
 * gone from /proc and the run's Invoke answered (the runner done); then whether any of the command's
 * files was written back. `expectDocumentedBounds` holds them to the page's bounds.
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
/** Past a bound: one poll (50 ms) and one request's round trip on a busy 2-core machine. */
export const MARGIN_MS = 1_000;

export interface RevocationSetup {
  a: string;
  b: string;
  adminToken: string;
  tenant: string;
  /** When each answer of the runner's Invoke endpoint ended (Date.now()), in order; a proxy before the runner appends to it. */
  invokeAnswers: number[];
}

/** Times in ms from the revocation's start (the DELETE sent through A). */
export interface RevocationTimes {
  revokeMs: number;
  aStatus: number;
  /** How many of B's requests were still accepted after the revocation, and when the last of them was sent (null: none). */
  bAccepted: { count: number; lastSentMs: number | null };
  bRefused: { status: number; code?: string; refusedBy?: string; sentMs: number; answeredMs: number };
  call: { status: number; code?: string; refusedBy?: string; message: string; answeredMs: number };
  sleepGoneMs: number;
  runEndedMs: number;
  /** The command's files as another key of the tenant reads them, once the run ended. */
  files: { early: number; f: number };
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
  expect((await send(s.a, "POST", "/v1/workspaces", made.key, { id: "main" })).status).toBe(201);
  for (const base of [s.a, s.b]) expect((await send(base, "GET", "/v1/workspaces", made.key)).status).toBe(200);

  // A call under way on B: a command that would write `early` at once and `f` at its end.
  const arg = (40 + Math.random() * 10).toFixed(3);
  const invokes = s.invokeAnswers.length;
  const call = send(s.b, "POST", "/v1/workspaces/main/tools/bash", made.key, { command: `echo early > early; sleep ${arg}; echo done > f`, timeout: 120 }).then((r) => ({ ...r, at: Date.now() }));
  await poll("the command's sleep to start", 60_000, () => sleepPids(arg).length > 0);
  // B reads the key again just before the revocation: at most its cache's TTL left.
  expect((await send(s.b, "GET", "/v1/workspaces", made.key)).status).toBe(200);

  const start = Date.now();
  expect((await admin("DELETE", `/v1/admin/tenants/${s.tenant}/keys/${made.key_id}`)).status).toBe(200);
  const revokeMs = Date.now() - start;
  // Watched from now on, beside the polls of B below.
  const sleepGone = poll("the command's sleep to end", 60_000, () => sleepPids(arg).length === 0 && Date.now() - start);
  sleepGone.catch(() => {}); // awaited below, unless a step before it fails
  const aStatus = (await send(s.a, "GET", "/v1/workspaces", made.key)).status;
  const bAccepted: RevocationTimes["bAccepted"] = { count: 0, lastSentMs: null };
  const bRefused = await poll("B to refuse the key", 30_000, async () => {
    const sent = Date.now() - start;
    const r = await send(s.b, "GET", "/v1/workspaces", made.key);
    if (r.status === 200) return void Object.assign(bAccepted, { count: bAccepted.count + 1, lastSentMs: sent });
    return { status: r.status, code: r.json?.error?.code, refusedBy: r.json?.error?.details?.refused_by, sentMs: sent, answeredMs: Date.now() - start };
  });
  const answered = await call;
  const sleepGoneMs = await sleepGone;
  const runEndedMs = await poll("the runner's answer", 60_000, () => s.invokeAnswers.length > invokes && s.invokeAnswers[invokes]! - start);
  const file = async (path: string) => (await send(s.a, "GET", `/v1/workspaces/main/files/${path}`, other)).status;
  return {
    revokeMs, aStatus, bAccepted, bRefused, sleepGoneMs, runEndedMs,
    call: { status: answered.status, code: answered.json?.error?.code, refusedBy: answered.json?.error?.details?.refused_by, message: String(answered.json?.error?.message ?? JSON.stringify(answered.json)), answeredMs: answered.at - start },
    files: { early: await file("early"), f: await file("f") },
  };
}

/**
 * The page's bounds: A refuses at once; B accepts only while the entry it read before the revocation is
 * fresh (so nothing sent `KEY_CACHE_TTL_MS` after the revocation's start) and refuses within that TTL
 * (+ the margin: `extraMs` is the store's propagation where there is one); the call under way answers
 * key_gone within the TTL + the key watch's interval, and its run is killed within one more kill-flag look,
 * nothing written back.
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
  expect(t.files, said).toEqual({ early: 404, f: 404 });
}
