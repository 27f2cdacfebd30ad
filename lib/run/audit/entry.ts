/**
 * One audit entry: who did what, by which door, with what outcome (docs/audit.md).
 *
 * An entry names paths and sizes, never contents: an argument that is not a path or an id is
 * kept as its size (`content_bytes`, `command_bytes`), a URL as its host, a list as its length.
 * Nothing a model wrote, no command text, no header, no secret is ever copied into an entry.
 */
import { randomId } from "../../shared/hash.js";

/** Which door a call came through. */
export type AuditDoor = "http" | "sse" | "mcp" | "compat-anthropic" | "compat-openai" | "pending-approval" | "task" | "admin" | "runner";

export interface AuditEntry {
  /** Time-ordered id (its time, then 10 random characters): the key of the entry and the paging cursor. */
  id: string;
  /** ISO time the call ended. */
  at: string;
  tenant: string;
  /** Absent on tenant-level entries that name no workspace. */
  workspace?: string;
  /** The API key's id, or "admin" for the admin token. */
  key_id: string;
  session?: string;
  door: AuditDoor;
  /** A tool call: the tool's name. */
  tool?: string;
  /** Any other call: its method and route, as the API reference names it ("DELETE /v1/workspaces/{ws}/files/{path}"). */
  route?: string;
  /** Paths, ids, numbers, flags and the sizes of everything else. */
  args: Record<string, unknown>;
  /** `replayed`: the kept answer of an Idempotency-Key given again; nothing ran. */
  outcome: { ok: boolean; status: number; code?: string; replayed?: true };
  /** The files the call changed, as its undo record or its result names them (at most MAX_FILES). */
  files?: string[];
  /** The call's undo id (POST /v1/workspaces/{ws}/undo), which usage records name too. */
  call_id?: string;
}

export const MAX_FILES = 100;
const MAX_KEPT_CHARS = 512;
/**
 * Arguments kept as they are: workspace paths and ids. Not a background task's `task_id` nor a cut
 * output's `output_file` (bash_output, kill_shell, task_output): they are what reads that output, told
 * only to the call that made them (docs/shell-sessions.md), so the log, which other keys read, keeps
 * their sizes.
 */
const KEPT_STRINGS = new Set(["path", "file_path", "from", "to", "working_dir", "prefix", "pending_id", "call_id", "checkpoint", "id", "key_id", "name", "tenant", "ws", "preset"]);
/** Arguments that pick one of a route's named choices (uploads' all|each, import's merge|replace): kept as given, as flags are, while they look like a choice's name. */
const KEPT_CHOICES = new Set(["mode"]);
const CHOICE = /^[a-z][a-z_-]{0,31}$/;

/** `20261128T073254123Z-abcdefghij`: sorts by time; ties broken at random. */
export function newAuditId(now = new Date()): string {
  return `${compactTime(now)}-${randomId(10)}`;
}

/** An ISO time as the first part of an id (`20261128T073254123Z`): ids after it sort after it. */
export function compactTime(t: Date): string {
  return t.toISOString().replace(/[-:.]/g, "");
}

const byteLength = (s: string) => new TextEncoder().encode(s).length;

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

/** What an entry keeps of a call's arguments: paths and ids as they are, everything else as a size. */
export function summarizeArgs(args: unknown): Record<string, unknown> {
  if (args === null || typeof args !== "object" || Array.isArray(args)) return args === undefined ? {} : { args_bytes: byteLength(JSON.stringify(args) ?? "") };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args as Record<string, unknown>)) {
    if (v === null || v === undefined) continue;
    if (typeof v === "number" || typeof v === "boolean") out[k] = v;
    else if (typeof v === "string") {
      if (KEPT_STRINGS.has(k)) out[k] = v.length > MAX_KEPT_CHARS ? `${v.slice(0, MAX_KEPT_CHARS)}…` : v;
      else if (KEPT_CHOICES.has(k) && CHOICE.test(v)) out[k] = v;
      else if (k === "url") {
        const host = hostOf(v);
        if (host) out.url_host = host;
        out.url_bytes = byteLength(v);
      } else out[`${k}_bytes`] = byteLength(v);
    } else if (Array.isArray(v)) out[`${k}_items`] = v.length;
    else out[`${k}_bytes`] = byteLength(JSON.stringify(v));
  }
  return out;
}

/**
 * A tool call's `args` in its entry: the tool's arguments summarized, whoever writes the entry (the run,
 * lib/run/audit/tool-call.ts; the route guard for a call that did not run: a replay of its
 * Idempotency-Key, a refusal before the tool, lib/api/routes/audit-calls.ts), so both have one shape.
 */
export const toolCallArgs = (rawArgs: unknown): Record<string, unknown> => summarizeArgs(rawArgs);

/** Result fields that name changed files. */
const FILE_FIELDS = ["path", "file_path", "from", "to"];
const FILE_LISTS = ["files", "files_changed", "files_deleted", "changed", "created", "modified", "deleted", "written", "removed", "restored"];

/** The files a call touched: those its undo record named, then those its result names. */
export function filesTouched(journal: readonly string[] | undefined, data: Record<string, unknown> | undefined): string[] {
  const files = new Set<string>(journal ?? []);
  for (const f of FILE_FIELDS) if (typeof data?.[f] === "string") files.add(data[f] as string);
  for (const f of FILE_LISTS) {
    const list = data?.[f];
    if (!Array.isArray(list)) continue;
    for (const x of list) {
      // An item that says it failed (a batch upload's refused file: `ok: false`) changed nothing.
      const item = x && typeof x === "object" ? (x as { path?: unknown; ok?: unknown }) : null;
      const p = typeof x === "string" ? x : item && item.ok !== false && typeof item.path === "string" ? item.path : null;
      if (p !== null) files.add(p);
    }
  }
  return [...files].slice(0, MAX_FILES);
}
