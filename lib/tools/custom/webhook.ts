/**
 * The webhook backend: POST `{tool, call_id, arguments, workspace, session}` as JSON to the tool's
 * URL through the one guarded fetch (lib/tools/web/fetch.ts, lib/tools/web/transport.ts; one hop, redirects are
 * not followed: the signed body goes only where the definition says), signed with
 * `X-Toolshed-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
 * The answer: `{content:[{type:"text",text}], is_error?}` or any JSON (shown as JSON).
 */
import type { WebToolDeps } from "../web/deps.js";
import { ToolError } from "../../shared/errors.js";
import { randomId } from "../../shared/hash.js";
import type { ToolContext } from "../../contract/tool.js";
import { guardedFetch, readBounded, timeoutError } from "../web/fetch.js";
import { safeHref } from "../../shared/ssrf.js";
import { webAccess } from "../web/transport.js";
import { secretInjector, type SecretInjector } from "../secrets/inject.js";
import type { CustomToolInput } from "./definition.js";

export const MAX_WEBHOOK_RESPONSE = 200_000;
export const SIGNATURE_HEADER = "x-toolshed-signature";

export async function hmacHex(secret: string, message: string): Promise<string> {
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const sig = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(message)));
  return [...sig].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export async function signatureHeader(secret: string, body: string, now = Date.now()): Promise<string> {
  const t = Math.floor(now / 1000);
  return `t=${t},v1=${await hmacHex(secret, `${t}.${body}`)}`;
}

export interface WebhookReply {
  text: string;
  is_error: boolean;
  json: unknown;
}

type WebhookBackend = Extract<CustomToolInput["backend"], { type: "webhook" }>;

/**
 * The tenant's secrets bound to the webhook's host go with the call (docs/secrets.md); its answer and
 * errors never show their values, nor the tool's signing secret (a server that knows it may echo it).
 */
export async function callWebhook(def: CustomToolInput, backend: WebhookBackend, secret: string, args: unknown, ctx: ToolContext<WebToolDeps>): Promise<WebhookReply> {
  const access = webAccess(ctx.deps.webFetch, "webhook");
  const secrets = secretInjector({ storage: ctx.deps.storage, secretsKey: ctx.deps.secretsKey, tenant: ctx.auth.tenant, guard: access.guard, alsoRedact: [{ name: `${def.name}_webhook_secret`, value: secret }] });
  try {
    return secrets.redactDeep(await post(def, backend, secret, args, ctx, secrets));
  } catch (e) {
    throw secrets.redactError(e);
  }
}

async function post(def: CustomToolInput, backend: WebhookBackend, secret: string, args: unknown, ctx: ToolContext<WebToolDeps>, secrets: SecretInjector): Promise<WebhookReply> {
  const body = JSON.stringify({ tool: def.name, call_id: `call_${randomId(16)}`, arguments: args, workspace: ctx.ws.id, session: ctx.session });
  const timeoutMs = (backend.timeout ?? 30) * 1000;
  const headers = { "content-type": "application/json", accept: "application/json", "user-agent": "Toolshed-webhook/0.1", [SIGNATURE_HEADER]: await signatureHeader(secret, body) };
  const { response: res, finalUrl: url, signal } = await guardedFetch(
    { url: backend.url, method: "POST", headers, body, timeoutMs, followRedirects: false, ...(ctx.signal ? { signal: ctx.signal } : {}) },
    { ...webAccess(ctx.deps.webFetch, "webhook"), secrets, meter: ctx.ws },
  );
  let got;
  try {
    got = await readBounded(res.body, MAX_WEBHOOK_RESPONSE);
  } catch {
    if (signal.aborted && !ctx.signal?.aborted) throw timeoutError(url, timeoutMs);
    throw new ToolError("UNAVAILABLE", `The connection to the ${def.name} webhook broke while reading its answer; retry.`);
  }
  const text = new TextDecoder().decode(got.bytes);
  const where = safeHref(url);
  if (res.status >= 300) throw new ToolError("FETCH_FAILED", `The ${def.name} webhook (${where}) answered HTTP ${res.status}${res.status < 400 ? " (redirects are not followed)" : ""}: ${text.slice(0, 500)}`, { status: res.status });
  if (got.more) throw new ToolError("FETCH_FAILED", `The ${def.name} webhook answered more than ${MAX_WEBHOOK_RESPONSE} bytes; a result must be smaller.`, { status: res.status });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ToolError("FETCH_FAILED", `The ${def.name} webhook answered something that is not JSON: ${JSON.stringify(text.slice(0, 200))}.`, { status: res.status });
  }
  const o = json as { content?: unknown; is_error?: unknown };
  if (o && typeof o === "object" && Array.isArray(o.content)) {
    const t = (o.content as { type?: string; text?: unknown }[]).map((c) => (c?.type === "text" && typeof c.text === "string" ? c.text : `[${c?.type} content]`)).join("\n");
    return { text: t, is_error: o.is_error === true, json };
  }
  return { text: JSON.stringify(json, null, 2), is_error: false, json };
}
