/**
 * The approval gate: before a tool runs, the tenant's policy (lib/tools/pending/gate-policy.ts) says
 * whether this call waits for a human. A gated call is stored as a pending call and answered
 * NEEDS_APPROVAL; nothing of it runs. Called from one place, executeTool (lib/run/run-tool.ts), so
 * every door is gated alike; a call a human approved runs with `approved: true` and is not gated again.
 *
 * A held call is bound to what it would run (lib/run/pending/binding.ts): the same call held again on
 * the same state answers the waiting call's pending_id (one call, one approval); held again on a
 * changed state, it closes the older one as `stale`. Where the tenant allows self-confirmation
 * (self_confirm, off by default), an agent's confirmed: true runs a destructive bash command
 * and closes every waiting copy of that call as `superseded`, so a later approval runs nothing.
 * No message tells the model to confirm by itself unless the tenant allows it.
 *
 * Cost: 1 KV read (the tenant policy) per tool call, cached per isolate for 5 s (deps.policies); + 1 KV read (guard rails, cached
 * the same way) for a bash call under a destructive rule; + 1 HEAD (or a short listing) for the rules that look at files.
 * When the call is held: the binding (1 GET + 1 HEAD per named file), 1 LIST + 1 GET per waiting call (the same call
 * held already?), 1 PUT. A self-confirmed call: 1 LIST + 1 GET per waiting call (+ 1 PUT per copy closed).
 */
import { normalizeFileToWrite } from "../../layout/write-path.js";
import type { Tool, ToolContext } from "../../contract/tool.js";
import { loadTenantPolicy, outsideAllowed, refuseBlocked, type TenantPolicy } from "../../tools/web/policy.js";
import { bindingChange, bindingOf, callIdentity } from "./binding.js";
import { destructiveCall } from "./destructive.js";
import { DEFAULT_GATE, DEFAULT_SELF_CONFIRM, SELF_CONFIRMABLE, type GateRule } from "../../tools/pending/gate-policy.js";
import { closePending, createPending, DEFAULT_PENDING_TTL_MS, pendingScope, waitingCalls, waitingError, type PendingRecord, type PendingScope } from "../../tools/pending/store.js";

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
        path = normalizeFileToWrite(args.file_path, "file_path");
      } catch {
        return null; // the tool refuses the path itself (INVALID_PATH, or a directory's path: INVALID_ARGUMENT)
      }
      return (await ctx.ws.head(path)) ? `changing the existing file ${path} needs a human's approval (tenant policy).` : null;
    }
    case "outside_allowed_domains": {
      if (typeof args.url !== "string" || !URL.canParse(args.url)) return null;
      const url = new URL(args.url);
      return outsideAllowed(url, policy.web) ? `${url.hostname} is outside this tenant's allowed domains; fetching it needs a human's approval.` : null;
    }
    case "caution":
    case "destructive": {
      if (rule.when === "caution" && tool.name !== "bash") return null;
      const v = await destructiveCall(tool.name, args, ctx);
      return v ? `this ${tool.name} call is destructive and needs a human's approval: ${v.reason}.` : null;
    }
  }
}

const scopeOf = (ctx: ToolContext): PendingScope => pendingScope(ctx.deps, ctx.ws.tenant, ctx.ws.id);

/** A waiting approval of the same call by the same key and session. */
const sameCall = (r: PendingRecord, tool: Tool, args: Record<string, unknown>, ctx: ToolContext) =>
  r.kind === "approval" && r.key_id === ctx.auth.key_id && r.session === ctx.session && callIdentity(r.tool, r.args) === callIdentity(tool.name, args);

/** Holds the call when the tenant's gate says so: stores it as a pending call and throws NEEDS_APPROVAL. */
export async function gateCall(tool: Tool, args: Record<string, unknown>, ctx: ToolContext): Promise<void> {
  if (ctx.approved) return;
  const policy = await loadTenantPolicy(ctx.deps.kv, ctx.ws.tenant, ctx.deps.policies);
  // blocked_domains win over every rule: a fetch the policy refuses anyway is refused now, not held for a human.
  if (tool.name === "web_fetch" && typeof args.url === "string" && URL.canParse(args.url)) refuseBlocked(new URL(args.url), policy.web);
  const selfConfirm = (policy.self_confirm ?? DEFAULT_SELF_CONFIRM) && "confirmed" in tool.input.shape;
  const selfConfirmed = selfConfirm && args.confirmed === true;
  for (const rule of policy.gate ?? DEFAULT_GATE) {
    if (selfConfirmed && SELF_CONFIRMABLE.has(rule.when)) continue;
    const reason = await holds(rule, tool, args, ctx, policy);
    if (!reason) continue;
    // Only where the tenant allows it does the model learn that its own confirmation runs the call.
    const how = selfConfirm && SELF_CONFIRMABLE.has(rule.when) ? " This tenant allows self-confirmation: once the user agreed to this exact command, calling again with confirmed: true runs it." : "";
    await hold(tool, args, ctx, `${reason}${how}`, rule);
  }
  if (selfConfirmed) await supersedeWaiting(tool, args, ctx);
}

/** Stores the call as pending (or finds it waiting already) and throws NEEDS_APPROVAL. */
async function hold(tool: Tool, args: Record<string, unknown>, ctx: ToolContext, reason: string, rule: GateRule): Promise<never> {
  const s = scopeOf(ctx);
  const [binding, waiting] = await Promise.all([bindingOf(ctx.deps.storage, ctx.ws, tool, args), waitingCalls(s)]);
  const older = waiting.filter((w) => sameCall(w.rec, tool, args, ctx));
  // The same call on the same state: one call, one approval.
  const same = older.find((w) => w.rec.binding && !bindingChange(w.rec.binding, binding));
  if (same) throw waitingError(same.rec, ctx.ws.id);
  const rec = await createPending(
    s,
    { kind: "approval", tool: tool.name, args, reason, rule, binding, session: ctx.session, key_id: ctx.auth.key_id, scopes: ctx.auth.scopes, ...(ctx.auth.tools !== undefined ? { tools: ctx.auth.tools } : {}), ...(ctx.backgroundUnlessLive ? { background_unless_live: true } : {}) },
    ctx.deps.pending?.ttlMs ?? DEFAULT_PENDING_TTL_MS,
  );
  // Held again on a changed state: the older copies would run on a workspace nobody approved.
  for (const w of older) await closePending(s, w.rec, w.etag, "stale", (w.rec.binding && bindingChange(w.rec.binding, binding)) ?? "the workspace changed", rec.id);
  throw waitingError(rec, ctx.ws.id);
}

/** The agent ran the call itself (self-confirmed): every waiting copy of it is closed, never to run on a later approval. */
async function supersedeWaiting(tool: Tool, args: Record<string, unknown>, ctx: ToolContext): Promise<void> {
  const s = scopeOf(ctx);
  const at = new Date((ctx.deps.pending?.now ?? Date.now)()).toISOString();
  for (const w of await waitingCalls(s)) {
    if (sameCall(w.rec, tool, args, ctx)) await closePending(s, w.rec, w.etag, "superseded", `the agent ran the same ${tool.name} call itself with confirmed: true at ${at}`);
  }
}
