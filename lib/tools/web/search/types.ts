/** One interface for every web search provider; the deployment picks one (lib/tools/web/search/from-env.ts). */
import type { NetMeter } from "../net-bytes.js";

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchQuery {
  query: string;
  /** How many results to ask for (the tool filters domains afterwards, so providers may be asked for more). */
  count: number;
  /** Providers that can filter by domain are told; the tool filters again on its side. */
  allowed_domains?: string[];
  blocked_domains?: string[];
  signal?: AbortSignal;
  /** Whose the request's network bytes are: the web_search call's (its Workspace; lib/tools/web/net-bytes.ts). */
  meter?: NetMeter;
}

export interface SearchProvider {
  /** "brave", "tavily": shown in results and errors. */
  name: string;
  search(q: SearchQuery): Promise<SearchResult[]>;
}

/** What every provider client needs: its key (a secret), its endpoint (overridable, e.g. for a local stand-in), a fetch. */
export interface ProviderConfig {
  apiKey: string;
  endpoint?: string;
  fetch?: typeof fetch;
}
