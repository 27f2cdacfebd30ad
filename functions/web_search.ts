import { z } from "@hono/zod-openapi";
import { ToolError } from "../lib/shared/errors.js";
import { defineTool, type ToolContext } from "../lib/contract/tool.js";
import type { WebToolDeps } from "../lib/tools/web/deps.js";
import { SEARCH_SETUP_HINT } from "../lib/tools/web/search/from-env.js";
import type { SearchResult } from "../lib/tools/web/search/types.js";
import { DomainList, loadTenantPolicy } from "../lib/tools/web/policy.js";
import { matchingDomain } from "../lib/shared/web-domains.js";

export const DEFAULT_RESULTS = 10;
export const MAX_RESULTS = 20;
const SEARCH_TIMEOUT_MS = 20_000;

const description = `Search the web. Returns result titles, URLs and snippets; read a result with web_fetch.
- query: what to search for, as you would type it into a search engine.
- max_results: how many results (default: ${DEFAULT_RESULTS}, at most ${MAX_RESULTS}).
- allowed_domains: only results from these domains (and their subdomains), e.g. ["docs.python.org"]. blocked_domains: never results from these.
- Without a search provider configured for this deployment: UNAVAILABLE. A provider's rate limit gives RATE_LIMITED with retry_after (seconds).
Returns: {query, provider, results: [{title, url, snippet}]}`;

const hostOf = (url: string): string | null => {
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? u.hostname : null;
  } catch {
    return null;
  }
};

export default defineTool({
  name: "web_search",
  description,
  category: "web",
  permission: "network",
  summary: "Search the web; returns titles, URLs and snippets (filter with allowed_domains / blocked_domains). Read a result with web_fetch.",
  annotations: { title: "Search the web", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  output: z.object({ query: z.string(), provider: z.string(), results: z.array(z.object({ title: z.string(), url: z.string(), snippet: z.string() })) }),
  input: z.object({
    query: z.string().trim().min(1).max(400).describe("The search query"),
    max_results: z.number().int().min(1).max(MAX_RESULTS).optional().describe(`How many results (default: ${DEFAULT_RESULTS})`),
    allowed_domains: DomainList.optional().describe("Only results from these domains (and subdomains)"),
    blocked_domains: DomainList.optional().describe("No results from these domains"),
  }),
  async execute(args, { deps, auth, signal, ws }: ToolContext<WebToolDeps>) {
    const provider = deps.search;
    if (!provider) throw new ToolError("UNAVAILABLE", `web_search is not configured on this deployment. ${SEARCH_SETUP_HINT}`, { setup: SEARCH_SETUP_HINT });
    const max = args.max_results ?? DEFAULT_RESULTS;
    const policy = (await loadTenantPolicy(deps.kv, auth.tenant, deps.policies)).web ?? {};
    const blocked = [...(args.blocked_domains ?? []), ...(policy.blocked_domains ?? [])];
    const allowed = args.allowed_domains;
    const timeout = AbortSignal.timeout(SEARCH_TIMEOUT_MS);
    const raw = await provider.search({
      query: args.query,
      // Ask for more when we filter on our side, so a filtered page is still full.
      count: Math.min(MAX_RESULTS, allowed || blocked.length ? max * 2 : max),
      ...(allowed ? { allowed_domains: allowed } : {}),
      ...(blocked.length ? { blocked_domains: blocked } : {}),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      meter: ws,
    });
    const seen = new Set<string>();
    const results: SearchResult[] = [];
    for (const r of raw) {
      const host = hostOf(r.url);
      if (!host || seen.has(r.url) || matchingDomain(host, blocked) || (allowed && !matchingDomain(host, allowed))) continue;
      seen.add(r.url);
      results.push({ title: r.title || r.url, url: r.url, snippet: r.snippet.slice(0, 500) });
      if (results.length >= max) break;
    }
    const output = results.length
      ? results.map((r, i) => `${i + 1}. ${r.title}\n   ${r.url}${r.snippet ? `\n   ${r.snippet}` : ""}`).join("\n\n")
      : `No results for ${JSON.stringify(args.query)}${allowed || blocked.length ? " within the domain filters" : ""}. Try other words${allowed ? " or fewer allowed_domains" : ""}.`;
    return { title: `${results.length} results: ${args.query}`, output, data: { query: args.query, provider: provider.name, results } };
  },
});
