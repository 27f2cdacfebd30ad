/**
 * The audit log's storage: one small create-only object per entry, under a time-ordered key
 * (lib/workspace/paths.ts auditPrefix / tenantAuditPrefix). Nothing is ever rewritten, so no
 * object is hot (R2 takes about one write per second per key), and a listing from a time or an
 * entry pages the log oldest-first. Cost: one PUT per entry; a page is one LIST and one GET per entry.
 */
import type { StorageDriver } from "../../storage/types.js";
import { afterAnswer, type WaitUntil } from "../../shared/after-answer.js";
import { ToolError } from "../../shared/errors.js";
import { AUDIT_ID_PATTERN, auditPrefix, tenantAuditPrefix } from "../../layout/paths.js";
import { compactTime, type AuditEntry } from "./entry.js";

/** Where an entry goes: a workspace's log, or its tenant's. */
export type AuditLogOf = { tenant: string; workspace?: string };

const prefixOf = (log: AuditLogOf) => (log.workspace ? auditPrefix(log.tenant, log.workspace) : tenantAuditPrefix(log.tenant));

/**
 * Writes one entry; never fails the call it records (a failed write is logged without the entry's
 * contents). With `background` (the runtime's waitUntil) it is written after the answer, and an
 * entry given as a function is built then too (its summary of the arguments is CPU the answer need
 * not wait for). `background` is required in the type (undefined only where the caller has none: the
 * entry is then written before the promise settles), so no caller forgets the request's waitUntil.
 */
export function recordAudit(storage: StorageDriver, entryOf: AuditEntry | (() => AuditEntry), background: WaitUntil | undefined): Promise<void> {
  const put = () => {
    const entry = typeof entryOf === "function" ? entryOf() : entryOf;
    const log: AuditLogOf = { tenant: entry.tenant, ...(entry.workspace ? { workspace: entry.workspace } : {}) };
    return storage.put(`${prefixOf(log)}${entry.id}.json`, JSON.stringify(entry), { ifNoneMatch: "*", contentType: "application/json" }).then(
      () => undefined,
      (e: unknown) => console.error("audit entry not written", { id: entry.id, tenant: entry.tenant, workspace: entry.workspace, error: e instanceof Error ? e.message : String(e) }),
    );
  };
  return afterAnswer(background, "audit entry", put, "await");
}

export const MAX_AUDIT_PAGE = 200;
export const DEFAULT_AUDIT_PAGE = 50;
const PARALLEL_GETS = 16;

export interface AuditPage {
  entries: AuditEntry[];
  /** Pass as `cursor` for the next page; absent when this page reached the end of the log (so far). */
  next_cursor?: string;
}

/** One page of a log, oldest first: after `cursor` (an entry id), else from `since` (an ISO time), else from the start. */
export async function listAudit(storage: StorageDriver, log: AuditLogOf, opts: { since?: string; cursor?: string; limit?: number }): Promise<AuditPage> {
  const prefix = prefixOf(log);
  const limit = Math.min(Math.max(1, Math.floor(opts.limit ?? DEFAULT_AUDIT_PAGE)), MAX_AUDIT_PAGE);
  let startAfter: string | undefined;
  if (opts.cursor !== undefined) {
    if (!AUDIT_ID_PATTERN.test(opts.cursor)) throw new ToolError("INVALID_ARGUMENT", `Invalid cursor ${JSON.stringify(opts.cursor.slice(0, 64))}: pass the next_cursor of the previous page.`, { cursor: opts.cursor.slice(0, 64) });
    startAfter = `${prefix}${opts.cursor}.json`;
  } else if (opts.since !== undefined) {
    const t = new Date(opts.since);
    if (Number.isNaN(t.getTime())) throw new ToolError("INVALID_ARGUMENT", `Invalid since ${JSON.stringify(opts.since.slice(0, 64))}: use an ISO 8601 time, e.g. 2026-11-28T07:00:00Z.`, { since: opts.since.slice(0, 64) });
    startAfter = `${prefix}${compactTime(t)}`; // every id of that millisecond or later sorts after it
  }
  const listed = await storage.list({ prefix, limit, ...(startAfter ? { startAfter } : {}) });
  const keys = listed.objects.map((o) => o.key).filter((k) => AUDIT_ID_PATTERN.test(k.slice(prefix.length, -".json".length)));
  const entries: AuditEntry[] = [];
  for (let i = 0; i < keys.length; i += PARALLEL_GETS) {
    const got = await Promise.all(keys.slice(i, i + PARALLEL_GETS).map(async (k) => {
      const r = await storage.get(k);
      return r ? (JSON.parse(await new Response(r.body).text()) as AuditEntry) : null;
    }));
    for (const e of got) if (e) entries.push(e);
  }
  const last = keys.at(-1);
  const more = listed.cursor !== undefined || listed.objects.length === limit;
  return { entries, ...(more && last ? { next_cursor: last.slice(prefix.length, -".json".length) } : {}) };
}
