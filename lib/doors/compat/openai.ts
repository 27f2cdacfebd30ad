/**
 * OpenAI's hosted-harness tools (Responses API), answered by our tools:
 *
 *   apply_patch → apply_patch. The body is the apply_patch_call item ({type, call_id, operation}),
 *                 its operation alone ({type: create_file | update_file | delete_file, path, diff}),
 *                 or a whole V4A patch ({patch} or {input}: '*** Begin Patch' … '*** End Patch').
 *                 Answer: {type: "apply_patch_call_output", call_id, status: "completed" | "failed", output}.
 *   shell       → bash, once per command, in order. The body is the shell_call item ({type, call_id,
 *                 action}) or its action ({commands, timeout_ms?, max_output_length?}).
 *                 Answer: {type: "shell_call_output", call_id, output: [{stdout, stderr, outcome}], max_output_length}.
 *                 A command that is `apply_patch <<'EOF'` … `EOF` (Codex's way) runs apply_patch (shell-patch.ts).
 *
 * The adapter maps fields; every rule is the tool's own.
 */
import { z } from "@hono/zod-openapi";
import { ToolError, isToolError } from "../../shared/errors.js";
import { formatZodError } from "../../contract/errors.js";
import { operationToPatch } from "../../tools/patch/parse.js";
import type { RunTool } from "./types.js";
import { patchInShellCommand } from "./shell-patch.js";
import { discardedNote } from "../../exec/write-back-notes.js";

export const OPENAI_TOOLS = ["apply_patch", "shell"] as const;
export type OpenAITool = (typeof OPENAI_TOOLS)[number];

/** bash's own bounds on a command's timeout, in seconds. */
const MIN_TIMEOUT_S = 1;
const MAX_TIMEOUT_S = 600;

const Operation = z.object({
  type: z.enum(["create_file", "update_file", "delete_file"]),
  path: z.string(),
  diff: z.string().optional(),
});

const ApplyPatchItem = z.object({ type: z.literal("apply_patch_call"), call_id: z.string().optional(), operation: Operation });
const WholePatch = z.object({ patch: z.string() });
const WholeInput = z.object({ input: z.string() });

const Action = z.object({
  commands: z.array(z.string()).min(1).max(50),
  timeout_ms: z.number().int().positive().nullish(),
  max_output_length: z.number().int().positive().nullish(),
});

const ShellItem = z.object({ type: z.literal("shell_call"), call_id: z.string().optional(), action: Action });

/** What each route reads, named in the error of a body it cannot read. */
const TAKES: Record<OpenAITool, string> = {
  apply_patch:
    'an apply_patch_call item {"type": "apply_patch_call", "call_id", "operation": {"type": "create_file" | "update_file" | "delete_file", "path", "diff"}}, its operation alone (the call id in X-Call-Id), or a whole V4A patch {"patch": "*** Begin Patch\\n…\\n*** End Patch"}',
  shell: 'a shell_call item {"type": "shell_call", "call_id", "action": {"commands": ["…"], "timeout_ms"?, "max_output_length"?}}, or its action alone (the call id in X-Call-Id)',
};

/** The shape a body says it is (its type, or the fields it has), so that an error names that shape's own fields. */
function applyPatchShape(b: Record<string, unknown>) {
  if ("operation" in b && (b.type === undefined || b.type === "apply_patch_call")) return ApplyPatchItem;
  if ("patch" in b) return WholePatch;
  if ("input" in b) return WholeInput;
  if (b.type === "apply_patch_call") return ApplyPatchItem;
  if ("path" in b || "diff" in b || Operation.shape.type.safeParse(b.type).success) return Operation;
  return null;
}

function shellShape(b: Record<string, unknown>) {
  if (b.type === "shell_call" || (b.type === undefined && "action" in b)) return ShellItem;
  if ("commands" in b) return Action;
  return null;
}

/** A body that is none of what the route takes: what it looks like. */
function described(b: Record<string, unknown>): string {
  if (typeof b.type === "string") return `a ${JSON.stringify(b.type.slice(0, 80))} item`;
  const keys = Object.keys(b);
  return keys.length ? `an object with ${keys.length === 1 ? "the field" : "the fields"} ${keys.slice(0, 8).join(", ")}${keys.length > 8 ? ", …" : ""}` : "an empty object";
}

/** Reads a body as the shape it says it is; an error names the fields at fault and what the route takes. */
function parse<S extends z.ZodType>(tool: OpenAITool, body: unknown, shapeOf: (b: Record<string, unknown>) => S | null): z.infer<S> {
  const b = body !== null && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const schema = shapeOf(b);
  if (!schema) throw new ToolError("INVALID_ARGUMENT", `The ${tool} route takes ${TAKES[tool]}; this body is ${described(b)}.`, { takes: TAKES[tool] });
  const r = schema.safeParse(b);
  if (!r.success) {
    const { message, issues } = formatZodError(r.error);
    throw new ToolError("INVALID_ARGUMENT", `${message} The ${tool} route takes ${TAKES[tool]}.`, { issues });
  }
  return r.data;
}

/** The call_id a body carries (an item's), if any. */
export function callIdOf(body: unknown): string | undefined {
  const id = (body as { call_id?: unknown } | null)?.call_id;
  return typeof id === "string" ? id : undefined;
}

export interface ApplyPatchOutput {
  type: "apply_patch_call_output";
  call_id?: string;
  status: "completed" | "failed";
  output: string;
}

/** Runs one apply_patch call. Never throws a ToolError: a failed patch is a "failed" item the model reads. */
export async function runApplyPatch(body: unknown, callId: string | undefined, run: RunTool): Promise<{ item: ApplyPatchOutput; error?: ToolError }> {
  const item = (status: ApplyPatchOutput["status"], output: string): ApplyPatchOutput => ({ type: "apply_patch_call_output", ...(callId ? { call_id: callId } : {}), status, output });
  try {
    const b = parse("apply_patch", body, applyPatchShape);
    const patch = "patch" in b ? b.patch : "input" in b ? b.input : operationToPatch("operation" in b ? b.operation : b);
    const r = await run("apply_patch", { patch });
    return { item: item("completed", r.output) };
  } catch (e) {
    if (!isToolError(e)) throw e;
    return { item: item("failed", `${e.code}: ${e.message}`), error: e };
  }
}

export type ShellOutcome = { type: "exit"; exit_code: number } | { type: "timeout" };

export interface ShellOutput {
  type: "shell_call_output";
  call_id?: string;
  output: { stdout: string; stderr: string; outcome: ShellOutcome }[];
  max_output_length: number | null;
}

/** Exit code reported for a command our guard rails or the service refused before it ran (as a shell's 126). */
const NOT_RUN_EXIT = 126;

/**
 * Runs the commands of one shell call, in order; each gets its own output entry. The first error met is returned beside the item.
 * `live`: the deployment has live sessions, whose sandbox the session may hold (another door's keep_alive): each command runs
 * fresh beside it and leaves it alone (keep_alive: false), never ending it (docs/live-sessions.md).
 */
export async function runShell(body: unknown, callId: string | undefined, run: RunTool, opts: { live?: boolean } = {}): Promise<{ item: ShellOutput; error?: ToolError }> {
  const b = parse("shell", body, shellShape);
  const action = "action" in b ? b.action : b;
  const max = action.max_output_length ?? null;
  const timeout = action.timeout_ms ? Math.min(MAX_TIMEOUT_S, Math.max(MIN_TIMEOUT_S, Math.ceil(action.timeout_ms / 1000))) : undefined;
  const output: ShellOutput["output"] = [];
  let error: ToolError | undefined;
  for (const command of action.commands) {
    const patch = patchInShellCommand(command);
    if (patch !== null) {
      const r = await patchAsCommand(patch, run, max);
      output.push(r.entry);
      if (r.error) error ??= r.error;
      continue;
    }
    try {
      // OpenAI's shell runs each command in a fresh shell at the workspace root (models trained on it
      // write `cd dir && cmd`): restart, so the session's working directory (docs/shell-sessions.md) never carries over.
      const r = await run("bash", { command, restart: true, ...(opts.live ? { keep_alive: false } : {}), ...(timeout ? { timeout } : {}) });
      const d = r.data as { stdout: string; stderr: string; exit_code: number; notes?: string };
      output.push({ stdout: cut(d.stdout, max), stderr: cut(withNotes(d.stderr, d.notes ?? ""), max), outcome: { type: "exit", exit_code: d.exit_code } });
    } catch (e) {
      if (!isToolError(e)) throw e;
      error ??= e;
      const d = e.details as { stdout?: string; stderr?: string };
      if (e.code === "TIMEOUT") {
        output.push({ stdout: cut(d.stdout ?? "", max), stderr: cut(withNotes(d.stderr ?? "", discardedNote({ discarded: stringsOf(e.details.discarded), ...(typeof e.details.discarded_count === "number" ? { discarded_count: e.details.discarded_count } : {}) }, "timed out", "Run it again with a larger timeout_ms.")), max), outcome: { type: "timeout" } });
      } else {
        const stderr = `${d.stderr ? `${d.stderr}\n` : ""}toolshed: ${e.code}: ${e.message}`;
        output.push({ stdout: cut(d.stdout ?? "", max), stderr: cut(stderr, max), outcome: { type: "exit", exit_code: NOT_RUN_EXIT } });
      }
    }
  }
  return { item: { type: "shell_call_output", ...(callId ? { call_id: callId } : {}), output, max_output_length: max }, ...(error ? { error } : {}) };
}

/**
 * What bash's output tells the model beyond the command's own streams, one "[...]" line each: bash's data.notes, the
 * lines its own output adds (the write-back's: symlinks, empty directories, execute bits, refused or unsynced writes,
 * conflicts, lists cut; a live sandbox left alone; the shell's). The shell item has no place but the streams, so they
 * go after the command's stderr (stdout stays the program's own bytes).
 */
function withNotes(stderr: string, notes: string): string {
  if (!notes) return stderr;
  return `${stderr}${stderr && !stderr.endsWith("\n") ? "\n" : ""}${notes.replace(/^\n/, "")}\n`;
}

const stringsOf = (v: unknown): string[] => (Array.isArray(v) ? v.filter((p): p is string => typeof p === "string") : []);

/** A patch sent as `apply_patch <<'EOF'` (shell-patch.ts): the apply_patch tool's answer as the command's. */
async function patchAsCommand(patch: string, run: RunTool, max: number | null): Promise<{ entry: ShellOutput["output"][number]; error?: ToolError }> {
  try {
    const r = await run("apply_patch", { patch });
    return { entry: { stdout: cut(`${r.output}\n`, max), stderr: "", outcome: { type: "exit", exit_code: 0 } } };
  } catch (e) {
    if (!isToolError(e)) throw e;
    return { entry: { stdout: "", stderr: cut(`apply_patch: ${e.code}: ${e.message}\n`, max), outcome: { type: "exit", exit_code: 1 } }, error: e };
  }
}

/** At most `max` characters: the head and the tail, with a marker saying how many were left out. */
export function cut(text: string, max: number | null): string {
  if (max === null || text.length <= max) return text;
  const marker = (n: number) => `\n…[${n} characters cut]…\n`;
  const room = max - marker(text.length).length;
  if (room < 2) return text.slice(0, max);
  const head = Math.ceil(room / 2);
  const tail = room - head;
  return text.slice(0, head) + marker(text.length - head - tail) + (tail ? text.slice(text.length - tail) : "");
}
