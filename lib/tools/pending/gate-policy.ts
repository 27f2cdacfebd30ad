/**
 * The approval gate's part of a tenant's policy (KV `policy/<tenant>`, lib/tools/web/policy.ts):
 * which tool calls wait for a human, and whether an agent may confirm a destructive command itself.
 * Schema and defaults only (no I/O); lib/run/pending/gate.ts applies them, lib/run/pending/destructive.ts
 * says what `destructive` means for each tool.
 */
import { z } from "@hono/zod-openapi";

export const GATE_CONDITIONS = ["destructive", "overwrite", "recursive", "outside_allowed_domains", "caution"] as const;
export type GateCondition = (typeof GATE_CONDITIONS)[number];

export const GateRuleSchema = z
  .object({
    tool: z.string().min(1).max(64).openapi({ description: "A tool name, e.g. bash" }),
    when: z.enum(GATE_CONDITIONS).optional().openapi({
      description:
        "Without it every call of the tool waits. destructive: the one rule of what destroys work (bash: a command matching the caution guard rails, e.g. rm -r, git reset --hard, git clean -f; delete: recursive over a directory that is not empty; move/copy: overwrite over an existing target; apply_patch: a Delete File section); overwrite: file_path names an existing file; recursive: recursive: true; outside_allowed_domains: url outside web.allowed_domains (when set); caution: the older name of destructive for bash.",
    }),
  })
  .strict()
  .openapi("GateRule");
export type GateRule = z.infer<typeof GateRuleSchema>;

export const GatePolicyFields = {
  gate: z.array(GateRuleSchema).max(100).optional().openapi({ description: "Calls that wait for approval; replaces the default list when set (default: destructive calls of bash, delete, move, copy and apply_patch; web_fetch outside allowed_domains)." }),
  self_confirm: z.boolean().optional().openapi({ description: "An agent may pass confirmed: true to run a destructive bash command without approval, closing any held copy of it as superseded (default: false)." }),
};

/** The tools whose calls lib/run/pending/destructive.ts judges; each is gated `destructive` by default. */
export const DESTRUCTIVE_TOOLS = ["bash", "delete", "move", "copy", "apply_patch"] as const;

/** Gated when the tenant sets no `gate`: every destructive call, by every door, and web_fetch outside allowed_domains. */
export const DEFAULT_GATE: readonly GateRule[] = [...DESTRUCTIVE_TOOLS.map((tool) => ({ tool, when: "destructive" as const })), { tool: "web_fetch", when: "outside_allowed_domains" }];

/** Off unless the tenant's policy turns it on: a gate the model may skip on its own word is no gate. */
export const DEFAULT_SELF_CONFIRM = false;

/** Rules an agent's confirmed: true may pass, where the tenant allows self-confirmation. */
export const SELF_CONFIRMABLE: ReadonlySet<GateCondition | undefined> = new Set(["destructive", "caution"]);
