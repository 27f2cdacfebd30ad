/** What the web tools (web_fetch, web_search, a custom tool's webhook, the task tool's model calls) read of the app's wiring besides ToolDeps. */
import type { ToolDeps } from "../../contract/tool.js";
import type { SearchProvider } from "./search/types.js";
import type { WebFetchDeps } from "./transport.js";

export interface WebToolDeps extends ToolDeps {
  /** The transport of web_fetch, webhooks and the model endpoint (lib/tools/web/transport.ts; default: names refused). allowLoopback is for tests only. */
  webFetch?: WebFetchDeps;
  /** web_search's provider (lib/tools/web/search/); without it web_search answers UNAVAILABLE. */
  search?: SearchProvider;
  /** TOOLSHED_SECRETS_KEY: encrypts tenant secrets at rest (lib/tools/secrets/); without it the secrets routes answer UNAVAILABLE and nothing is injected. */
  secretsKey?: string;
}
