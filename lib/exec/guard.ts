/**
 * Guard rails for bash: save the agent from itself. NOT a security boundary (quoting,
 * variables or a script file get around any pattern); the sandbox is the boundary.
 * Blocked patterns give BLOCKED; caution patterns mark a command destructive, and the approval
 * gate holds it for a human (lib/run/pending/destructive.ts). Both lists are data, per tenant. Patterns are RE2 (re2js), so a
 * tenant's pattern cannot stall the Worker. Pure: bundles for Workers.
 */
import { RE2JS } from "re2js";
import { ToolError } from "../shared/errors.js";

export interface GuardRule {
  id: string;
  /** RE2 syntax, matched case-insensitively anywhere in the command (whitespace collapsed). */
  pattern: string;
  /** Shown to the agent: what the rule protects against. */
  message: string;
}

export interface GuardLists {
  blocked: GuardRule[];
  caution: GuardRule[];
}

/** What a path argument looks like when it is the filesystem root or home itself. */
const ROOTISH = String.raw`(/|/\*|~|~/|~/\*|\$HOME/?|\$\{HOME\}/?)(\s|;|&|\||$)`;
const SYSTEM = String.raw`/(etc|usr|bin|sbin|lib|lib32|lib64|boot|sys|proc/sys|dev/(sd|nvme|hd|vd|xvd|mapper|disk))\b`;

export const DEFAULT_BLOCKED: GuardRule[] = [
  { id: "fork-bomb", pattern: String.raw`\(\)\s*\{[^}]*\|[^}]*&[^}]*\}`, message: "a fork bomb (a function that pipes into itself in the background)" },
  { id: "rm-root", pattern: String.raw`\brm\s+(-[a-z]*\s+|--[a-z-]+\s+)*` + ROOTISH, message: "removing the filesystem root or home directory" },
  { id: "rm-no-preserve-root", pattern: String.raw`--no-preserve-root`, message: "rm --no-preserve-root" },
  { id: "mkfs", pattern: String.raw`\bmkfs(\.\w+)?\b|\bmkswap\b|\bwipefs\b`, message: "formatting a filesystem" },
  { id: "dd-device", pattern: String.raw`\bdd\b[^;&|]*\bof=/dev/`, message: "writing raw bytes to a device" },
  { id: "write-system", pattern: String.raw`(>>?|\btee(\s+-a)?)\s*` + SYSTEM, message: "writing to a system path" },
  { id: "modify-system", pattern: String.raw`\b(chmod|chown|chgrp|rm|rmdir|truncate|shred|unlink)\b[^;&|]*\s` + SYSTEM, message: "changing a system path" },
  { id: "edit-system", pattern: String.raw`\bsed\b[^;&|]*\s-i[^;&|]*\s` + SYSTEM, message: "editing a system file in place" },
  // mv / cp / ln / install only when the system path is the destination (the last argument).
  { id: "copy-to-system", pattern: String.raw`\b(mv|cp|ln|install|rsync)\b[^;&|]*\s` + SYSTEM + String.raw`[^\s;&|]*\s*($|[;&|])`, message: "copying or moving into a system path" },
  { id: "power", pattern: String.raw`(^|[;&|]\s*|\bsudo\s+)(shutdown|reboot|halt|poweroff)\b`, message: "shutting the machine down" },
];

export const DEFAULT_CAUTION: GuardRule[] = [
  { id: "rm-recursive", pattern: String.raw`\brm\s+(-[a-z]*\s+)*(-[a-z]*r[a-z]*|--recursive)\b`, message: "recursive delete (rm -r)" },
  { id: "git-force-push", pattern: String.raw`\bgit\b[^;&|]*\bpush\b[^;&|]*(\s--force\b|\s-f\b|\s--force-with-lease\b|\s\+\S)`, message: "force-push rewrites the remote's history" },
  { id: "git-reset-hard", pattern: String.raw`\bgit\b[^;&|]*\breset\b[^;&|]*--hard\b`, message: "git reset --hard drops uncommitted work" },
  { id: "git-clean", pattern: String.raw`\bgit\b[^;&|]*\bclean\b[^;&|]*\s-[a-z]*f`, message: "git clean -f deletes untracked files" },
  // Not `git checkout <branch>` or `git restore --staged` alone: only the forms that throw away working-tree changes.
  { id: "git-discard", pattern: String.raw`\bgit\b[^;&|]*\b(checkout\s+(-f\b|--force\b|--\s|\.(\s|$))|restore\s+[^-\s]|restore\b[^;&|]*\s(--worktree|-W)\b)`, message: "git checkout -- / git restore discards uncommitted changes" },
  { id: "git-stash-drop", pattern: String.raw`\bgit\b[^;&|]*\bstash\s+(drop|clear)\b`, message: "git stash drop/clear deletes stashed work" },
  { id: "chmod-recursive", pattern: String.raw`\b(chmod|chown|chgrp)\s+(-[a-z]*\s+)*(-[a-z]*R[a-z]*|--recursive)\b`, message: "recursive permission change" },
  { id: "find-delete", pattern: String.raw`\bfind\b[^;&|]*(\s-delete\b|-exec\s+rm\b)`, message: "find that deletes files" },
  { id: "pipe-to-shell", pattern: String.raw`\b(curl|wget)\b[^;&]*\|\s*(sudo\s+)?(ba|z|da)?sh\b`, message: "running a script straight from the network" },
  { id: "sql-drop", pattern: String.raw`\b(drop\s+(table|database|schema)|truncate\s+table)\b`, message: "dropping database objects" },
  { id: "publish", pattern: String.raw`\b(npm|pnpm|yarn)\s+publish\b|\bcargo\s+publish\b|\btwine\s+upload\b`, message: "publishing a package" },
];

export const DEFAULT_GUARD: GuardLists = { blocked: DEFAULT_BLOCKED, caution: DEFAULT_CAUTION };

export type GuardVerdict = { action: "allow" } | { action: "block" | "confirm"; rule: GuardRule };

const compiled = new Map<string, RE2JS>();
function compile(pattern: string): RE2JS {
  let re = compiled.get(pattern);
  if (!re) {
    re = RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
    if (compiled.size > 1000) compiled.clear();
    compiled.set(pattern, re);
  }
  return re;
}

/** Checks a tenant's rules before they are saved; throws INVALID_ARGUMENT naming the bad one. */
export function validateRules(rules: GuardRule[]): GuardRule[] {
  for (const r of rules) {
    if (!r || typeof r.id !== "string" || typeof r.pattern !== "string" || typeof r.message !== "string") throw new ToolError("INVALID_ARGUMENT", "A guard rule needs id, pattern and message.");
    try {
      compile(r.pattern);
    } catch (e) {
      throw new ToolError("INVALID_ARGUMENT", `Guard rule ${r.id}: ${String((e as Error).message ?? e)} (patterns use RE2 syntax).`);
    }
  }
  return rules;
}

/** Extends the defaults with a tenant's rules; `replace: true` drops the defaults of that list. */
export function mergeGuard(extra: Partial<GuardLists> & { replace?: boolean } = {}): GuardLists {
  return {
    blocked: [...(extra.replace && extra.blocked ? [] : DEFAULT_BLOCKED), ...validateRules(extra.blocked ?? [])],
    caution: [...(extra.replace && extra.caution ? [] : DEFAULT_CAUTION), ...validateRules(extra.caution ?? [])],
  };
}

const find = (rules: GuardRule[], text: string) => rules.find((r) => compile(r.pattern).test(text));

export function checkCommand(command: string, lists: GuardLists = DEFAULT_GUARD): GuardVerdict {
  const text = command.replace(/\s+/g, " ").trim();
  const blocked = find(lists.blocked, text);
  if (blocked) return { action: "block", rule: blocked };
  const caution = find(lists.caution, text);
  return caution ? { action: "confirm", rule: caution } : { action: "allow" };
}

/** Throws BLOCKED for a command the verdict blocks. Caution commands pass here: the approval gate has held them already (or a human approved them). */
export function assertNotBlocked(v: GuardVerdict): void {
  if (v.action === "block") throw new ToolError("BLOCKED", `Refused: ${v.rule.message} (rule ${v.rule.id}). This command is not run; find another way to do what you need.`, { rule: v.rule.id });
}
