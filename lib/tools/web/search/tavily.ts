/**
 * Tavily: POST {endpoint} with `Authorization: Bearer <key>` and {query, max_results,
 * include_domains?, exclude_domains?}; results in `results[]` as {title, url, content, score};
 * errors as {detail: {error}} (401 bad key, 429 rate limit, 432/433 plan limits).
 */
import { plain, providerRequest, str } from "./http.js";
import type { ProviderConfig, SearchProvider } from "./types.js";

export const TAVILY_ENDPOINT = "https://api.tavily.com/search";

export function tavilyProvider(cfg: ProviderConfig): SearchProvider {
  const doFetch = cfg.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  return {
    name: "tavily",
    async search(q) {
      const payload = {
        query: q.query,
        max_results: Math.min(20, Math.max(1, q.count)),
        ...(q.allowed_domains?.length ? { include_domains: q.allowed_domains } : {}),
        ...(q.blocked_domains?.length ? { exclude_domains: q.blocked_domains } : {}),
      };
      const body = (await providerRequest(
        "tavily",
        doFetch,
        cfg.endpoint ?? TAVILY_ENDPOINT,
        { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${cfg.apiKey}` }, body: JSON.stringify(payload), ...(q.signal ? { signal: q.signal } : {}), meter: q.meter },
        (_s, b, text) => {
          const d = (b as { detail?: { error?: string } | string } | null)?.detail;
          return (typeof d === "string" ? d : d?.error) ?? (text.slice(0, 200) || "no details");
        },
      )) as { results?: unknown[] };
      return (body.results ?? []).map((r) => {
        const x = r as Record<string, unknown>;
        return { title: plain(str(x.title)), url: str(x.url), snippet: plain(str(x.content)).slice(0, 500) };
      }).filter((r) => r.url);
    },
  };
}
