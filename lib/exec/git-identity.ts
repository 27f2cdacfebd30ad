/**
 * The git identity commands run with: a default, a tenant's own (KV `git/<tenant>`), the check
 * both ends apply, and the sandbox HOME's git files built from it. The identity reaches the
 * runner in the run request (RunRequest.git), never through files of the workspace.
 * Pure: bundles for Workers.
 */
import { ToolError } from "../shared/errors.js";

export interface GitIdentity {
  name: string;
  email: string;
}

export const DEFAULT_GIT_IDENTITY: GitIdentity = { name: "Toolshed Agent", email: "agent@toolshed.invalid" };

/** Where a tenant's identity lives in KV: `{"name": "...", "email": "..."}`. */
export const gitIdentityKey = (tenant: string): string => `git/${tenant}`;

/** git refuses these in an identity, and a config file line must not break on them. */
const BAD = /[\u0000-\u001f\u007f<>]/;

/** Throws INVALID_ARGUMENT naming what is wrong; returns the identity unchanged when it is usable. */
export function validateGitIdentity(v: unknown): GitIdentity {
  const o = v as Partial<GitIdentity> | null;
  for (const field of ["name", "email"] as const) {
    const s = o?.[field];
    if (typeof s !== "string" || s.trim() === "" || s.length > 200 || BAD.test(s))
      throw new ToolError("INVALID_ARGUMENT", `git.${field} must be 1-200 characters without control characters, < or >.`);
  }
  return { name: o!.name!, email: o!.email! };
}

/** A tenant's stored identity, or the default when none is stored or it is unusable (a broken setting never stops commands). */
export function parseGitIdentity(raw: string | null): GitIdentity {
  if (!raw) return DEFAULT_GIT_IDENTITY;
  try {
    return validateGitIdentity(JSON.parse(raw));
  } catch {
    return DEFAULT_GIT_IDENTITY;
  }
}

/** Paths of the sandbox HOME that git reads; the ignore file is git's default excludes file. */
export const GITCONFIG_PATH = ".gitconfig";
export const GIT_IGNORE_PATH = ".config/git/ignore";

const quote = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

/**
 * The files a command's HOME starts with (relative path → text): a global git config with the
 * identity, `main` as the default branch and /workspace as a safe directory, and git's global
 * excludes file listing Toolshed's own area `.toolshed/` (conflict copies), so it
 * never shows in `git status` nor gets committed by `git add -A`, without touching the
 * repository's .gitignore or .git/info/exclude. A repository's own config still wins.
 */
export function gitHomeFiles(id: GitIdentity = DEFAULT_GIT_IDENTITY): { path: string; text: string }[] {
  const config = [
    "# Written by Toolshed for this command: the sandbox HOME is new on every call.",
    "[user]",
    `\tname = ${quote(id.name)}`,
    `\temail = ${quote(id.email)}`,
    "[init]",
    "\tdefaultBranch = main",
    "[safe]",
    "\tdirectory = /workspace",
    "\tdirectory = /workspace/*",
    "",
  ].join("\n");
  const ignore = ["# Toolshed's own files (conflict copies): never part of a repository.", "/.toolshed/", ""].join("\n");
  return [
    { path: GITCONFIG_PATH, text: config },
    { path: GIT_IGNORE_PATH, text: ignore },
  ];
}
