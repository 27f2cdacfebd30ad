/**
 * A session's shell, replayed (RunRequest.shell): the command is wrapped so that it starts in the
 * state the session's previous command ended in (working directory; with keep "all" also exported
 * variables and shell functions), and the shell saves the state it ends in to files of a private
 * scratch directory (a fresh one per run, outside the workspace tree: never written back), which
 * the runner reads after the sandbox has ended. Node only.
 *
 * The saved state is the command's own and goes back only to its own session (the API keys it by
 * tenant, workspace and session). What the runner sets itself (HOME, TMPDIR, the egress proxy's
 * variables, TOOLSHED_*, ...) is never kept: a variable is kept only when the command (or an
 * earlier command of the session) set it to something other than what the shell started with.
 */
import { constants, promises as fs } from "node:fs";
import { join } from "node:path";
import { ToolError } from "../../lib/shared/errors.js";
import { normalizePath } from "../../lib/layout/paths.js";
import { MAX_SHELL_STATE_BYTES, type ShellRequest, type ShellState } from "../../lib/exec/types.js";
import { shellQuote } from "./sandbox.js";
import { opaqueName } from "./opaque-name.js";
import type { Owner } from "./tree.js";

/** Variables the runner or bash set: never kept, whatever the command did to them. */
const NEVER_KEPT = /^(HOME|TMPDIR|USER|LOGNAME|LANG|TERM|PWD|OLDPWD|SHLVL|_|HOSTNAME|SHELLOPTS|BASHOPTS|BASH_.*|TOOLSHED_.*|(HTTPS?|FTP|ALL|NO)_PROXY)$/i;
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Largest file of the scratch directory read back; a bigger one (the command wrote it, or its state is huge) counts as over the bound. */
const MAX_FILE_BYTES = 4 * MAX_SHELL_STATE_BYTES;

/** A run's scratch directory for its shell's state, in the staging directory. */
export interface ShellDir {
  path: string;
  drop: () => Promise<void>;
}

/** The run's scratch directory for its shell's state: made fresh, writable by the command's user, removed by `drop`. */
export async function makeShellDir(parent: string, owner: Owner): Promise<ShellDir> {
  const path = join(parent, opaqueName("sh-")); // the sandbox's mountinfo shows it
  const drop = () => fs.rm(path, { recursive: true, force: true });
  await fs.mkdir(path, { mode: 0o700 });
  if (owner) await fs.chown(path, owner.uid, owner.gid).catch(async (e: unknown) => {
    await drop(); // nothing left in the staging directory
    throw e;
  });
  return { path, drop };
}

/** `"${!A@}" ... "${!_@}"`: the names of every set shell variable, one word each whatever IFS holds (a name starts with a letter or `_`). */
const EVERY_NAME = [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"].map((c) => `"\${!${c}@}"`).join(" ");

/**
 * The exported variables as NUL-separated name, value pairs into `file` (a shell word). Builtins
 * only: `$(compgen -e)` would fork a subshell, and a process costs the sandbox ~6-10 ms on a VM
 * (test/infra/container/run-processes.node.test.ts). Safe under `set -u` (`-v` first) and `set -e`.
 */
export const envTo = (file: string) =>
  `for __toolshed_n in ${EVERY_NAME}; do if [[ -v $__toolshed_n && \${!__toolshed_n@a} == *x* ]]; then printf '%s\\0%s\\0' "$__toolshed_n" "\${!__toolshed_n}"; fi; done >|${file}`;

/**
 * Lines that restore `shell.state` in a shell whose workspace root is `$__toolshed_root`: exported
 * variables and functions (keep "all"), then the saved working directory unless the run names its
 * own (`cwd`, working_dir, which wins). Shared by fresh runs (wrapCommand) and live sandboxes (live-shell.ts).
 */
export function restoreLines(shell: ShellRequest, cwd: string): string[] {
  const lines: string[] = [];
  const state = shell.state;
  if (state && shell.keep === "all") {
    for (const [k, v] of Object.entries(state.env ?? {})) if (NAME.test(k) && !NEVER_KEPT.test(k)) lines.push(`export ${k}=${shellQuote(v)} 2>/dev/null`);
    if (state.functions) lines.push(`eval ${shellQuote(state.functions)} 2>/dev/null`);
  }
  if (state?.cwd && !cwd) {
    // The directory as the previous command's pwd showed it (the root as the shell sees it, e.g. /workspace/sub), not a path of its own.
    const note = `[toolshed: the working directory %s of this session's previous command no longer exists; this command runs in the workspace root]\\n`;
    lines.push(`cd -- "$__toolshed_root"/${shellQuote(state.cwd)} 2>/dev/null || printf ${shellQuote(note)} "$__toolshed_root"/${shellQuote(state.cwd)} >&2`);
  }
  return lines;
}

/**
 * Saves the shell's state (what readShellState reads) into `d` (a shell word: the scratch directory
 * as the shell sees it): its working directory, and with keep "all" its exported variables and functions.
 * `>|`: a shell with noclobber set (`set -C`) overwrites them too, after every command of a live shell.
 */
export const saveScript = (d: string, keep: ShellRequest["keep"] = "all"): string =>
  `{ printf '%s' "$PWD" >|${d}/cwd; printf '%s' "$__toolshed_root" >|${d}/root;${keep === "all" ? ` ${envTo(`${d}/env`)}; declare -f >|${d}/functions;` : ""} } 2>/dev/null`;

/**
 * The script that runs `command` (by eval, in the same shell) between the restore of `shell.state`
 * and the save of the shell's state into `dir` (the scratch directory as the command sees it).
 * `cwd`: the run's working directory (working_dir), which then wins over the saved one.
 */
export function wrapCommand(command: string, shell: ShellRequest, dir: string, cwd: string): string {
  const d = shellQuote(dir);
  const lines = [
    // The workspace root as the shell sees it: the start directory less the run's cwd.
    `__toolshed_root=\${PWD%${cwd ? shellQuote(`/${cwd}`) : '""'}}`,
    // What the shell starts with (keep "all": a variable is kept only when the command changed it).
    ...(shell.keep === "all" ? [`{ ${envTo(`${d}/base`)}; } 2>/dev/null`] : []),
    ...restoreLines(shell, cwd),
  ];
  // Saved on every way out: the end of the command, `exit`, `set -e`. (A command that replaces the EXIT trap is still saved when it ends by itself.)
  lines.push(`__toolshed_save=${shellQuote(saveScript(d, shell.keep))}`, `trap 'eval "$__toolshed_save"' EXIT`);
  return commandOnFirstLine(lines, command, [`__toolshed_rc=$?`, `eval "$__toolshed_save"`, `exit $__toolshed_rc`]);
}

/**
 * A script that runs `before`, then `command`, then `after`, with the command's line numbers its own
 * (bash's `line N:` in errors, `$LINENO`), as `bash -c` gives them. Bash numbers the lines of an
 * eval'd text from the line the eval is on, and counts the newlines of a quoted word of the script
 * itself: a command quoted on line 5, or after a multi-line quoted word, had its line 2 reported as
 * line 7. So both evals sit on the script's first line and take ANSI-C quoted words ($'…', one
 * physical line), which move no line count. Shared by fresh runs and live sandboxes (live-command.ts).
 */
export function commandOnFirstLine(before: string[], command: string, after: string[] = []): string {
  const first = (before.length ? `eval ${oneLineWord(before.join("\n"))}; ` : "") + `eval ${oneLineWord(command)}`;
  return [first, ...after].join("\n");
}

/** `s` as one shell word on one physical line: $'…' with backslash, quote, newline and carriage return escaped (bash reads every other byte as it is). */
const oneLineWord = (s: string): string => `$'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n").replace(/\r/g, "\\r")}'`;

/** A file of the scratch directory, never through a link or into anything but a regular file (the command could have put anything there); null if absent or too big. */
async function readOwn(path: string): Promise<Buffer | null> {
  const h = await fs.open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null);
  if (!h) return null;
  try {
    const st = await h.stat();
    if (!st.isFile() || st.size > MAX_FILE_BYTES) return null;
    const buf = Buffer.alloc(st.size);
    const { bytesRead } = await h.read(buf, 0, st.size, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await h.close();
  }
}

function pairs(buf: Buffer | null): Map<string, string> {
  const out = new Map<string, string>();
  if (!buf) return out;
  const parts = buf.toString("utf8").split("\0");
  for (let i = 0; i + 1 < parts.length; i += 2) if (NAME.test(parts[i]!)) out.set(parts[i]!, parts[i + 1]!);
  return out;
}

/**
 * What the model is told when the shell ended in a directory that cannot be kept, or with state too
 * big to keep. A fresh sandbox's shell ends with its command, so the next command starts from what is
 * saved; a live session's shell goes on (it stays where it is, its variables stay), and only a new
 * sandbox (the live one ended or lost) starts from what is saved.
 */
const NOTES = {
  fresh: {
    cwdUnkept: (abs: string) => `[toolshed: the working directory ${abs} cannot be kept; the next command starts in the workspace root]`,
    cwdOutside: (abs: string) => `[toolshed: the working directory ${abs} is outside the workspace and is not kept; the next command starts in the workspace root]`,
    stateTooBig: `[toolshed: this shell's exported variables and functions take more than ${MAX_SHELL_STATE_BYTES / 1024} KiB; they are NOT kept for the next command (its working directory is). Unset what you no longer need, or write large values to a file.]`,
  },
  live: {
    cwdUnkept: (abs: string) => `[toolshed: the working directory ${abs} cannot be saved; this session's live shell stays there for its next commands, but if its sandbox ends the next command starts in the workspace root]`,
    cwdOutside: (abs: string) => `[toolshed: the working directory ${abs} is outside the workspace; this session's live shell stays there for its next commands, but if its sandbox ends the next command starts in the workspace root]`,
    stateTooBig: `[toolshed: this shell's exported variables and functions take more than ${MAX_SHELL_STATE_BYTES / 1024} KiB; the live shell keeps them for its next commands, but they are NOT saved: if its sandbox ends, the next command starts without them (its working directory is saved). Unset what you no longer need, or write large values to a file.]`,
  },
} as const;

/**
 * The state the shell saved in `dir`, or null when it saved none (killed, timed out, `exec`).
 * `shell`: "fresh" (the shell ended with the command) or "live" (a live session's shell, which goes on); the notes say which.
 */
export async function readShellState(dir: string, keep: ShellRequest["keep"], shell: keyof typeof NOTES = "fresh"): Promise<{ state: ShellState; notes: string[] } | null> {
  const say = NOTES[shell];
  const [pwd, root] = await Promise.all([readOwn(join(dir, "cwd")), readOwn(join(dir, "root"))]);
  if (pwd === null || root === null) return null;
  const notes: string[] = [];
  const abs = pwd.toString("utf8");
  const top = root.toString("utf8");
  let cwd = "";
  if (abs === top || abs.startsWith(`${top}/`)) {
    try {
      cwd = normalizePath(abs.slice(top.length));
    } catch {
      notes.push(say.cwdUnkept(abs));
    }
  } else notes.push(say.cwdOutside(abs));
  const state: ShellState = { cwd };
  if (keep !== "all") return { state, notes };
  const [base, env, fns] = await Promise.all([readOwn(join(dir, "base")), readOwn(join(dir, "env")), readOwn(join(dir, "functions"))]);
  const started = pairs(base);
  const kept: Record<string, string> = {};
  let bytes = 0;
  for (const [k, v] of pairs(env)) {
    if (NEVER_KEPT.test(k) || started.get(k) === v) continue;
    kept[k] = v;
    bytes += k.length + Buffer.byteLength(v);
  }
  const functions = fns?.toString("utf8") ?? "";
  bytes += Buffer.byteLength(functions);
  if (env === null || fns === null || bytes > MAX_SHELL_STATE_BYTES) {
    notes.push(say.stateTooBig);
    return { state, notes };
  }
  if (Object.keys(kept).length) state.env = kept;
  if (functions) state.functions = functions;
  return { state, notes };
}

/** Checks RunRequest.shell from the wire (INVALID_ARGUMENT otherwise). */
export function validateShell(shell: ShellRequest): void {
  const bad = (msg: string) => new ToolError("INVALID_ARGUMENT", `shell: ${msg}`);
  if (!shell || typeof shell !== "object" || (shell.keep !== "cwd" && shell.keep !== "all")) throw bad('keep must be "cwd" or "all".');
  const st = shell.state;
  if (st === undefined) return;
  if (!st || typeof st !== "object" || typeof st.cwd !== "string") throw bad("state.cwd must be a string.");
  if (st.cwd !== normalizePath(st.cwd)) throw bad("state.cwd must be a canonical workspace path.");
  if (st.functions !== undefined && (typeof st.functions !== "string" || st.functions.includes("\0"))) throw bad("state.functions must be a string without NUL.");
  let bytes = Buffer.byteLength(st.functions ?? "");
  for (const [k, v] of Object.entries(st.env ?? {})) {
    if (!NAME.test(k) || typeof v !== "string" || v.includes("\0")) throw bad(`bad variable ${JSON.stringify(k.slice(0, 130))}.`);
    bytes += k.length + Buffer.byteLength(v);
  }
  if (bytes > MAX_SHELL_STATE_BYTES) throw bad(`state is over ${MAX_SHELL_STATE_BYTES} bytes.`);
}
