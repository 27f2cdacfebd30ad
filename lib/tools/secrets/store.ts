/**
 * A tenant's secrets: one object `t/<tenant>/secrets.json` in object storage holding, per secret,
 * its name, its destinations (shown) and its value sealed with AES-GCM (crypto.ts; never shown).
 * Every change is a conditional write over the version read (If-Match; If-None-Match: * for the
 * first), so two concurrent changes never lose one another (the loser gets CONFLICT).
 * Cost: a PUT or DELETE is 1 GET + 1 PUT; a listing 1 GET; a call that may inject 1 GET.
 */
import { z } from "@hono/zod-openapi";
import { ToolError } from "../../shared/errors.js";
import { hostPatternProblem } from "../../shared/host-pattern.js";
import { isConditionFailed, type StorageDriver } from "../../storage/types.js";
import { tenantSecretsKey } from "../../layout/paths.js";
import { sealSecret, type Sealed } from "./crypto.js";

export const MAX_SECRETS = 100;
export const MAX_DESTINATIONS = 20;
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Headers a secret may never set: the transport's own, and those of the hop or the proxy. */
export const RESERVED_SECRET_HEADERS = new Set(["host", "content-length", "content-type", "connection", "transfer-encoding", "keep-alive", "upgrade", "te", "trailer", "proxy-connection", "x-toolshed-signature"]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** What a destination's format must be, said by every check of it (the schema's length and the placeholder's count). */
const FORMAT_RULE = 'format must hold {value} exactly once and no line break (e.g. "Bearer {value}")';

export const Destination = z
  .object({
    host: z.string().min(1).max(253).openapi({ description: 'A host ("npm.example.com") or every host below a domain ("*.example.com", not the domain itself). The header goes only to https:// URLs of a matching host, on any port.', example: "npm.example.com" }),
    header: z.string().min(1).max(128).openapi({ description: "The request header that carries the secret.", example: "Authorization" }),
    format: z.string().min("{value}".length, FORMAT_RULE).max(256).optional().openapi({ description: 'The header\'s value, with {value} where the secret goes (default "{value}").', example: "Bearer {value}" }),
  })
  .strict()
  .openapi("SecretDestination");
export type Destination = z.infer<typeof Destination>;

export const SecretInput = z
  .object({
    value: z.string().min(8).max(8192).openapi({ description: "The secret. Stored encrypted, never returned, never shown to the model or the sandbox." }),
    destinations: z.array(Destination).min(1).max(MAX_DESTINATIONS),
  })
  .strict()
  .openapi("SecretInput");

export const SecretView = z
  .object({ name: z.string(), destinations: z.array(Destination), created_at: z.string(), updated_at: z.string() })
  .openapi("Secret");
export type SecretView = z.infer<typeof SecretView>;

export interface StoredSecret extends SecretView {
  sealed: Sealed;
}

export interface SecretsDoc {
  secrets: StoredSecret[];
  etag: string | null;
}

export const viewOf = ({ sealed: _s, ...view }: StoredSecret): SecretView => view;

export function checkSecretName(name: string): string {
  if (!SECRET_NAME.test(name)) throw new ToolError("INVALID_ARGUMENT", `Bad secret name ${JSON.stringify(name.slice(0, 80))}: letters, digits and '_', starting with a letter or '_', at most 64 (e.g. NPM_TOKEN).`);
  return name;
}

/** Refuses what could not be sent as a header, or could reach more than the tenant meant. */
export function checkSecretInput(input: z.infer<typeof SecretInput>): void {
  if (/[\r\n\0]/.test(input.value)) throw new ToolError("INVALID_ARGUMENT", "value has a line break or NUL; a header cannot carry it.");
  for (const d of input.destinations) {
    const problem = hostPatternProblem(d.host);
    if (problem) throw new ToolError("INVALID_ARGUMENT", `destinations: ${problem}.`, { host: d.host });
    if (!HEADER_NAME.test(d.header)) throw new ToolError("INVALID_ARGUMENT", `destinations: ${JSON.stringify(d.header)} is not a header name.`);
    if (RESERVED_SECRET_HEADERS.has(d.header.toLowerCase())) throw new ToolError("INVALID_ARGUMENT", `destinations: the ${d.header} header is set by the transport itself; a secret cannot set it.`);
    if (d.format !== undefined && (d.format.split("{value}").length !== 2 || /[\r\n\0]/.test(d.format))) throw new ToolError("INVALID_ARGUMENT", `destinations: ${FORMAT_RULE}, not ${JSON.stringify(d.format)}.`);
  }
}

export async function readSecrets(storage: StorageDriver, tenant: string): Promise<SecretsDoc> {
  const got = await storage.get(tenantSecretsKey(tenant));
  if (!got) return { secrets: [], etag: null };
  const parsed = JSON.parse(await new Response(got.body).text()) as { secrets?: StoredSecret[] };
  return { secrets: parsed.secrets ?? [], etag: got.etag };
}

async function update<T>(storage: StorageDriver, tenant: string, change: (secrets: StoredSecret[]) => { secrets: StoredSecret[]; result: T }): Promise<T> {
  const doc = await readSecrets(storage, tenant);
  const { secrets, result } = change(doc.secrets.slice());
  try {
    await storage.put(tenantSecretsKey(tenant), JSON.stringify({ secrets }), { contentType: "application/json", ...(doc.etag ? { ifMatch: doc.etag } : { ifNoneMatch: "*" }) });
  } catch (e) {
    if (isConditionFailed(e)) throw new ToolError("CONFLICT", "The tenant's secrets changed during this call (another change won); nothing was written. Retry.");
    throw e;
  }
  return result;
}

/** Creates or replaces one secret; answers its view and whether it was new. */
export async function putSecret(storage: StorageDriver, deploymentKey: string, tenant: string, name: string, input: z.infer<typeof SecretInput>, now = new Date()): Promise<{ view: SecretView; created: boolean }> {
  checkSecretName(name);
  checkSecretInput(input);
  const sealed = await sealSecret(deploymentKey, tenant, name, input.value);
  return update(storage, tenant, (secrets) => {
    const i = secrets.findIndex((s) => s.name === name);
    if (i < 0 && secrets.length >= MAX_SECRETS) throw new ToolError("QUOTA_EXCEEDED", `A tenant has at most ${MAX_SECRETS} secrets; delete one first.`, { limit: MAX_SECRETS });
    const at = now.toISOString();
    const stored: StoredSecret = { name, destinations: input.destinations, created_at: i < 0 ? at : secrets[i]!.created_at, updated_at: at, sealed };
    if (i < 0) secrets.push(stored);
    else secrets[i] = stored;
    return { secrets, result: { view: viewOf(stored), created: i < 0 } };
  });
}

export async function deleteSecret(storage: StorageDriver, tenant: string, name: string): Promise<void> {
  await update(storage, tenant, (secrets) => {
    if (!secrets.some((s) => s.name === name)) throw new ToolError("NOT_FOUND", `No secret named ${JSON.stringify(name.slice(0, 64))}. List them with GET /v1/secrets.`);
    return { secrets: secrets.filter((s) => s.name !== name), result: null };
  });
}
