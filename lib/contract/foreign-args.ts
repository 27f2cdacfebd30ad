/**
 * Other tool systems' spellings of our tools' arguments, by tool: what a model trained on Claude
 * Code, Codex, opencode or Gemini CLI sends where our name differs. The one argument parser
 * (tool-args.ts) refuses such an argument like any unknown one, and its message names ours: these
 * entries come first, before a close spelling or the generic synonyms of lib/shared/suggest.ts.
 * None is accepted as an alias: the schema the model reads names one argument for each thing.
 *
 * Keys are the spellings as models send them, compared folded (case, '-' and '_' do not count, as
 * in suggest.ts). `arg` is the tool's own argument (test/lib/contract/foreign-args.test.ts checks
 * that every entry names one the tool has); `hint`, when the spelling means more than a rename, is
 * the whole sentence said instead of "Did you mean ...?", and names `arg` in quotes.
 */
import { fold } from "../shared/suggest.js";

export interface ForeignArg {
  arg: string;
  hint?: string;
}

/** bash's and run_code's refusal of a timeout over 600: a model trained on Claude Code's Bash sends milliseconds (120000). */
export const TIMEOUT_TOO_BIG = "Too big: at most 600. timeout is in seconds, not milliseconds";

const TIMEOUT_IN_SECONDS: ForeignArg = { arg: "timeout", hint: "Use 'timeout', in seconds (at most 600), not milliseconds." };
const HIDDEN: ForeignArg = { arg: "include_hidden" };
const IGNORED: ForeignArg = { arg: "include_ignored", hint: "Use 'include_ignored': true to search .gitignore'd files too (respect_git_ignore: false); they are left out by default." };

export const FOREIGN_ARGS: Readonly<Record<string, Readonly<Record<string, ForeignArg>>>> = {
  read: { path: { arg: "file_path" }, absolute_path: { arg: "file_path" } },
  write: { path: { arg: "file_path" }, absolute_path: { arg: "file_path" } },
  edit: {
    path: { arg: "file_path" },
    old_text: { arg: "old_string" },
    new_text: { arg: "new_string" },
    expected_replacements: { arg: "replace_all", hint: "Use 'replace_all': true to replace every occurrence; without it old_string must occur exactly once." },
  },
  multi_edit: { path: { arg: "file_path" } },
  insert: { path: { arg: "file_path" } },
  // Claude Code's Grep takes ripgrep's flags as argument names; opencode's, Crush's and Gemini's take `include`.
  grep: {
    "-i": { arg: "case_insensitive" },
    "-A": { arg: "after" },
    "-B": { arg: "before" },
    "-C": { arg: "context" },
    "-n": { arg: "output_mode", hint: "Line numbers need no argument: 'output_mode': \"content\" shows them on every line; drop '-n'." },
    include: { arg: "glob" },
    context_lines: { arg: "context" },
    case_sensitive: { arg: "case_insensitive", hint: "Case counts unless 'case_insensitive' is true (the opposite of case_sensitive)." },
    literal_text: { arg: "literal" },
    fixed_strings: { arg: "literal" },
    max_results: { arg: "head_limit" },
    limit: { arg: "head_limit" },
    show_hidden: HIDDEN,
    respect_git_ignore: IGNORED,
  },
  glob: { show_hidden: HIDDEN, respect_git_ignore: IGNORED, max_results: { arg: "limit" } },
  find: { show_hidden: HIDDEN, respect_git_ignore: IGNORED, name: { arg: "pattern" }, limit: { arg: "max_results" } },
  ls: { dir_path: { arg: "path" }, include_hidden: { arg: "show_hidden" }, all: { arg: "show_hidden" } },
  // Codex's shell takes workdir and timeout_ms; Claude Code's Bash takes timeout in milliseconds (see bash's own timeout).
  bash: { timeout_ms: TIMEOUT_IN_SECONDS, workdir: { arg: "working_dir" }, directory: { arg: "working_dir" } },
  run_code: { timeout_ms: TIMEOUT_IN_SECONDS },
  // Claude Code's BashOutput and KillShell name the task bash_id and shell_id.
  bash_output: { bash_id: { arg: "task_id" }, shell_id: { arg: "task_id" } },
  kill_shell: { bash_id: { arg: "task_id" }, shell_id: { arg: "task_id" } },
};

/** The tool's entry for an argument spelled `name` the way another tool system spells it, if any. */
export function foreignArg(tool: string | undefined, name: string): ForeignArg | null {
  const table = tool === undefined ? undefined : FOREIGN_ARGS[tool];
  if (!table) return null;
  const f = fold(name);
  for (const [spelling, entry] of Object.entries(table)) if (fold(spelling) === f) return entry;
  return null;
}
