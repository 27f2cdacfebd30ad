/** The HTTP side every search provider shares: one request, and provider errors mapped to our codes. */
import { ToolError } from "../../../shared/errors.js";
import { readBounded } from "../fetch.js";
import { meterExchange, requestBytes, type NetMeter } from "../net-bytes.js";

const MAX_ANSWER_BYTES = 2 * 1024 * 1024;

/** Seconds to wait from Retry-After (seconds or a date), else the first number of X-RateLimit-Reset (Brave), else null. */
export function retryAfterSeconds(headers: Headers): number | null {
  const ra = headers.get("retry-after");
  if (ra) {
    if (/^\d+$/.test(ra.trim())) return Number(ra.trim());
    const at = Date.parse(ra);
    if (!Number.isNaN(at)) return Math.max(0, Math.ceil((at - Date.now()) / 1000));
  }
  const reset = headers.get("x-ratelimit-reset")?.split(",")[0]?.trim();
  return reset && /^\d+$/.test(reset) ? Number(reset) : null;
}

/** One provider request: what is sent, and whose network bytes it is (the web_search call's: SearchQuery.meter). */
export interface ProviderRequestInit {
  method?: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  meter?: NetMeter | undefined;
}

/**
 * Sends the request and returns the parsed JSON answer; provider failures become RATE_LIMITED / UNAVAILABLE with the provider's reason.
 * The provider's URL is the deployment's own, so this does not pass the guarded fetch; its bytes are counted the same way (net-bytes.ts).
 */
export async function providerRequest(provider: string, doFetch: typeof fetch, url: string, init: ProviderRequestInit, describeError: (status: number, body: unknown, text: string) => string): Promise<unknown> {
  const { meter, ...sent } = init;
  let res: Response;
  try {
    res = await doFetch(url, sent);
    if (meter) res = meterExchange(meter, requestBytes(new URL(url), sent.method ?? "GET", sent.headers, sent.body), res);
  } catch (e) {
    if ((e as Error)?.name === "TimeoutError") throw new ToolError("TIMEOUT", `The ${provider} search API did not answer in time. Retry in a moment.`, { provider });
    throw new ToolError("UNAVAILABLE", `The ${provider} search API could not be reached (${String((e as Error)?.message ?? e).slice(0, 120)}). Retry later.`, { provider });
  }
  const { bytes } = await readBounded(res.body, MAX_ANSWER_BYTES);
  const text = new TextDecoder().decode(bytes);
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {}
  const why = () => describeError(res.status, body, text).replace(/\.+$/, "");
  if (res.status === 429) {
    const retry = retryAfterSeconds(res.headers);
    throw new ToolError("RATE_LIMITED", `The ${provider} search API is rate-limiting this deployment (${why()}). Retry after ${retry ?? "a few"} seconds.`, { provider, status: 429, ...(retry !== null ? { retry_after: retry } : {}) });
  }
  if (!res.ok) {
    const auth = res.status === 401 || res.status === 403;
    throw new ToolError(
      "UNAVAILABLE",
      `The ${provider} search API failed with HTTP ${res.status}: ${why()}.${auth ? " The deployment's search API key is missing, wrong or out of quota: tell the operator." : " Retry later."}`,
      { provider, status: res.status },
    );
  }
  if (body === null || typeof body !== "object") throw new ToolError("UNAVAILABLE", `The ${provider} search API answered with something that is not JSON. Retry later.`, { provider, status: res.status });
  return body;
}

export const str = (v: unknown): string => (typeof v === "string" ? v : "");
/** Provider snippets may carry highlight tags (<strong>) and entities. */
export const plain = (s: string): string => s.replace(/<[^>]{0,100}>/g, "").replace(/&(amp|lt|gt|quot|#39|#x27|nbsp);/g, (_, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", "#x27": "'", nbsp: " " })[e] ?? "").trim();
