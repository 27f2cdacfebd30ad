/**
 * Brave Search API: GET {endpoint}?q=&count= with `X-Subscription-Token`; results in `web.results[]`
 * as {title, url, description}; errors as {type: "ErrorResponse", error: {code, detail, status}};
 * 429 carries X-RateLimit-Reset (seconds, per window, comma-separated).
 */
import { plain, providerRequest, str } from "./http.js";
import type { ProviderConfig, SearchProvider } from "./types.js";

export const BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search";

export function braveProvider(cfg: ProviderConfig): SearchProvider {
  const doFetch = cfg.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  return {
    name: "brave",
    async search(q) {
      const url = new URL(cfg.endpoint ?? BRAVE_ENDPOINT);
      url.searchParams.set("q", q.query);
      url.searchParams.set("count", String(Math.min(20, Math.max(1, q.count))));
      const body = (await providerRequest("brave", doFetch, url.href, { headers: { accept: "application/json", "x-subscription-token": cfg.apiKey }, ...(q.signal ? { signal: q.signal } : {}), meter: q.meter }, (_s, b) => {
        const err = (b as { error?: { code?: string; detail?: string } } | null)?.error;
        return err ? [err.code, err.detail].filter(Boolean).join(": ") : "no details";
      })) as { web?: { results?: unknown[] } };
      return (body.web?.results ?? []).map((r) => {
        const x = r as Record<string, unknown>;
        return { title: plain(str(x.title)), url: str(x.url), snippet: plain(str(x.description)) };
      }).filter((r) => r.url);
    },
  };
}
