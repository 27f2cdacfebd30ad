/**
 * Keys a tenant manages itself (issue #28 §5): POST/GET/DELETE /v1/keys and rotation, with the
 * `manage` scope. A key made here never holds more than the key that makes it (scopes, tools,
 * workspaces, expiry: lib/api/auth/key-bounds.ts exceedsMaker), and a key lists only keys it could
 * have made itself (its own included: keyShownTo), and revokes and rotates only itself and the keys it made.
 * Cost: create 1 GET (tenant) + 2 KV PUTs; revoke 2 KV GETs + 2+ KV DELETEs; rotate 2 KV GETs + 3 KV PUTs.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Tool } from "../../contract/tool.js";
import { ToolError } from "../../shared/errors.js";
import { keyScopesFor, parseToolList, PRESET_NAMES } from "../../run/toolset.js";
import { catalogForLists } from "../../tools/custom/tool.js";
import { exceedsMaker, keyShownTo, MAX_ROTATION_GRACE_SECONDS, parseExpiry, parseWorkspacePatterns } from "../auth/key-bounds.js";
import { createApiKey, getApiKeyById, keyInfoOf, keyNotFound, MAX_LIST_PAGE, revokeApiKey, rotateApiKey, type NewKey } from "../auth/keys.js";
import { keyListCursors, listApiKeys, type KeyCandidate } from "../auth/key-listing.js";
import { MAX_LINEAGE, SCOPES, type AuthInfo, type Scope } from "../../contract/caller.js";
import type { AppDeps } from "../deps.js";
import { parseJsonBody } from "../http.js";
import { secureRoute } from "./access.js";
import { errorResponses, newApp } from "./common.js";
import { LimitsSchema } from "./limits.js";

/** A preset or a list of tool (and preset) names; checked against the tools by parseToolList. */
export const ToolsField = z.union([z.string(), z.array(z.string()).max(200)]).openapi({ description: `The tools allowed: a preset (${PRESET_NAMES.join(", ")}) or a list of tool names (preset names in a list add their tools; the tenant's custom tools are names too). Default: all. They also bound every route: only the scopes these tools need are usable (readonly: read).`, example: "readonly" });
export const KeyBody = z.object({
  name: z.string().max(200).optional(),
  scopes: z.array(z.enum(SCOPES)).min(1).optional().openapi({ description: "Default: read, write, execute, narrowed to what `tools` need. Scopes beyond what the tools need are refused (a key acts by every route only with the scopes its tools need); approve and manage need tools \"all\"." }),
  tools: ToolsField.optional(),
  workspaces: z.array(z.string()).optional().openapi({ description: "Limit the key to these workspaces: ids, or id prefixes ending in '*' (\"proj-*\"). Any other workspace answers 404 to it, as if it did not exist. Default: every workspace.", example: ["ws1", "proj-*"] }),
  expires_at: z.string().optional().openapi({ description: "When the key stops working (ISO 8601). Default: never.", example: "2027-01-31T00:00:00Z" }),
  limits: LimitsSchema.optional().openapi({ description: "The key's own limits (docs/limits-and-quotas.md); each applies as the smaller of the key's and the tenant's" }),
}).strict();
export const KeyInfoSchema = z.object({
  key_id: z.string(), tenant: z.string(), name: z.string(), scopes: z.array(z.enum(SCOPES)),
  tools: z.union([z.string(), z.array(z.string())]).optional().openapi({ description: "A preset or tool names (listings show \"all\" for an unlimited key)" }),
  workspaces: z.array(z.string()).optional(), expires_at: z.string().optional(), created_by: z.string().optional(), limits: LimitsSchema.optional(), created_at: z.string(),
}).openapi("ApiKeyInfo");

/** A key request's body, checked: the tool list against the catalog, scopes against the tools, workspaces and expiry parsed. */
export function newKeyOf(body: unknown, catalog: readonly Tool[]): NewKey & { scopes: Scope[] } {
  const parsed = parseJsonBody(KeyBody, body ?? {});
  const { tools: given, scopes: asked, workspaces, expires_at, name, limits } = parsed;
  const tools = given !== undefined ? parseToolList(given, catalog) : undefined;
  // Scopes never exceed what the key's tools need (lib/run/toolset.ts): refused, or narrowed from the default.
  const scopes = keyScopesFor(asked, tools, catalog);
  return {
    scopes,
    ...(name !== undefined ? { name } : {}),
    ...(limits !== undefined ? { limits } : {}),
    ...(tools !== undefined ? { tools } : {}),
    ...(workspaces !== undefined ? { workspaces: parseWorkspacePatterns(workspaces) } : {}),
    ...(expires_at !== undefined ? { expires_at: parseExpiry(expires_at) } : {}),
  };
}

function refuseBeyond(child: Parameters<typeof exceedsMaker>[0], maker: AuthInfo, catalog: readonly Tool[]): void {
  const over = exceedsMaker(child, maker, catalog);
  if (over) throw new ToolError("PERMISSION_DENIED", `This API key cannot make a key with ${over}: a key only makes keys within its own scopes, tools, workspaces and expiry. Ask an admin (POST /v1/admin/tenants/{tenant}/keys) for a wider key.`, { refused_by: "key_bounds" });
}

/** The budgets a key made by `maker` draws from besides its own (AuthInfo.maker_limits): the maker's, when it has limits, then those above it. */
function makerLimitsUnder(maker: AuthInfo): Pick<AuthInfo, "maker_limits"> {
  const above = [...(maker.limits && Object.keys(maker.limits).length ? [{ key_id: maker.key_id, limits: maker.limits }] : []), ...(maker.maker_limits ?? [])];
  return above.length ? { maker_limits: above } : {};
}

/**
 * The lineage a key made by `maker` keeps (ApiKeyRecord.lineage): the maker, then the maker's own,
 * so a revoked key in the middle never hides a grandchild from its grandparent. Kept whole up to
 * MAX_LINEAGE keys (a deeper chain keeps its nearest MAX_LINEAGE, and approvals refuse it as if it
 * led to the caller); none when the maker's own is unknown (made before lineages were kept).
 */
function lineageUnder(maker: AuthInfo): { lineage?: string[] } {
  if (maker.made_by === undefined) return { lineage: [maker.key_id] };
  return maker.lineage ? { lineage: [maker.key_id, ...maker.lineage].slice(0, MAX_LINEAGE) } : {};
}

/**
 * A key of the caller's tenant that the caller may revoke or rotate: the key itself, or a key it made
 * (at any depth: the target's lineage), never another key within its bounds (PERMISSION_DENIED
 * not_maker: the listing shows it); a key beyond its bounds, like another tenant's or one never made,
 * is NOT_FOUND (keyShownTo: no oracle of its existence or its bounds). A rotation hands over the key's new secret, i.e. the key itself (its id in audit
 * entries, its approvals): an agent's key would take a human approver's and approve its own calls.
 * A revocation of a sibling would let an agent's key end the human approver's key, or another end
 * user's: denial, not escalation, refused by the same rule.
 */
async function manageable(deps: AppDeps, maker: AuthInfo, keyId: string, builtins: readonly Tool[], verb: "revoke" | "rotate"): Promise<void> {
  const target = await getApiKeyById(deps.kv, maker.tenant, keyId);
  if (target?.key_id === maker.key_id) return;
  // A key beyond the maker's bounds is one it may not know of: answered as a key never made (keyShownTo).
  if (!target || !keyShownTo(target, maker, await catalogForLists(deps, builtins, maker.tenant, [target.tools, maker.tools]))) throw keyNotFound(keyId);
  if (target.made_by !== maker.key_id && !target.lineage?.includes(maker.key_id)) {
    const why = verb === "rotate" ? "a rotation gives the key's new secret to the caller" : "a key ends only itself and the keys it made";
    const instead = verb === "rotate" ? "rotate this one with the key itself, or ask the key that made it" : "ask the key that made it, or the operator (DELETE /v1/admin/tenants/{tenant}/keys/{key_id})";
    throw new ToolError("PERMISSION_DENIED", `This API key did not make key ${keyId}, so it cannot ${verb} it: ${why}. A key ${verb}s itself and the keys it made (POST /v1/keys, at any depth); ${instead}.`, { key_id: keyId, refused_by: "not_maker" });
  }
}

const RotateBody = z.object({ grace_seconds: z.number().int().min(0).max(MAX_ROTATION_GRACE_SECONDS).optional().openapi({ description: `How long the old secret keeps working (default 3600; 0: stops at once; at most ${MAX_ROTATION_GRACE_SECONDS})` }) }).strict();
const KeyIdParam = z.object({ key_id: z.string().openapi({ param: { name: "key_id", in: "path" } }) });
/** Every key route bounds itself by the maker: only keys it could have made (keyBounded: key-bounds.ts exceedsMaker). */
const manage = { auth: "tenant", scope: "manage", keyBounded: true } as const;

/** A key request body's `tools`, as given (checked by newKeyOf). */
export const toolsAsked = (body: unknown): unknown => (body as { tools?: unknown } | undefined)?.tools;

export function tenantKeysApp(deps: AppDeps, builtins: readonly Tool[]) {
  const app = newApp();
  const cursors = keyListCursors(deps);
  app.openapi(
    createRoute(secureRoute(deps, manage, {
      method: "post", path: "/v1/keys", tags: ["keys"],
      summary: "Make an API key for this tenant (shown once), within this key's own bounds",
      request: { body: { required: false, content: { "application/json": { schema: KeyBody } } } },
      responses: { 201: { description: "The key; it is not shown again", content: { "application/json": { schema: KeyInfoSchema.extend({ key: z.string() }) } } }, ...errorResponses(400, 401, 403, 429) },
    })),
    async (c) => {
      const maker = c.get("auth");
      // A key's tools may name the tenant's custom tools (lib/tools/custom/tool.ts catalogForLists).
      const catalog = await catalogForLists(deps, builtins, maker.tenant, [toolsAsked(c.get("json")), maker.tools]);
      const asked = newKeyOf(c.get("json"), catalog);
      // Without scopes, the defaults this key holds itself (a manage-only key must name them: it holds none of them).
      const explicit = (c.get("json") as { scopes?: unknown } | undefined)?.scopes !== undefined;
      const wanted = explicit ? asked : { ...asked, scopes: asked.scopes.filter((s) => maker.scopes.includes(s)) };
      if (!wanted.scopes.length) throw new ToolError("INVALID_ARGUMENT", `scopes: this key holds none of the default scopes (read, write, execute): give the new key's scopes explicitly, within this key's own (${maker.scopes.join(", ")}).`, { field: "scopes" });
      // A maker that expires gives keys that expire no later than it: the default is its own expiry.
      const child = { ...wanted, ...(wanted.expires_at === undefined && maker.expires_at ? { expires_at: maker.expires_at } : {}), ...(wanted.workspaces === undefined && maker.workspaces ? { workspaces: maker.workspaces } : {}), ...(maker.limits ? { limits: { ...maker.limits, ...wanted.limits } } : {}) };
      refuseBeyond(child, maker, catalog);
      const { key, record } = await createApiKey(deps.kv, deps.storage, maker.tenant, { ...child, created_by: maker.key_id, ...lineageUnder(maker), ...makerLimitsUnder(maker) });
      return c.json({ key, ...keyInfoOf(record) }, 201);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, manage, {
      method: "get", path: "/v1/keys", tags: ["keys"],
      summary: "List this tenant's API keys that this key could have made (never a secret)",
      description: "KV listings are eventually consistent: a key made or revoked in the last minute may not show yet.",
      request: { query: z.object({ cursor: z.string().max(4096).optional(), limit: z.coerce.number().int().min(1).max(MAX_LIST_PAGE).optional() }) },
      responses: { 200: { description: "API keys", content: { "application/json": { schema: z.object({ keys: z.array(KeyInfoSchema), cursor: z.string().optional() }) } } }, ...errorResponses(400, 401, 403, 429) },
    })),
    async (c) => {
      const maker = c.get("auth");
      // Only the keys it could have made; the listing fills its pages with them, and seals its cursors (lib/api/auth/key-listing.ts).
      const shown = async <T extends KeyCandidate>(keys: T[]) => {
        const catalog = await catalogForLists(deps, builtins, maker.tenant, [maker.tools, ...keys.map((k) => k.tools)]);
        return keys.filter((k) => keyShownTo(k, maker, catalog));
      };
      return c.json(await listApiKeys(deps.kv, deps.storage, maker.tenant, c.req.valid("query"), cursors, shown), 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, manage, {
      method: "delete", path: "/v1/keys/{key_id}", tags: ["keys"],
      summary: "Revoke an API key of this tenant: this key itself or a key it made (at any depth)",
      description: "Takes effect at once through this instance, and everywhere within the key cache's 5 s plus the key store's propagation (Workers KV: up to 60 s; docs/keys-and-presets.md).",
      request: { params: KeyIdParam },
      responses: { 200: { description: "Revoked", content: { "application/json": { schema: z.object({ revoked: z.literal(true), key_id: z.string() }) } } }, ...errorResponses(401, 403, 404, 429) },
    })),
    async (c) => {
      const { key_id } = c.req.valid("param");
      await manageable(deps, c.get("auth"), key_id, builtins, "revoke");
      await revokeApiKey(deps.kv, c.get("auth").tenant, key_id, deps.apiKeys);
      return c.json({ revoked: true as const, key_id }, 200);
    },
  );
  app.openapi(
    createRoute(secureRoute(deps, manage, {
      method: "post", path: "/v1/keys/{key_id}/rotate", tags: ["keys"],
      summary: "Rotate an API key: a new secret (shown once); the old one keeps working for grace_seconds",
      request: { params: KeyIdParam, body: { required: false, content: { "application/json": { schema: RotateBody } } } },
      responses: { 200: { description: "The new key; it is not shown again", content: { "application/json": { schema: KeyInfoSchema.extend({ key: z.string(), old_secret_valid_until: z.string().nullable() }) } } }, ...errorResponses(400, 401, 403, 404, 429) },
    })),
    async (c) => {
      const { key_id } = c.req.valid("param");
      const grace = parseJsonBody(RotateBody, c.get("json") ?? {}).grace_seconds ?? 3600;
      await manageable(deps, c.get("auth"), key_id, builtins, "rotate");
      const now = Date.now();
      const { key, record } = await rotateApiKey(deps.kv, c.get("auth").tenant, key_id, grace, deps.apiKeys, now);
      // The old secret stops at the end of its grace or of the key itself, whichever comes first (an expiry is checked on every request).
      const graceEnd = Math.min(now + grace * 1000, record.expires_at ? Date.parse(record.expires_at) : Infinity);
      return c.json({ key, ...keyInfoOf(record), old_secret_valid_until: grace > 0 ? new Date(graceEnd).toISOString() : null }, 200);
    },
  );
  return app;
}
