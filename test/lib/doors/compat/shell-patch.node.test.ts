/**
 * Which shell commands the OpenAI shell adapter takes as `apply_patch` (lib/doors/compat/shell-patch.ts),
 * and the paths it gives the patch from the `cd` before it: a directory in the workspace (relative, or at
 * or under /workspace, the root as bash shows it) prefixes the patch's paths; any other absolute
 * directory, "/" included, is outside the workspace and the command is left to bash.
 */
import { describe, expect, it } from "vitest";
import { patchInShellCommand } from "../../../../lib/doors/compat/shell-patch.js";

const PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-a\n+b\n*** Move to: lib/app.py\n*** Add File: /top.txt\n+x\n*** End Patch";
const heredoc = (prefix: string) => `${prefix}apply_patch <<'EOF'\n${PATCH}\nEOF\n`;

describe("patchInShellCommand", () => {
  it("no cd and `cd .`: the patch as sent; `cd /workspace`: its paths under /workspace, which normalizePath reads as the root", () => {
    for (const prefix of ["", "cd . && ", "cd ./ && "]) expect(patchInShellCommand(heredoc(prefix)), prefix).toBe(PATCH);
    for (const prefix of ["cd /workspace && ", "cd /workspace/ && ", "cd '/workspace' && "]) expect(patchInShellCommand(heredoc(prefix)), prefix).toContain("*** Update File: /workspace/app.py");
  });

  it("a relative directory, or one under /workspace: its paths prefixed; an absolute path in the patch kept", () => {
    const inSrc = patchInShellCommand(heredoc("cd src/ && "));
    expect(inSrc).toContain("*** Update File: src/app.py");
    expect(inSrc).toContain("*** Move to: src/lib/app.py");
    expect(inSrc).toContain("*** Add File: /top.txt");
    // normalizePath reads /workspace/src/app.py as src/app.py, as it does for every tool
    expect(patchInShellCommand(heredoc('cd "/workspace/src" && '))).toContain("*** Update File: /workspace/src/app.py");
    // a top-level directory named workspace, relative: a directory of that name
    expect(patchInShellCommand(heredoc("cd workspace && "))).toContain("*** Update File: workspace/app.py");
  });

  it("an absolute directory outside the workspace, the filesystem's root included, is left to bash", () => {
    for (const prefix of ["cd / && ", "cd /etc && ", "cd /workspacex && ", "cd //etc && ", "cd /tmp/workspace && "]) expect(patchInShellCommand(heredoc(prefix)), prefix).toBeNull();
  });

  it("anything but the exact form is left to bash", () => {
    expect(patchInShellCommand(`${heredoc("")}echo done`)).toBeNull();
    expect(patchInShellCommand("apply_patch <<'EOF'\nnot a patch\nEOF")).toBeNull();
    expect(patchInShellCommand(`ls && ${heredoc("")}`)).toBeNull();
  });
});
