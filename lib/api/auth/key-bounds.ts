/**
 * What a key may reach beyond its scopes and tools (issue #28 §5): the workspaces it is limited to
 * (ids, or id prefixes ending in `*`) and when it expires; and the one rule for keys a tenant
 * makes itself: a new key never holds more than the key that makes it (scopes, tools, workspaces,
 * expiry). Pure functions: the guard (routes/access.ts), the workspace routes and the key routes call them.
 */
import { ToolError } from "../../shared/errors.js";
import { randomId } from "../../shared/hash.js";
import type { Tool } from "../../contract/tool.js";
import { namesOf } from "../../run/toolset.js";
import type { ToolList } from "../../layout/workspace-meta.js";
import { ID_PATTERN } from "../../layout/paths.js";
import type { AuthInfo } from "../../contract/caller.js";

/** Most workspace patterns one key holds. */
export const MAX_WORKSPACE_PATTERNS = 100;
/** The longest a key may live when it is given an expiry (and the longest rotation grace). */
export const MAX_KEY_LIFETIME_DAYS = 3650;
export const MAX_ROTATION_GRACE_SECONDS = 7 * 24 * 3600;
const PREFIX_PATTERN = /^[a-z0-9][a-z0-9_-]{0,61}\*$/;

/** A key's `workspaces` as given: each an id or an id prefix ending in `*`; INVALID_ARGUMENT otherwise. */
export function parseWorkspacePatterns(input: readonly string[]): string[] {
  if (input.length === 0) throw new ToolError("INVALID_ARGUMENT", "workspaces: give at least one workspace id or prefix (e.g. [\"ws1\", \"proj-*\"]), or leave it out for every workspace.", { field: "workspaces" });
  if (input.length > MAX_WORKSPACE_PATTERNS) throw new ToolError("INVALID_ARGUMENT", `workspaces: at most ${MAX_WORKSPACE_PATTERNS} entries; use a prefix ("proj-*") for many.`, { field: "workspaces" });
  for (const p of input) {
    if (!ID_PATTERN.test(p) && !PREFIX_PATTERN.test(p)) {
      throw new ToolError("INVALID_ARGUMENT", `workspaces: ${JSON.stringify(p)} is neither a workspace id (a-z 0-9 - _, at most 63) nor a prefix ending in '*' ("proj-*").`, { field: "workspaces", value: p });
    }
  }
  return [...new Set(input)];
}

const matches = (pattern: string, id: string) => (pattern.endsWith("*") ? id.startsWith(pattern.slice(0, -1)) : id === pattern);

/** Whether a key limited to `patterns` (absent: every workspace) may reach workspace `id`. */
export const workspaceAllowed = (patterns: readonly string[] | undefined, id: string): boolean => !patterns || patterns.some((p) => matches(p, id));

/** Whether every workspace `child` reaches, `parent` reaches too. */
function patternsWithin(child: readonly string[] | undefined, parent: readonly string[] | undefined): boolean {
  if (!parent) return true;
  if (!child) return false;
  return child.every((c) => parent.some((p) => (c.endsWith("*") ? p.endsWith("*") && c.slice(0, -1).startsWith(p.slice(0, -1)) : matches(p, c))));
}

/** The id a limited key's new workspace gets when none is given: the one prefix's, else none (the caller must name it). */
export function defaultWorkspaceId(patterns: readonly string[] | undefined, random: string): string | undefined {
  if (!patterns) return undefined;
  const prefixes = patterns.filter((p) => p.endsWith("*"));
  return prefixes.length === 1 && patterns.length === 1 ? `${prefixes[0]!.slice(0, -1)}${random}`.slice(0, 63) : undefined;
}

/** Refuses a workspace id this key may not create or name (PERMISSION_DENIED: it says which it may). */
export function assertWorkspaceAllowed(auth: Pick<AuthInfo, "workspaces">, id: string, field: string): void {
  if (workspaceAllowed(auth.workspaces, id)) return;
  throw new ToolError("PERMISSION_DENIED", `${field}: this API key is limited to the workspaces ${JSON.stringify(auth.workspaces)}; ${JSON.stringify(id)} is not one of them. Use an id it covers, or a key without that limit.`, { field, workspaces: auth.workspaces });
}

/** An `expires_at` as given: an ISO time in the future, within MAX_KEY_LIFETIME_DAYS. */
export function parseExpiry(input: string, now = Date.now()): string {
  const at = Date.parse(input);
  if (!Number.isFinite(at)) throw new ToolError("INVALID_ARGUMENT", `expires_at: ${JSON.stringify(input)} is not a time; give an ISO 8601 time such as "2027-01-31T00:00:00Z".`, { field: "expires_at" });
  if (at <= now) throw new ToolError("INVALID_ARGUMENT", "expires_at is in the past: give a time in the future.", { field: "expires_at" });
  if (at > now + MAX_KEY_LIFETIME_DAYS * 86_400_000) throw new ToolError("INVALID_ARGUMENT", `expires_at: at most ${MAX_KEY_LIFETIME_DAYS} days ahead.`, { field: "expires_at" });
  return new Date(at).toISOString();
}

export const isExpired = (auth: Pick<AuthInfo, "expires_at">, now = Date.now()): boolean => auth.expires_at !== undefined && Date.parse(auth.expires_at) <= now;

export interface KeyBounds {
  scopes: readonly string[];
  tools?: ToolList;
  workspaces?: readonly string[];
  expires_at?: string;
  limits?: Readonly<Record<string, number | undefined>>;
}

/**
 * Why a key with `child`'s bounds may not be made by `maker` (nor listed, revoked or rotated by it: keyShownTo), or null. A
 * tenant's own keys never exceed the key that makes them: scopes ⊆, tools ⊆, workspaces ⊆,
 * expiry no later (a maker that expires gives keys that expire no later than it).
 */
export function exceedsMaker(child: KeyBounds, maker: AuthInfo, catalog: readonly Tool[]): string | null {
  const extraScopes = child.scopes.filter((s) => !maker.scopes.includes(s as never));
  if (extraScopes.length) return `scopes ${JSON.stringify(extraScopes)} (this key has ${JSON.stringify(maker.scopes)})`;
  const makerTools = namesOf(maker.tools);
  if (makerTools) {
    const childTools = namesOf(child.tools);
    const extra = childTools ? [...childTools].filter((t) => !makerTools.has(t)) : catalog.map((t) => t.name).filter((t) => !makerTools.has(t));
    if (extra.length) return `tools ${JSON.stringify(extra.slice(0, 10))} (this key's tools: ${JSON.stringify(maker.tools)})`;
  }
  if (!patternsWithin(child.workspaces, maker.workspaces)) return `workspaces ${child.workspaces ? JSON.stringify(child.workspaces) : "(all)"} (this key is limited to ${JSON.stringify(maker.workspaces)})`;
  if (maker.expires_at && (!child.expires_at || Date.parse(child.expires_at) > Date.parse(maker.expires_at))) return `an expiry after this key's own (${maker.expires_at})`;
  for (const [field, max] of Object.entries(maker.limits ?? {})) {
    const own = child.limits?.[field];
    if (max !== undefined && (own === undefined || own > max)) return `a ${field} limit above this key's own (${max})`;
  }
  return null;
}

/**
 * Whether `maker` may know of `key` at all: itself, or a key it could have made. The one rule for the
 * key routes: GET /v1/keys lists only these, and revoke and rotate answer any other exactly as a key
 * id never made (NOT_FOUND), so a manage key never learns a wider key's scopes, tools or workspaces
 * (which would name workspaces a limited key must meet as if they did not exist).
 */
export function keyShownTo(key: KeyBounds & { key_id: string; tools?: ToolList | "all" }, maker: AuthInfo, catalog: readonly Tool[]): boolean {
  return key.key_id === maker.key_id || !exceedsMaker({ ...key, tools: key.tools === "all" ? undefined : key.tools }, maker, catalog);
}

/**
 * The id of a workspace this key creates: the one given, if the key may reach it; a key limited to
 * one prefix gets a random id under it by default; another limited key must name one.
 */
export function newWorkspaceId(auth: AuthInfo, given: string | undefined): string | undefined {
  if (given !== undefined) {
    assertWorkspaceAllowed(auth, given, "id");
    return given;
  }
  if (!auth.workspaces) return undefined;
  const id = defaultWorkspaceId(auth.workspaces, randomId(8));
  if (id === undefined) throw new ToolError("INVALID_ARGUMENT", `id: this API key is limited to the workspaces ${JSON.stringify(auth.workspaces)}: give the new workspace's id (one they cover).`, { field: "id", workspaces: auth.workspaces });
  return id;
}

/**
 * A route that shows or changes the whole tenant (usage of every workspace, the tenant's audit log,
 * its secrets, injected in every workspace) is refused to a key limited to some workspaces:
 * PERMISSION_DENIED, naming what it may do instead. One rule for every tenant-wide route.
 */
export function assertTenantWide(auth: Pick<AuthInfo, "workspaces">, what: string, instead: string): void {
  if (!auth.workspaces) return;
  throw new ToolError("PERMISSION_DENIED", `${what} covers the whole tenant, and this API key is limited to the workspaces ${JSON.stringify(auth.workspaces)}. ${instead}`, { refused_by: "key_workspaces", workspaces: auth.workspaces });
}
