/**
 * Running a held call a human approved. Before anything is taken or run:
 *   - the approving key is not the key that made the call, nor a key that key made (an agent whose key
 *     also holds `approve` cannot approve itself, nor mint an approver with `manage`; it may still refuse its own call);
 *   - modified arguments are validated against the tool's schema and their paths must be workspace paths (bad ones leave the call pending);
 *   - the key that made the call is looked up as it is now (Approver.currentKey): a revoked
 *     or expired key's call runs nothing (its outcome says why); the call runs with the scopes the key had
 *     when it was held AND still has, and the key's tool list as it is now (executeTool checks it);
 *   - the workspace must still be in the state the call was held on (lib/run/pending/binding.ts):
 *     otherwise the call is closed `stale` and the approval answers CONFLICT; nothing runs.
 * Then the answer is taken (If-Match), the call runs through runTool (the one run path), and its
 * result is stored. When the approver changed the arguments or left a note, the agent's result
 * says so at the top of `output` and in `data.approval` (an error: in its message and details).
 */
import { ToolError } from "../../shared/errors.js";
import { toToolError } from "../../contract/errors.js";
import { openWorkspace, runTool } from "../run-tool.js";
import { parseToolArgs, type Tool } from "../../contract/tool.js";
import { MAX_LINEAGE, OAUTH_KEY_ID_PREFIX, type AuthInfo } from "../../contract/caller.js";
import type { RunDeps } from "../deps.js";
import { assertPathArgs, bindingChange, bindingOf } from "./binding.js";
import { answeredError, closedError, closePending, replacePending, type PendingOutcome, type PendingRecord, type PendingScope } from "../../tools/pending/store.js";

/** What the door that takes approvals gives them (lib/api/routes/pending.ts): the tools, and the calling key as it is now. */
export interface Approver {
  /** The built-in tools and the tenant's custom tools: a held call runs its tool from these. */
  tools: readonly Tool[];
  /**
   * The key that made a held call, as it is now: an approved call runs with it, so a key revoked
   * before the approval runs nothing, and a key narrowed since runs only what it may now. One lookup
   * by key id (lib/api/auth/keys.ts callerNow: 2 KV GETs), never a listing (KV listings lag: a
   * key made a minute ago would be taken for revoked). Null when it was revoked (or never was this tenant's).
   * An OAuth principal has no record: it stands while the tenant trusts its issuer, with no bound of its own, so its call runs with the scopes its token had when held.
   */
  currentKey(tenant: string, keyId: string): Promise<AuthInfo | null>;
}

export interface Approval {
  /** The approver's key id. */
  by: string;
  at: string;
  modified_args?: Record<string, unknown>;
  note?: string;
}

/** Longest rendering of one argument set in the agent's output (data.approval has them whole). */
const MAX_ARGS_SHOWN = 2000;
const shown = (args: Record<string, unknown>) => {
  const json = JSON.stringify(args);
  return json.length > MAX_ARGS_SHOWN ? `${json.slice(0, MAX_ARGS_SHOWN)}… (${json.length} characters; data.approval has them all)` : json;
};

/** What the human changed or said, for the agent: the text put first in its output, and data.approval. */
function approvalNotice(rec: PendingRecord, a: Approval) {
  if (!a.modified_args && a.note === undefined) return null;
  const changed = a.modified_args
    ? ` with CHANGED arguments: what ran is not what you asked. You asked for ${shown(rec.args)}; what ran was ${shown(a.modified_args)}.`
    : " as you asked it.";
  const text = `A human approved this ${rec.tool} call${changed}${a.note !== undefined ? ` Their note: ${a.note}` : ""}`;
  const data = { approved_by: a.by, modified_args: !!a.modified_args, ...(a.modified_args ? { asked_args: rec.args, ran_args: a.modified_args } : {}), ...(a.note !== undefined ? { note: a.note } : {}) };
  return { text, data };
}

/** Keys made by keys followed up from an approver's key, at most (a longer chain is refused as if it led to the caller). */
const MAX_MAKERS = MAX_LINEAGE - 1;

/**
 * Whether key `by` is the calling key `caller` or a key it made, at any depth (POST /v1/keys records
 * the maker, and the whole line of makers above it: `lineage`, kept when the key was made, so a key
 * revoked in the middle does not cut the chain). 2 KV GETs for a key with a lineage; a key made
 * before lineages were kept is followed up maker by maker, 2 KV GETs per key (a revoked one there ends the walk).
 */
async function madeByCaller(approver: Approver, tenant: string, by: string, caller: string): Promise<boolean> {
  let key: string | undefined = by;
  for (let hop = 0; key !== undefined; hop++) {
    if (key === caller || hop > MAX_MAKERS) return true;
    const found: AuthInfo | null = await approver.currentKey(tenant, key);
    if (found?.lineage) return found.lineage.includes(caller) || hop + found.lineage.length > MAX_MAKERS;
    key = found?.made_by;
  }
  return false;
}

export async function runApproved(deps: RunDeps, tenant: string, wsId: string, s: PendingScope, held: { rec: PendingRecord; etag: string }, a: Approval, approver: Approver): Promise<PendingRecord> {
  const { rec, etag } = held;
  // The gate holds a call for a human: the key that made it, or a key that key made, never approves it (it stays pending), whatever scopes it holds.
  if (await madeByCaller(approver, tenant, a.by, rec.key_id)) {
    const whose = a.by === rec.key_id ? "the API key that is approving it" : "the API key that made the key approving it (POST /v1/keys)";
    throw new ToolError("PERMISSION_DENIED", `This ${rec.tool} call was made with ${whose} (key id ${rec.key_id}): a held call is approved with another key, a human approver's, never the calling agent's nor one it made. It is still pending: approve it with an approver's key (docs/approvals.md), or refuse it with {"approved": false}.`, { key_id: rec.key_id, reason: "self_approval" });
  }
  const tool = approver.tools.find((t) => t.name === rec.tool);
  if (!tool) throw new ToolError("UNAVAILABLE", `The ${rec.tool} tool is not enabled on this server (or was a custom tool since deleted); the call cannot run. Refuse it with {"approved": false}.`, { tool: rec.tool });
  const args = a.modified_args ?? rec.args;
  // Validated before the answer is taken: bad modified arguments leave the call pending, to be answered again.
  if (a.modified_args) {
    parseToolArgs(tool, args);
    assertPathArgs(args);
  }
  const answer = { by: a.by, at: a.at, approved: true, modified_args: !!a.modified_args, ...(a.note !== undefined ? { note: a.note } : {}) };
  const notice = approvalNotice(rec, a);

  const key = await approver.currentKey(tenant, rec.key_id);
  // An expired key is no more valid than a revoked one: every request of its own is refused by now.
  const expired = key?.key_expires_at !== undefined && Date.parse(key.key_expires_at) <= Date.now();
  if (!key || expired) {
    const gone = expired ? `expired (${key!.key_expires_at})` : rec.key_id.startsWith(OAUTH_KEY_ID_PREFIX) ? "is no longer trusted (the tenant removed its token issuer from its OAuth configuration)" : "was revoked";
    const message = `The ${rec.key_id.startsWith(OAUTH_KEY_ID_PREFIX) ? "OAuth principal" : "API key"} that made this ${rec.tool} call (key id ${rec.key_id}) ${gone} before the call was approved, so nothing ran. A call runs only with a key that is still valid.`;
    const done: PendingRecord = { ...rec, status: "done", answer, outcome: { ok: false, code: "PERMISSION_DENIED", message, details: { tool: rec.tool, key_id: rec.key_id, reason: expired ? "key_expired" : "key_revoked" } } };
    await replacePending(s, done, etag);
    return done;
  }
  // The key as it is now, whole (its tools, workspaces, own limits, expiry), its scopes no wider than when the call was held.
  const auth: AuthInfo = { ...key, tenant, key_id: rec.key_id, scopes: rec.scopes.filter((x) => key.scopes.includes(x)) };
  const scope = { deps, auth, wsId, session: rec.session, approved: true };
  const ws = await openWorkspace(scope);

  if (rec.binding) {
    const moved = bindingChange(rec.binding, await bindingOf(deps.storage, ws, tool, rec.args));
    if (moved) {
      const closed = await closePending(s, rec, etag, "stale", moved);
      throw closed ? closedError(closed) : answeredError(rec.id);
    }
  }

  const running: PendingRecord = { ...rec, args, ...(a.modified_args ? { asked_args: rec.args } : {}), status: "running", answer };
  const runningEtag = await replacePending(s, running, etag);
  let outcome: PendingOutcome;
  try {
    const r = await runTool(tool, args, { ...scope, ws, door: "pending-approval", ...(rec.background_unless_live ? { backgroundUnlessLive: true } : {}) });
    outcome = notice ? { ok: true, title: r.title, output: `${notice.text}\n\n${r.output}`, data: { ...r.data, approval: notice.data } } : { ok: true, title: r.title, output: r.output, data: r.data };
  } catch (e) {
    const err = toToolError(e);
    outcome = { ok: false, code: err.code, message: notice ? `${notice.text}\n\n${err.message}` : err.message, details: notice ? { ...err.details, approval: notice.data } : err.details };
  }
  const done: PendingRecord = { ...running, status: "done", outcome };
  await replacePending(s, done, runningEtag);
  return done;
}
