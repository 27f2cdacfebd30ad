/**
 * An OAuth principal (docs/oauth.md): the key id its tokens act under, and whether it still stands.
 * A principal has no key record; its id, `oauth_<issuer tag>_<hash of iss and sub>`, names its
 * issuer by a tag (the first 8 hex digits of the issuer's SHA-256), so "the caller as it stands"
 * (lib/api/auth/keys.ts callerNow: an approved held call, a live sandbox's polls, a background
 * subagent's calls) asks whether the tenant still trusts that issuer: one read of the tenant's OAuth
 * config. Removing an issuer (or the config) ends what its principals left running or waiting, as
 * revoking a key ends its own.
 */
import { sha256Hex } from "../../shared/hash.js";
import type { StorageDriver } from "../../storage/types.js";
import { OAUTH_KEY_ID_PREFIX } from "../../contract/caller.js";
import { loadOAuthConfig } from "./oauth-config.js";

const issuerTag = async (issuer: string) => (await sha256Hex(issuer)).slice(0, 8);

/** The key id of the principal `sub` of issuer `iss`: what audit entries, usage records and rate limits name. */
export async function oauthKeyId(iss: string, sub: string): Promise<string> {
  return `${OAUTH_KEY_ID_PREFIX}${await issuerTag(iss)}_${(await sha256Hex(`${iss}\n${sub}`)).slice(0, 20)}`;
}

/** Whether tenant `tenant` still trusts the issuer of principal `keyId` (an id of another shape: no). */
export async function oauthPrincipalStands(storage: StorageDriver, tenant: string, keyId: string): Promise<boolean> {
  const tag = /^oauth_([0-9a-f]{8})_[0-9a-f]{20}$/.exec(keyId)?.[1];
  if (!tag) return false;
  const config = await loadOAuthConfig(storage, tenant);
  for (const i of config?.issuers ?? []) if ((await issuerTag(i.issuer)) === tag) return true;
  return false;
}
