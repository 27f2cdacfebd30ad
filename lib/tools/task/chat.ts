/**
 * One chat-completions call to the tenant's endpoint, through the SSRF-guarded fetch of web_fetch.
 * Errors: TIMEOUT (the task's time ran out), UNAVAILABLE (no connection, HTTP >= 400 with the status
 * and a short excerpt, an answer that is not chat-completions JSON). The key never appears in them.
 */
import { ToolError, isToolError } from "../../shared/errors.js";
import { guardedFetch, networkCause, readBounded } from "../web/fetch.js";
import { webAccess, type WebFetchDeps } from "../web/transport.js";
import type { NetMeter } from "../web/net-bytes.js";
import { redact, type ModelConfig } from "./model-config.js";

export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
}
export interface ChatReply {
  message: ChatMessage;
  usage: { prompt_tokens: number; completion_tokens: number };
}

const MAX_REPLY_BYTES = 2_000_000;

export async function chatCompletion(
  cfg: ModelConfig,
  body: { messages: ChatMessage[]; tools: unknown[] },
  opts: { timeoutMs: number; meter: NetMeter; web?: WebFetchDeps; signal?: AbortSignal },
): Promise<ChatReply> {
  const url = `${cfg.base_url.replace(/\/+$/, "")}/chat/completions`;
  const clean = (s: string) => redact(s, cfg.api_key);
  try {
    const { response, signal } = await guardedFetch(
      { url, method: "POST", headers: { authorization: `Bearer ${cfg.api_key}`, "content-type": "application/json", accept: "application/json" }, body: JSON.stringify({ model: cfg.model, ...body }), timeoutMs: Math.max(1, opts.timeoutMs), ...(opts.signal ? { signal: opts.signal } : {}) },
      { ...webAccess(opts.web, "model_endpoint"), meter: opts.meter },
    );
    const read = await Promise.race([
      readBounded(response.body, MAX_REPLY_BYTES),
      new Promise<never>((_, rej) => signal.addEventListener("abort", () => rej(new ToolError("TIMEOUT", "The model endpoint did not finish its answer within the task's time (max_seconds).", {})), { once: true })),
    ]);
    const text = new TextDecoder().decode(read.bytes);
    if (response.status >= 400) {
      const excerpt = clean(text.slice(0, 300));
      throw new ToolError("UNAVAILABLE", `The tenant's model endpoint answered HTTP ${response.status}: ${excerpt}. Retry later, or ask an admin to check PUT /v1/admin/tenants/{tenant}/model (base_url, model, api_key).`, { status: response.status, excerpt });
    }
    let json: { choices?: { message?: ChatMessage }[]; usage?: { prompt_tokens?: number; completion_tokens?: number } };
    try {
      json = JSON.parse(text);
    } catch {
      throw new ToolError("UNAVAILABLE", `The tenant's model endpoint did not answer chat-completions JSON (HTTP ${response.status}): ${clean(text.slice(0, 200))}. Ask an admin to check base_url.`, { status: response.status });
    }
    const message = json.choices?.[0]?.message;
    if (!message) throw new ToolError("UNAVAILABLE", `The tenant's model endpoint answered without choices[0].message. Ask an admin to check base_url and model.`, { status: response.status });
    return { message: { role: "assistant", content: message.content ?? null, ...(message.tool_calls?.length ? { tool_calls: message.tool_calls } : {}) }, usage: { prompt_tokens: json.usage?.prompt_tokens ?? 0, completion_tokens: json.usage?.completion_tokens ?? 0 } };
  } catch (e) {
    if (isToolError(e)) {
      const msg = clean(e.message.replace(url, "the model endpoint"));
      if (e.code === "TIMEOUT") throw new ToolError("TIMEOUT", `The model endpoint did not answer within the task's remaining time (${Math.round(opts.timeoutMs / 1000)} s of max_seconds). Give the task a smaller job, or ask an admin to raise max_seconds.`, { timeout_s: Math.round(opts.timeoutMs / 1000) });
      if (e.code === "BLOCKED") throw new ToolError("BLOCKED", `The tenant's model endpoint is refused by the SSRF guard: ${clean(e.message.replace(url, "{base_url}/chat/completions"))} Ask an admin to set a public base_url (PUT /v1/admin/tenants/{tenant}/model).`, { ...JSON.parse(clean(JSON.stringify(e.details))), subject: "model_endpoint" });
      throw new ToolError(e.code, msg, JSON.parse(clean(JSON.stringify(e.details))));
    }
    throw new ToolError("UNAVAILABLE", `Could not reach the tenant's model endpoint: ${clean(networkCause(e))}. Retry later; if it persists, ask an admin to check base_url (PUT /v1/admin/tenants/{tenant}/model).`, {});
  }
}
