/**
 * The search provider a deployment configured. TOOLSHED_SEARCH_PROVIDER = "brave" | "tavily"
 * (default: the one whose key is set); keys are secrets: BRAVE_SEARCH_API_KEY, TAVILY_API_KEY;
 * TOOLSHED_SEARCH_ENDPOINT overrides the provider's URL (a proxy, a local stand-in).
 */
import { braveProvider } from "./brave.js";
import { tavilyProvider } from "./tavily.js";
import type { SearchProvider } from "./types.js";

export interface SearchEnv {
  TOOLSHED_SEARCH_PROVIDER?: string;
  TOOLSHED_SEARCH_ENDPOINT?: string;
  BRAVE_SEARCH_API_KEY?: string;
  TAVILY_API_KEY?: string;
}

export const SEARCH_SETUP_HINT =
  "Set TOOLSHED_SEARCH_PROVIDER to brave or tavily and its key as a secret (BRAVE_SEARCH_API_KEY or TAVILY_API_KEY; on Workers: wrangler secret put, on Lambda: an environment variable).";

export function searchProviderFromEnv(env: SearchEnv): SearchProvider | undefined {
  const name = env.TOOLSHED_SEARCH_PROVIDER?.toLowerCase() ?? (env.BRAVE_SEARCH_API_KEY ? "brave" : env.TAVILY_API_KEY ? "tavily" : undefined);
  const endpoint = env.TOOLSHED_SEARCH_ENDPOINT ? { endpoint: env.TOOLSHED_SEARCH_ENDPOINT } : {};
  if (name === "brave" && env.BRAVE_SEARCH_API_KEY) return braveProvider({ apiKey: env.BRAVE_SEARCH_API_KEY, ...endpoint });
  if (name === "tavily" && env.TAVILY_API_KEY) return tavilyProvider({ apiKey: env.TAVILY_API_KEY, ...endpoint });
  return undefined;
}
