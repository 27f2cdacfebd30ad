/**
 * GET /v1/workspaces for a key limited to some workspaces (lib/api/auth/key-bounds.ts): only the id
 * ranges its patterns cover are listed, so a page, its length and its cursor are made of covered ids
 * alone, and the key learns of another workspace exactly what it learns of one that does not exist:
 * nothing. (The tenant's whole listing, paged and then filtered, handed out cursors naming the last
 * workspace of each page, covered or not: a key limited to "ws1" paging with limit=1 read the id of
 * every other workspace of its tenant from them, and its empty pages counted them.)
 *
 * Ranges: a prefix pattern "p*" is the listing of t/<tenant>/w/p rolled up at "/" (every id in it is
 * covered); an exact id is its record's GET (the one the listing makes of every id it lists anyway).
 * A prefix a shorter one covers, and an id a prefix covers, are dropped: the ranges are disjoint and
 * walked in storage order. The cursor is the workspaces listing's (lib/layout/page-cursor.ts, the same
 * binding as an unlimited key's), at the last id handed out; any position, forged or another key's,
 * only moves within the ranges.
 * Storage operations per page: 1 LIST per prefix range it reaches (more while R2 thins a page) and
 * 1 GET per id it hands out, as before; 1 GET per exact id it reaches. At most 100 ranges (the patterns a key holds).
 */
import { ID_PATTERN, tenantWorkspacesPrefix } from "../layout/paths.js";
import { AFTER_ALL, compareKeys } from "../layout/key-order.js";
import { boundCursor, cursorPayload, listPageFrom } from "../layout/page-cursor.js";
import type { StorageDriver } from "../storage/types.js";
import type { WorkspaceMeta } from "../layout/workspace-meta.js";

/** The listing's name and what its cursor refusal names (one binding for every key of a tenant). */
export const WORKSPACES_LISTING = { listing: "workspaces", what: "GET /v1/workspaces" } as const;

type Range = { prefix: string } | { id: string };
const startOf = (r: Range) => ("prefix" in r ? r.prefix : `${r.id}/`);

/** The disjoint id ranges `patterns` cover, in storage order (see the file comment). */
export function coveredRanges(patterns: readonly string[]): Range[] {
  const prefixes = [...new Set(patterns.filter((p) => p.endsWith("*")).map((p) => p.slice(0, -1)))];
  const kept = prefixes.filter((p) => !prefixes.some((q) => q !== p && p.startsWith(q)));
  const ids = [...new Set(patterns.filter((p) => !p.endsWith("*") && !kept.some((q) => p.startsWith(q))))];
  return [...kept.map((prefix): Range => ({ prefix })), ...ids.map((id): Range => ({ id }))].sort((a, b) => compareKeys(startOf(a), startOf(b)));
}

/** One page of the workspaces `patterns` cover; `read`: a workspace's record, or null when there is none. */
export async function listCoveredWorkspaces(
  driver: StorageDriver,
  tenant: string,
  patterns: readonly string[],
  opts: { cursor?: string | undefined; limit: number },
  read: (id: string) => Promise<WorkspaceMeta | null>,
): Promise<{ workspaces: WorkspaceMeta[]; cursor?: string }> {
  const base = tenantWorkspacesPrefix(tenant);
  const after = opts.cursor ? cursorPayload(WORKSPACES_LISTING.listing, base, opts.cursor, WORKSPACES_LISTING.what) : undefined;
  const found: { id: string; meta?: WorkspaceMeta }[] = [];
  let more = false;
  for (const r of coveredRanges(patterns)) {
    if (found.length === opts.limit) {
      more = true;
      break;
    }
    if ("id" in r) {
      if (after !== undefined && compareKeys(`${r.id}/`, after) <= 0) continue;
      const meta = await read(r.id);
      if (meta) found.push({ id: r.id, meta });
      continue;
    }
    if (after !== undefined && compareKeys(after, r.prefix) > 0 && !after.startsWith(r.prefix)) continue; // past this range
    let from = after !== undefined && after.startsWith(r.prefix) ? base + after : undefined;
    for (;;) {
      const { result, end } = await listPageFrom(driver, { prefix: base + r.prefix, delimiter: "/", limit: opts.limit - found.length }, from, WORKSPACES_LISTING.what);
      for (const p of result.prefixes) {
        const id = p.slice(base.length, -1);
        if (ID_PATTERN.test(id)) found.push({ id });
      }
      if (end === undefined) break;
      if (found.length >= opts.limit) {
        more = true;
        break;
      }
      from = end;
    }
    if (more) break;
  }
  const metas = await Promise.all(found.map((f) => f.meta ?? read(f.id)));
  const last = found.at(-1);
  return { workspaces: metas.filter((m): m is WorkspaceMeta => m !== null), ...(more && last ? { cursor: boundCursor(WORKSPACES_LISTING.listing, base, `${last.id}/${AFTER_ALL}`) } : {}) };
}
