/**
 * The headers of every answer that sends a workspace's bytes back (the raw file GET and HEAD,
 * the export): the one place they are decided (docs/api.md, "Raw downloads"). A tenant's files
 * are whatever its agents and uploads made them, under the content type they were stored with; an
 * app that hands such a URL to a browser must not have the browser run them on the API's origin.
 * - `X-Content-Type-Options: nosniff`: the browser takes the type as sent, never guesses a page;
 * - `Content-Security-Policy: default-src 'none'; sandbox`: rendered anyway, a document loads
 *   nothing and runs no script, in an origin of its own;
 * - a type a browser runs or renders as a page (HTML, XHTML, SVG, any XML, XSL, JavaScript), or a
 *   type that does not parse as `type/subtype`, is `Content-Disposition: attachment` (saved, not
 *   shown), with the stored type kept. Every other type is sent inline as stored.
 */

/** Media types (lower case, without parameters) a browser runs as script or renders as a document. */
const ACTIVE_TYPES = new Set([
  "text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml", "text/xsl", "application/xslt+xml",
  "application/javascript", "text/javascript", "application/ecmascript", "text/ecmascript", "application/x-javascript",
  "text/vnd.wap.wml", "application/mathml+xml", "multipart/x-mixed-replace",
]);
/** `type/subtype` as RFC 9110 spells a media type's tokens. */
const MEDIA_TYPE = /^[a-z0-9!#$%&'*+.^_`|~-]+\/[a-z0-9!#$%&'*+.^_`|~-]+$/;

/** Whether a stored content type is one a browser would run or render as a page (or one that does not parse): sent as an attachment. */
export function isActiveType(contentType: string): boolean {
  const media = contentType.split(";")[0]!.trim().toLowerCase();
  return !MEDIA_TYPE.test(media) || ACTIVE_TYPES.has(media) || media.endsWith("+xml");
}

/** `attachment` naming `name` (the file's last path segment): an ASCII fallback and the exact name (RFC 6266, RFC 8187). */
function attachment(name: string): string {
  const ascii = name.replace(/[^A-Za-z0-9._-]/g, "_") || "download";
  const exact = encodeURIComponent(name).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

/**
 * The headers of a download of `path` (a workspace path, or the name an archive is saved under)
 * stored as `contentType` (none: application/octet-stream). `attachment`: always one (the export).
 */
export function downloadHeaders(path: string, contentType: string | undefined, opts: { attachment?: true } = {}): Record<string, string> {
  const type = contentType ?? "application/octet-stream";
  const name = path.slice(path.lastIndexOf("/") + 1);
  return {
    "content-type": type,
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    ...(opts.attachment || isActiveType(type) ? { "content-disposition": attachment(name) } : {}),
  };
}
