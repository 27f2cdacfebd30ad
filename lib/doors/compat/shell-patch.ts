/**
 * `apply_patch` in an OpenAI shell command, taken as Codex's harness takes it. Models trained on
 * Codex send a patch through the shell tool as `apply_patch <<'EOF'` … `EOF` (the V4A patch as
 * a heredoc, sometimes after `cd <dir> &&`); the sandbox has no such program, so the command would
 * answer "command not found" and the model would retry blind. The shell adapter (openai.ts) runs
 * the apply_patch tool instead, through the one tool path (the key's scope, preset and approval
 * rules for apply_patch, not bash's), and answers as the command would: the tool's output on
 * stdout with exit 0, or its error on stderr with exit 1. Only a command that is exactly that form
 * is taken (the heredoc's body a patch, nothing after its end); anything else goes to bash.
 */
import { SANDBOX_ROOT } from "../../layout/paths.js";

/** `[cd <dir> &&] apply_patch <<[-]['"]DELIM['"]` newline, the body, newline, DELIM, then only blanks. */
const HEREDOC =
  /^\s*(?:cd\s+(?:'([^']*)'|"([^"\\$`]*)"|([^\s'"\\$`&;|<>()]+))\s*&&\s*)?(?:apply_patch|applypatch)\s*<<-?\s*(['"]?)([A-Za-z_][\w.-]*)\4[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*\5[ \t]*(?:\r?\n\s*)?$/;

/** The patch a shell command sends to `apply_patch`, its file paths taken from the `cd` before it; null when the command is not that form. */
export function patchInShellCommand(command: string): string | null {
  const m = HEREDOC.exec(command);
  if (!m) return null;
  const patch = m[6]!;
  if (!patch.trimStart().startsWith("*** Begin Patch")) return null;
  const dir = (m[1] ?? m[2] ?? m[3] ?? "").replace(/(.)\/+$/, "$1"); // trailing slashes off, "/" kept
  // An absolute directory is the workspace's only at or under the sandbox's root, /workspace (whose paths
  // normalizePath maps, as every tool's); any other is outside it: left to bash.
  if (dir.startsWith("/") && dir !== `/${SANDBOX_ROOT}` && !dir.startsWith(`/${SANDBOX_ROOT}/`)) return null;
  if (dir === "" || dir === ".") return patch;
  return patch.replace(/^(\*\*\* (?:Add|Delete|Update) File: |\*\*\* Move to: )(.+)$/gm, (_, head: string, path: string) => head + (path.startsWith("/") ? path : `${dir}/${path}`));
}
