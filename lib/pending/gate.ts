/**
 * The approval gate: before a tool runs, the tenant's policy (lib/pending/gate-policy.ts) says
 * whether this call waits for a human. A gated call is stored as a pending call and answered
 * NEEDS_APPROVAL; nothing of it runs. Called from one place, executeTool (lib/run-tool.ts), so
 * every door is gated alike; a call a human approved runs with `approved: true` and is not gated again.
 *
 * Cost: 1 KV read (the tenant policy) per tool call, cached per isolate for 5 s (deps.policies); + 1 KV read (guard rails, cached
 * the same way) for a bash call under a caution rule; + 1 HEAD for an overwrite rule; + 1 PUT when the call is held.
 */
import { guardFor } from "../exec/tool-support.js";
import { checkCommand } from "../exec/guard.js";
import { normalizeFilePath } from "../paths.js";
import type { Tool, ToolContext } from "../tool.js";
import { loadTenantPolicy, outsideAllowed, refuseBlocked, type TenantPolicy } from "../web/policy.js";
import { DEFAULT_GATE, DEFAULT_SELF_CONFIRM, type GateRule } from "./gate-policy.js";
import { createPending, DEFAULT_PENDING_TTL_MS, waitingError } from "./store.js";

/** Why the rule holds this call, or null when it does not apply. */
async function holds(rule: GateRule, tool: Tool, args: Record<string, unknown>, ctx: ToolContext, policy: TenantPolicy): Promise<string | null> {
  if (rule.tool !== tool.name) return null;
  switch (rule.when) {
    case undefined:
      return `every ${tool.name} call needs a human's approval (tenant policy).`;
    case "recursive":
      return args.recursive === true ? `a recursive ${tool.name} needs a human's approval (tenant policy).` : null;
    case "overwrite": {
      if (typeof args.file_path !== "string") return null;
      let path: string;
      try {
        path = normalizeFilePath(args.file_path);
      } catch {
        return null; // the tool answers INVALID_PATH itself
      }
      return (await ctx.ws.head(path)) ? `changing the existing file ${path} needs a human's approval (tenant policy).` : null;
    }
    case "outside_allowed_domains": {
      if (typeof args.url !== "string" || !URL.canParse(args.url)) return null;
      const url = new URL(args.url);
      return outsideAllowed(url, policy.web) ? `${url.hostname} is outside this tenant's allowed domains; fetching it needs a human's approval.` : null;
    }
    case "caution": {
      if (typeof args.command !== "string") return null;
      if (args.confirmed === true && (policy.self_confirm ?? DEFAULT_SELF_CONFIRM)) return null;
      const v = checkCommand(args.command, await guardFor(ctx), false);
      if (v.action !== "confirm") return null; // blocked commands are refused by the tool itself
      const self = (policy.self_confirm ?? DEFAULT_SELF_CONFIRM) ? " (or, once the user agreed, call again with confirmed: true)" : "";
      return `this command needs a human's approval: ${v.rule.message} (rule ${v.rule.id})${self}.`;
    }
  }
}

/** Holds the call when the tenant's gate says so: stores it as a pending call and throws NEEDS_APPROVAL. */
export async function gateCall(tool: Tool, args: Record<string, unknown>, ctx: ToolContext): Promise<void> {
  if (ctx.approved) return;
  const policy = await loadTenantPolicy(ctx.deps.kv, ctx.ws.tenant, ctx.deps.policies);
  // blocked_domains win over every rule: a fetch the policy refuses anyway is refused now, not held for a human.
  if (tool.name === "web_fetch" && typeof args.url === "string" && URL.canParse(args.url)) refuseBlocked(new URL(args.url), policy.web);
  for (const rule of policy.gate ?? DEFAULT_GATE) {
    const reason = await holds(rule, tool, args, ctx, policy);
    if (!reason) continue;
    const rec = await createPending(
      { driver: ctx.deps.storage, tenant: ctx.ws.tenant, workspace: ctx.ws.id, ...(ctx.deps.pending?.now ? { now: ctx.deps.pending.now } : {}) },
      { kind: "approval", tool: tool.name, args, reason, rule, session: ctx.session, key_id: ctx.auth.key_id, scopes: ctx.auth.scopes, ...(ctx.auth.tools !== undefined ? { tools: ctx.auth.tools } : {}) },
      ctx.deps.pending?.ttlMs ?? DEFAULT_PENDING_TTL_MS,
    );
    throw waitingError(rec, ctx.ws.id);
  }
}
