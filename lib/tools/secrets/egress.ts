/**
 * The tenant's secrets for a command's egress proxy (bash, run_code, plugins with network):
 * decrypted here, on the API, and put in the signed invocation (lib/exec/runner-auth.ts), which the
 * runner hands to the run's egress proxy outside the sandbox (infra/container/egress-proxy.ts).
 * Cost: 1 storage GET per command with network when TOOLSHED_SECRETS_KEY is set, one decryption per secret.
 */
import type { ToolContext } from "../../contract/tool.js";
import type { EgressSecret, RunRequest } from "../../exec/types.js";
import { openSecret } from "./crypto.js";
import { readSecrets } from "./store.js";

/** What the secrets of a run need of its call: the storage, the deployment's key, the tenant. */
type SecretsCall = { deps: Pick<ToolContext["deps"], "storage"> & { secretsKey?: string | undefined }; auth: Pick<ToolContext["auth"], "tenant"> };

export async function egressSecretsFor(ctx: SecretsCall): Promise<EgressSecret[]> {
  const key = ctx.deps.secretsKey;
  if (!key) return [];
  const { secrets } = await readSecrets(ctx.deps.storage, ctx.auth.tenant);
  const out: EgressSecret[] = [];
  for (const s of secrets) {
    const value = await openSecret(key, ctx.auth.tenant, s.name, s.sealed);
    for (const d of s.destinations) out.push({ name: s.name, host: d.host, header: d.header, value: (d.format ?? "{value}").replace("{value}", value) });
  }
  return out;
}

/** The run request with the tenant's egress secrets, when the command has network and the tenant has secrets. */
export async function withEgressSecrets(ctx: Pick<ToolContext, "deps" | "auth">, req: RunRequest): Promise<RunRequest> {
  if (!req.network) return req;
  const secrets = await egressSecretsFor(ctx);
  return secrets.length ? { ...req, egress_secrets: secrets } : req;
}
