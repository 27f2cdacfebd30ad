/**
 * A tenant's model endpoint for `task` subagents: KV `model/<tenant>` =
 * {base_url (OpenAI-compatible chat-completions base), api_key, model, max_steps?, max_seconds?}.
 * The api_key is a secret: stored, never returned (the view shows api_key_set and its last 4 characters),
 * never put in a log, a tool output or an error (redact() removes it from endpoint excerpts).
 * Cost: 1 KV read per task call; PUT/DELETE 1 KV write.
 */
import { z } from "@hono/zod-openapi";
import type { KeyValueStore } from "../../storage/types.js";
import { checkReachable, webAccess, type WebFetchDeps } from "../web/transport.js";

export const DEFAULT_MAX_STEPS = 20;
export const MAX_MAX_STEPS = 100;
export const DEFAULT_MAX_SECONDS = 300;
export const MAX_MAX_SECONDS = 900;

export const ModelConfigSchema = z
  .object({
    base_url: z.string().url().max(2000).openapi({ description: "OpenAI-compatible base URL; POST {base_url}/chat/completions is called.", example: "https://api.openai.com/v1" }),
    api_key: z.string().min(1).max(4000).openapi({ description: "Sent as Authorization: Bearer. Stored as a secret, never returned." }),
    model: z.string().min(1).max(200).openapi({ example: "gpt-4.1-mini" }),
    max_steps: z.number().int().min(1).max(MAX_MAX_STEPS).optional().openapi({ description: `Model calls per task (default ${DEFAULT_MAX_STEPS})` }),
    max_seconds: z.number().int().min(1).max(MAX_MAX_SECONDS).optional().openapi({ description: `Wall time per task (default ${DEFAULT_MAX_SECONDS})` }),
  })
  .strict()
  .openapi("ModelConfig");
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

export const ModelConfigView = z
  .object({ base_url: z.string(), model: z.string(), max_steps: z.number(), max_seconds: z.number(), api_key_set: z.boolean(), api_key_last4: z.string().openapi({ description: 'The key\'s last 4 characters, to tell keys apart; "" when the key is shorter than 16 characters (too few would be left secret).' }) })
  .openapi("ModelConfigView");

const modelKey = (tenant: string) => `model/${tenant}`;

export async function loadModelConfig(kv: KeyValueStore, tenant: string): Promise<ModelConfig | null> {
  const raw = await kv.get(modelKey(tenant));
  return raw ? (JSON.parse(raw) as ModelConfig) : null;
}

/** Checks base_url with the SSRF guard and the transport's check of its host (throws BLOCKED / INVALID_ARGUMENT), then stores. */
export async function saveModelConfig(kv: KeyValueStore, tenant: string, cfg: ModelConfig, web: WebFetchDeps | undefined): Promise<void> {
  await checkReachable(cfg.base_url, webAccess(web, "model_endpoint"));
  await kv.put(modelKey(tenant), JSON.stringify(cfg));
}

export async function deleteModelConfig(kv: KeyValueStore, tenant: string): Promise<void> {
  await kv.delete(modelKey(tenant));
}

/** What GET shows: never the key (its last 4 characters at most, none for a short key). */
export function modelView(cfg: ModelConfig): z.infer<typeof ModelConfigView> {
  return {
    base_url: cfg.base_url,
    model: cfg.model,
    max_steps: cfg.max_steps ?? DEFAULT_MAX_STEPS,
    max_seconds: cfg.max_seconds ?? DEFAULT_MAX_SECONDS,
    api_key_set: true,
    api_key_last4: cfg.api_key.length >= 16 ? cfg.api_key.slice(-4) : "",
  };
}

/** Removes the key from any text (endpoint error excerpts may echo it). */
export const redact = (text: string, key: string): string => (key.length >= 4 ? text.split(key).join("[redacted]") : text);
