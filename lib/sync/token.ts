/**
 * Sync tokens: what the API hands the container function instead of credentials.
 * `<base64url(claims)>.<base64url(HMAC-SHA256(secret, base64url(claims)))>`; claims name
 * one tenant, one workspace and one run, and expire. WebCrypto only: Workers and Node.
 */
import { safeEqual } from "../shared/hash.js";
import { base64UrlToBytes, bytesToBase64Url } from "../shared/text.js";
import { hmacSign, type HmacKeys } from "../shared/hmac-keys.js";
import type { Caller } from "../limits/store.js";

export interface SyncClaims {
  /** tenant */
  t: string;
  /** workspace */
  w: string;
  /**
   * The instance of workspace `w` the token was minted for: its record's `created_at`. A workspace
   * deleted and made again under the same id is another one: the sync server refuses the token there
   * as if the workspace were gone (workspaceClaims; workspace-instance.ts workspaceAsMinted). Absent on tokens minted before it.
   */
  i?: string;
  /** run (idempotency key) */
  r: string;
  /** The undo journal of the call that started the run (lib/run/undo/): session, call stamp, tool. Absent: write-back not undoable. */
  u?: { s: string; c: string; n: string };
  /**
   * A detached run's meter (bash or run_code with run_in_background): the key id of the call that
   * started it. Only a run minted with it is metered where its result is stored (lib/sync/runs.ts
   * PUT /result, route "background run"), to this token's tenant, workspace and key; a foreground
   * run's token has none (its call's own record carries its sandbox time). A streamed foreground run's
   * (`s`: its caller follows it, lib/exec/stream-run.ts) is metered there only when its caller left before
   * taking its result: its call's record then has no sandbox time (billedOnce, lib/sync/runs.ts).
   */
  m?: { k: string; s?: 1 };
  /**
   * A live runner's token (lib/sync/live-types.ts): its session and generation, and for a sandbox an
   * API key started, that key's id (`k`: the sandbox ends at a poll once the key is revoked or expired).
   * Only such a token reaches /v1/sync/live/*, and only for this session.
   */
  l?: { s: string; g: string; k?: string };
  /**
   * The key whose own storage quotas (storage_bytes, files_per_workspace) the run's write-back is charged
   * under, as its direct writes are (the smaller of its and the tenant's: writeBackCaller); absent (a key
   * without them, tokens minted before): the tenant's alone.
   */
  q?: { k: string; l: StorageLimits };
  /** expiry, seconds since the epoch */
  exp: number;
}

const enc = new TextEncoder();

/**
 * HMAC-SHA256 of `data` under the sync secret, base64url (tokens, and packed write-back receipts: lib/sync/stage.ts);
 * `keys`, the app's imported keys (lib/shared/hmac-keys.ts: AppDeps.hmacKeys), undefined where there is no app (the key imported for this call).
 */
export const sign = (secret: string, data: string, keys: HmacKeys | undefined): Promise<string> => hmacSign(secret, data, keys);

/** How a token is minted or checked: `keys`, the app's imported keys (as for sign); `now`, the clock (ms). */
export interface TokenOptions {
  keys?: HmacKeys | undefined;
  now?: number;
}

type StorageLimits = { storage_bytes?: number; files_per_workspace?: number };

/** The `q` claim of a run's token for the key that starts it: its own storage quotas, when it has any. */
export function keyQuotaClaim(auth: { key_id?: string | undefined; limits?: StorageLimits | undefined }): Pick<SyncClaims, "q"> {
  const { storage_bytes, files_per_workspace } = auth.limits ?? {};
  const l = { ...(storage_bytes !== undefined ? { storage_bytes } : {}), ...(files_per_workspace !== undefined ? { files_per_workspace } : {}) };
  return Object.keys(l).length ? { q: { k: auth.key_id ?? "", l } } : {};
}

/** Whom a run's write-back is charged to: the key its token names with its storage quotas, else the tenant alone. */
export const writeBackCaller = (claims: Pick<SyncClaims, "q">): Caller => (claims.q ? { key_id: claims.q.k, limits: claims.q.l } : { key_id: "" });

/** The claims that name a call's workspace, this instance of it: every token a run or live sandbox gets is minted with them. */
export const workspaceClaims = (ws: { readonly tenant: string; readonly id: string; readonly instance?: string | undefined }): Pick<SyncClaims, "t" | "w" | "i"> => ({ t: ws.tenant, w: ws.id, ...(ws.instance !== undefined ? { i: ws.instance } : {}) });

/** A token for one run; ttlSeconds should cover the run's timeout plus the write-back. */
export async function mintSyncToken(secret: string, claims: Omit<SyncClaims, "exp">, ttlSeconds: number, { keys, now = Date.now() }: TokenOptions = {}): Promise<string> {
  if (secret.length < 16) throw new Error("sync token secret too short");
  const body = bytesToBase64Url(enc.encode(JSON.stringify({ ...claims, exp: Math.floor(now / 1000) + ttlSeconds })));
  return `${body}.${await sign(secret, body, keys)}`;
}

/** The claims of a valid, unexpired token; null otherwise. */
export async function verifySyncToken(secret: string, token: string, { keys, now = Date.now() }: TokenOptions = {}): Promise<SyncClaims | null> {
  const [body, mac, extra] = token.split(".");
  if (!body || !mac || extra !== undefined) return null;
  if (!safeEqual(await sign(secret, body, keys), mac)) return null;
  const bytes = base64UrlToBytes(body);
  if (!bytes) return null;
  try {
    const claims = JSON.parse(new TextDecoder().decode(bytes)) as SyncClaims;
    if (typeof claims.t !== "string" || typeof claims.w !== "string" || typeof claims.exp !== "number") return null;
    return claims.exp * 1000 > now ? claims : null;
  } catch {
    return null;
  }
}
