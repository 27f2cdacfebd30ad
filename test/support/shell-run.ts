/**
 * Runs markdown shell blocks as a reader pastes them into bash, against a server behind a recording
 * proxy (test/support/pass-through-proxy.ts), and judges each block by one rule (`blockFailures`):
 * every command whose status the block does not test itself succeeds (the ERR trap: a command in an
 * `if`, or before `&&`/`||`, is the block's own check; a pipeline fails when any of its commands
 * does), bash ends with status 0, and no answer of the server is a Toolshed error unless a comment
 * of the block names its code or status (`# 403 PERMISSION_DENIED`, `# a second answer: 409
 * CONFLICT`), and then one answer is.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ERROR_CODES } from "../../lib/shared/errors.js";
import type { ProxiedAnswer } from "./pass-through-proxy.js";
import { shellComments } from "./shell-snippets.js";

export interface PastedBlock {
  /** Where it is, as `page:line`. */
  label: string;
  text: string;
}

export interface BlockRun {
  block: PastedBlock;
  /** Commands that failed unchecked: `line N: status S: command` (N: the block's own line, 0-based). */
  failed: string[];
  /** The server's answers to the block, in order. */
  answers: ProxiedAnswer[];
}

export interface PageRun {
  status: number | null;
  stdout: string;
  stderr: string;
  blocks: BlockRun[];
}

/** The path a block's marker asks for: the proxy records it like any answer, between two blocks' answers. */
const MARKER = "/__shell-run/block/";

/** The JSON payloads of an answer: its body when JSON, each `data:` line of an event stream. */
function payloads(answer: ProxiedAnswer): unknown[] {
  const texts = /^application\/json/i.test(answer.contentType) ? [answer.body] : /^text\/event-stream/i.test(answer.contentType) ? [...answer.body.matchAll(/^data: ?(.*)$/gm)].map((m) => m[1]!) : [];
  return texts.flatMap((t) => {
    try {
      return [JSON.parse(t) as unknown];
    } catch {
      return [];
    }
  });
}

/**
 * The error an answer is, by its code, or null: an `"error":{"code":…}` envelope (a tool call's,
 * a route's, a JSON-RPC error's number), `"ok":false`, a failed call of a compat door or MCP
 * (`is_error`, `status: "failed"`, `result.isError`), an Anthropic `tool_result` block without its
 * `tool_use_id` (unusable as the next message's block), or an HTTP status of 400 and up whatever the body.
 */
export function answerError(answer: ProxiedAnswer): string | null {
  for (const p of payloads(answer)) {
    if (typeof p !== "object" || p === null) continue;
    const o = p as { ok?: unknown; error?: { code?: unknown }; is_error?: unknown; result?: { isError?: unknown }; status?: unknown; type?: unknown; tool_use_id?: unknown };
    if (o.error && (typeof o.error.code === "string" || typeof o.error.code === "number")) return String(o.error.code);
    if (o.ok === false) return "ok:false";
    if (o.is_error === true || o.result?.isError === true || o.status === "failed") return "is_error";
    // The block the page says goes into the next user message: the Messages API refuses one without its tool_use_id.
    if (o.type === "tool_result" && typeof o.tool_use_id !== "string") return "tool_result without tool_use_id";
  }
  return answer.status >= 400 ? `HTTP ${answer.status}` : null;
}

/** The errors a block's comments name: a code of the registry, a JSON-RPC error number, an HTTP status of 400 and up. */
export function namedCodes(block: string): Set<string> {
  const words = shellComments(block).flatMap((c) => c.match(/-?\w+/g) ?? []);
  return new Set(words.filter((w) => w in ERROR_CODES || /^-32\d{3}$/.test(w) || /^[45]\d\d$/.test(w)));
}

/**
 * What is wrong with a block's run, one line each; empty when the block ran as it says: no command
 * failed unchecked, every error answered is one a comment names, and every code a comment names was
 * answered (a comment that promises a 429 the server never gives is as wrong as a broken curl).
 */
export function blockFailures(run: BlockRun): string[] {
  const named = namedCodes(run.block.text);
  const answered = new Set<string>();
  const errors = run.answers.flatMap((a) => {
    const code = answerError(a);
    if (!code) return [];
    answered.add(code).add(String(a.status));
    return named.has(code) || named.has(String(a.status)) ? [] : [`${a.method} ${a.path}: ${code} (${a.status}) ${a.body.slice(0, 300)}`];
  });
  const unseen = [...named].filter((c) => !answered.has(c)).map((c) => `a comment names ${c}, which no answer of the block was`);
  return [...run.failed, ...errors, ...unseen].map((f) => `${run.block.label}: ${f}`);
}

/**
 * Runs `blocks` in one bash (a script file, stdin closed), in order, in `cwd`, after `prelude` (the
 * tour's variables, say) and before `epilogue`.
 * `answers` is the proxy's record; the blocks' requests must go through it.
 */
export async function runPage(opts: { blocks: PastedBlock[]; prelude: string; epilogue?: string; cwd: string; env: Record<string, string>; proxy: string; answers: ProxiedAnswer[]; timeoutMs: number }): Promise<PageRun> {
  const scratch = mkdtempSync(join(tmpdir(), "toolshed-shell-run-"));
  const failFile = join(scratch, "failed");
  const scriptFile = join(scratch, "page.sh");
  writeFileSync(failFile, "");
  const script = [
    opts.prelude,
    `exec 9>>${JSON.stringify(failFile)}`,
    "set -o pipefail",
    "__shell_run_block=0; __shell_run_line=0",
    `trap 'echo "$__shell_run_block $((LINENO - __shell_run_line)) $? $BASH_COMMAND" >&9' ERR`,
    ...opts.blocks.flatMap((b, i) => [`__shell_run_block=${i}; __shell_run_line=$((LINENO + 1)); command curl -s -o /dev/null ${JSON.stringify(`${opts.proxy}${MARKER}${i}`)}`, b.text]),
    opts.epilogue ?? "",
  ].join("\n");
  writeFileSync(scriptFile, script);
  const start = opts.answers.length;
  const { status, stdout, stderr } = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn("bash", ["--norc", "--noprofile", scriptFile], { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      err += `\n(killed after ${opts.timeoutMs} ms)`;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {}
    }, opts.timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ status: code, stdout: out, stderr: err });
    });
  });
  const failed = readFileSync(failFile, "utf8").split("\n").filter(Boolean);
  rmSync(scratch, { recursive: true, force: true });
  const blocks: BlockRun[] = opts.blocks.map((block) => ({ block, failed: [], answers: [] }));
  let current: BlockRun | undefined;
  for (const a of opts.answers.slice(start)) {
    const marker = a.path.startsWith(MARKER) ? Number(a.path.slice(MARKER.length)) : null;
    if (marker !== null) current = blocks[marker];
    else current?.answers.push(a);
  }
  for (const line of failed) {
    const [, block, at, code, command] = line.match(/^(\d+) (-?\d+) (\d+) (.*)$/) ?? [];
    blocks[Number(block)]?.failed.push(`line ${at}: status ${code}: ${command}`);
  }
  return { status, stdout, stderr, blocks };
}
