/**
 * The approval gate's part of a tenant's policy (KV `policy/<tenant>`, lib/web/policy.ts):
 * which tool calls wait for a human, and whether an agent may confirm a caution command itself.
 * Schema and defaults only (no I/O); lib/pending/gate.ts applies them.
 */
import { z } from "@hono/zod-openapi";

export const GATE_CONDITIONS = ["overwrite", "recursive", "outside_allowed_domains", "caution"] as const;
export type GateCondition = (typeof GATE_CONDITIONS)[number];

export const GateRuleSchema = z
  .object({
    tool: z.string().min(1).max(64).openapi({ description: "A tool name, e.g. bash" }),
    when: z.enum(GATE_CONDITIONS).optional().openapi({
      description:
        "Without it every call of the tool waits. overwrite: file_path names an existing file; recursive: recursive: true; outside_allowed_domains: url outside web.allowed_domains (when set); caution: a bash command matching the caution guard rails.",
    }),
  })
  .openapi("GateRule");
export type GateRule = z.infer<typeof GateRuleSchema>;

export const GatePolicyFields = {
  gate: z.array(GateRuleSchema).max(100).optional().openapi({ description: "Calls that wait for approval; replaces the default list when set (default: bash caution commands, web_fetch outside allowed_domains)." }),
  self_confirm: z.boolean().optional().openapi({ description: "An agent may pass confirmed: true to run a bash caution command without approval (default: true)." }),
};

/** Gated when the tenant sets no `gate`: what used to be NEEDS_CONFIRMATION or a needs_approval BLOCKED. */
export const DEFAULT_GATE: readonly GateRule[] = [
  { tool: "bash", when: "caution" },
  { tool: "web_fetch", when: "outside_allowed_domains" },
];
export const DEFAULT_SELF_CONFIRM = true;
