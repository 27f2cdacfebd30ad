/**
 * A run request as it comes from the wire, before anything runs: its checks (validateRequest:
 * the limits with defaults filled in), its stable run id, and when its write-back must stop
 * starting changes. Node only (the runner's; never bundled for Workers).
 */
import { createHash } from "node:crypto";
import { ToolError } from "../../lib/shared/errors.js";
import { ID_PATTERN } from "../../lib/layout/paths.js";
import { validateGitIdentity } from "../../lib/exec/git-identity.js";
import { MAX_OUTPUT_EVERY_MS, MIN_OUTPUT_EVERY_MS, type RunLimits, type RunRequest } from "../../lib/exec/types.js";
import { LIVE_IDLE_MS_MAX, LIVE_MAX_LIFE_MS } from "../../lib/sync/live-types.js";
import { validateShell } from "./shell-state.js";
import { DEFAULT_LIMITS } from "./sandbox.js";

const MAX_TIMEOUT_MS = 15 * 60 * 1000;
const LIMIT_MAX: RunLimits = { disk_mb: 1_048_576, memory_mb: 16_384, address_space_mb: 262_144, file_size_mb: 8_192, processes: 4096, cpu_seconds: 3600, open_files: 65_536, tmp_mb: 8_192, sandbox_memory_mb: 65_536, output_bytes: 1_000_000, max_writeback_files: 100_000, writeback_ms: 3_600_000 };

const bad = (msg: string) => new ToolError("INVALID_ARGUMENT", msg);

/** Checks a request from the wire; returns its limits with defaults filled in. */
export function validateRequest(req: RunRequest): RunLimits {
  if (!req || typeof req !== "object") throw bad("The event is not a run request.");
  if (req.version !== 1) throw bad(`Unsupported request version ${String(req.version)}; this function speaks version 1.`);
  if (typeof req.tenant !== "string" || !ID_PATTERN.test(req.tenant)) throw bad("Bad tenant id.");
  if (typeof req.workspace !== "string" || !ID_PATTERN.test(req.workspace)) throw bad("Bad workspace id.");
  if (typeof req.idempotency_key !== "string" || req.idempotency_key.length < 1 || req.idempotency_key.length > 200) throw bad("idempotency_key must be 1-200 characters.");
  if (req.live !== undefined) validateLive(req);
  else if (typeof req.command !== "string" || req.command.trim() === "") throw bad("command must be a non-empty string.");
  if (req.command.length > 100_000 || req.command.includes("\0")) throw bad("command is longer than 100000 characters or contains NUL.");
  if (!Number.isInteger(req.timeout_ms) || req.timeout_ms < 1 || req.timeout_ms > MAX_TIMEOUT_MS) throw bad(`timeout_ms must be an integer from 1 to ${MAX_TIMEOUT_MS}.`);
  if (req.stdin !== undefined && (typeof req.stdin !== "string" || req.stdin.length > 4_000_000)) throw bad("stdin must be a string of at most 4 MB.");
  if (!req.sync || typeof req.sync.url !== "string" || typeof req.sync.token !== "string") throw bad("sync {url, token} is required.");
  if (!/^https?:\/\/[^/]/.test(req.sync.url) || !URL.canParse(req.sync.url)) throw bad("sync.url must be an http(s) URL.");
  if (req.git !== undefined) validateGitIdentity(req.git);
  if (req.shell !== undefined) validateShell(req.shell);
  for (const list of [req.egress_domains?.allowed_domains, req.egress_domains?.blocked_domains])
    if (list !== undefined && (!Array.isArray(list) || list.length > 1000 || !list.every((d) => typeof d === "string" && d.length <= 253))) throw bad("egress_domains lists must be arrays of at most 1000 domains.");
  if (req.output_every_ms !== undefined && (!Number.isInteger(req.output_every_ms) || req.output_every_ms < MIN_OUTPUT_EVERY_MS || req.output_every_ms > MAX_OUTPUT_EVERY_MS))
    throw bad(`output_every_ms must be an integer from ${MIN_OUTPUT_EVERY_MS} to ${MAX_OUTPUT_EVERY_MS}.`);
  for (const [k, v] of Object.entries(req.env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(k)) throw bad(`Bad environment variable name ${JSON.stringify(k)}.`);
    if (typeof v !== "string" || v.includes("\0") || v.length > 100_000) throw bad(`Bad value of environment variable ${k}.`);
  }
  const limits = { ...DEFAULT_LIMITS };
  for (const [k, v] of Object.entries(req.limits ?? {})) {
    const key = k as keyof RunLimits;
    if (!(key in LIMIT_MAX)) throw bad(`Unknown limit ${k}.`);
    if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > LIMIT_MAX[key]) throw bad(`Limit ${k} must be an integer from 0 to ${LIMIT_MAX[key]}.`);
    limits[key] = v as number;
  }
  return limits;
}

/** RunRequest.live: a live sandbox's start (lib/sync/live-types.ts), whose command is empty. */
function validateLive(req: RunRequest): void {
  const l = req.live;
  if (!l || typeof l !== "object") throw bad("live must be an object.");
  if (req.command !== "") throw bad("A live sandbox's start has no command of its own (command must be empty): it takes its commands from the live channel.");
  if ((req as { task?: unknown }).task !== undefined) throw bad("A live sandbox's start cannot be a background task.");
  if (typeof l.generation !== "string" || l.generation.length < 1 || l.generation.length > 200) throw bad("live.generation must be 1-200 characters.");
  if (!Number.isInteger(l.idle_ms) || l.idle_ms < 1 || l.idle_ms > LIVE_IDLE_MS_MAX) throw bad(`live.idle_ms must be an integer from 1 to ${LIVE_IDLE_MS_MAX}.`);
  if (!Number.isInteger(l.max_life_ms) || l.max_life_ms < 1 || l.max_life_ms > LIVE_MAX_LIFE_MS) throw bad(`live.max_life_ms must be an integer from 1 to ${LIVE_MAX_LIFE_MS}.`);
}

/** The least time a write-back gets after its command, however long the command ran. */
export const MIN_WRITEBACK_MS = 10_000;

/**
 * When the write-back stops starting changes (writeback.ts): `writebackMs` after the command
 * when set; else the run's timeout counted from the start of the run, but never less than
 * max(10 s, timeout / 4) after the command. A run thus answers within about 1.25 × its
 * timeout (at least timeout + 10 s) plus fetching the workspace and the requests in flight,
 * never minutes later for a command that made 20,000 files.
 */
export function writeBackDeadline(runStart: number, commandEnd: number, timeoutMs: number, writebackMs: number): number {
  if (writebackMs > 0) return commandEnd + writebackMs;
  return Math.max(runStart + timeoutMs, commandEnd + Math.max(MIN_WRITEBACK_MS, timeoutMs / 4));
}

/** Stable per call: a retry writes the same output file. */
export const runIdOf = (req: RunRequest): string =>
  "r" + createHash("sha256").update(`${req.tenant}\0${req.workspace}\0${req.idempotency_key}`).digest("hex").slice(0, 15);
