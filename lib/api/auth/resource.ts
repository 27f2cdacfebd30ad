/**
 * The protected resource a request addresses (RFC 9728, docs/oauth.md): one URL for the whole API
 * (the base: TOOLSHED_PUBLIC_URL, else the request's origin), and one per MCP URL (the base plus
 * the path of a `/v1/workspaces/{ws}/…/mcp` route). A `?tenant=<id>` on the request names the tenant
 * whose authorization servers the metadata lists, and is part of the resource URL.
 * Pure functions: the metadata route, the challenge and the token check read them.
 */
export const PRM_PATH = "/.well-known/oauth-protected-resource";

const MCP_PATH = /^\/v1\/workspaces\/[^/]+\/(?:[^/]+\/)*mcp$/;

/** This deployment's base URL as clients see it: the public URL when configured (never taken from a Host header then), else the request's origin. */
export const resourceBase = (publicUrl: string | undefined, url: URL): string => (publicUrl ? new URL(publicUrl).href : url.origin).replace(/\/+$/, "");

/** The path part of the resource a request path addresses: an MCP URL's own path, else "" (the whole API). */
export const resourcePath = (pathname: string): string => (MCP_PATH.test(pathname) ? pathname : "");

/** The tenant a request names with `?tenant=` (for discovery: which authorization servers to list), or null. */
export const tenantNamed = (url: URL): string | null => url.searchParams.get("tenant");

const tenantQuery = (url: URL) => {
  const t = tenantNamed(url);
  return t === null ? "" : `?tenant=${encodeURIComponent(t)}`;
};

/** The resource URL of a request, on `base`. */
export const resourceUrl = (base: string, url: URL): string => `${base}${resourcePath(url.pathname)}${tenantQuery(url)}`;

/** Where the metadata of a request's resource is (RFC 9728 §3.1: the well-known path inserted before the resource's path). */
export const metadataUrl = (base: string, url: URL): string => `${base}${PRM_PATH}${resourcePath(url.pathname)}${tenantQuery(url)}`;
