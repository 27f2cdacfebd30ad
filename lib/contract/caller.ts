/**
 * Who calls: the tenant, key and scopes an API key resolves to (lib/api/auth/keys.ts stores keys;
 * lib/run/toolset.ts decides what they may use). Types and constants only: every layer from the tool
 * contract up reads them.
 */
import type { ToolList } from "../layout/workspace-meta.js";
import type { Limits } from "../limits/fields.js";

/** `approve` answers pending calls (ask_user, the approval gate); `manage` adds and changes the tenant's custom tools; neither is in the default set, so an agent's key cannot approve its own calls or define tools. */
export const SCOPES = ["read", "write", "execute", "network", "approve", "manage"] as const;
export type Scope = (typeof SCOPES)[number];
export const DEFAULT_SCOPES: Scope[] = ["read", "write", "execute"];

/** The key id of an OAuth principal (lib/api/auth/oauth-token.ts): no API key record stands behind it. */
export const OAUTH_KEY_ID_PREFIX = "oauth_";

export interface AuthInfo {
  tenant: string;
  key_id: string;
  scopes: Scope[];
  /** The key's tool list (absent: all); lib/run/toolset.ts applies it. */
  tools?: ToolList;
  /** The workspaces it may reach (absent: all): ids or prefixes ending in `*`; the route guard applies it (lib/api/auth/key-bounds.ts). */
  workspaces?: string[];
  /** When the presented secret stops working: the key's expiry, or the end of a rotated secret's grace. */
  expires_at?: string;
  /**
   * When the key itself ends (its own expiry), whatever secret presented it: not a rotated secret's
   * grace, and absent for an OAuth principal (its tokens are renewed). What the key starts that
   * outlives the call (a live sandbox) ends by then.
   */
  key_expires_at?: string;
  /** The key id of the key that made this one (POST /v1/keys); absent: made by the admin. A held call is never approved by its key or a key it made (lib/run/pending/approve.ts). */
  made_by?: string;
  /** Every key above this one, nearest first (made_by first), as kept when it was made; absent: made by the admin, or before lineages were kept. */
  lineage?: string[];
  /** The key's own limits (absent: the tenant's); lib/limits applies them. */
  limits?: Limits;
  /** The keys above it with limits of their own, nearest first, as kept when it was made: it draws from their budgets too (lib/limits/store.ts Caller). */
  maker_limits?: { key_id: string; limits: Limits }[];
}

/** The most keys a key's lineage keeps (AuthInfo.lineage): a chain of makers deeper than this is refused approvals as if it led to the caller. */
export const MAX_LINEAGE = 9;
