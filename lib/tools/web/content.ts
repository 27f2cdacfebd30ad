/**
 * What web_fetch makes of a response body: HTML → markdown/text/html, other text passed through,
 * binary refused, remote errors as FETCH_FAILED with an excerpt, and the one cut at max_bytes.
 */
import { ToolError } from "../../shared/errors.js";
import { looksBinary, sniffType, utf8 } from "../../shared/text.js";
import { htmlToMarkdown, htmlToText, htmlTitle } from "./html.js";

export type Format = "markdown" | "text" | "html";

/** How much HTML is read to convert (the markdown of a page is far smaller than its HTML). */
export const HTML_READ_CAP = 2 * 1024 * 1024;

const TEXTUAL = /^(text\/|application\/(json|ld\+json|xml|javascript|ecmascript|x-javascript|x-yaml|yaml|toml|x-sh|sql|graphql|csv|x-ndjson|ndjson|problem\+json)|[^/]+\/[^;]*\+(json|xml)\b)/i;

export const mediaType = (contentType: string | null): string => (contentType ?? "").split(";")[0]!.trim().toLowerCase();
export const isHtml = (type: string) => type === "text/html" || type === "application/xhtml+xml";

/**
 * "html", "text" or "binary" from the Content-Type, sniffing the bytes when it says nothing useful. A
 * text type whose first bytes hold a NUL (in no text but UTF-16/32, which must say so in its charset)
 * is binary all the same: an image or archive served as text/plain would come back as pages of U+FFFD.
 */
export function classify(contentType: string | null, head: Uint8Array, complete: boolean): "html" | "text" | "binary" {
  const type = mediaType(contentType);
  const textual = isHtml(type) || TEXTUAL.test(type);
  if (textual && head.includes(0) && !/charset=["']?utf-?(16|32)/i.test(contentType ?? "")) return "binary";
  if (isHtml(type)) return "html";
  if (TEXTUAL.test(type)) return "text";
  if (type && type !== "application/octet-stream" && type !== "binary/octet-stream") return "binary";
  if (looksBinary(head, complete)) return "binary";
  return /^\s*<(!doctype html|html|head|body)\b/i.test(new TextDecoder().decode(head.subarray(0, 512))) ? "html" : "text";
}

export function binaryError(url: string, contentType: string | null, head: Uint8Array, declared: number | null, read: number, more: boolean): ToolError {
  const type = mediaType(contentType) || sniffType(head);
  const size = declared ?? (more ? null : read);
  return new ToolError(
    "BINARY_FILE",
    `${url} is binary content (${type}, ${size !== null ? `${size} bytes` : `more than ${read} bytes`}); web_fetch returns text only. To get the file into the workspace, download it with bash (curl -o, with the network scope) instead.`,
    { url, content_type: type, ...(size !== null ? { bytes: size } : { bytes_at_least: read }) },
  );
}

/** A bot wall (a CDN's challenge page) looks like this; say so instead of a bare 403. */
function looksLikeBotWall(status: number, headers: Headers, excerpt: string): boolean {
  if (headers.get("cf-mitigated") === "challenge") return true;
  return (status === 403 || status === 429 || status === 503) && /captcha|challenge|are you a robot|verify you are human|bot detection|access denied|attention required|cloudflare|akamai|perimeterx|datadome/i.test(excerpt);
}

export function remoteError(url: string, status: number, statusText: string, headers: Headers, body: Uint8Array): ToolError {
  const type = mediaType(headers.get("content-type"));
  const raw = new TextDecoder().decode(body);
  const text = isHtml(type) ? htmlToText(raw, 2000).content : raw;
  const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 300);
  const bot = looksLikeBotWall(status, headers, `${excerpt} ${raw.slice(0, 4000)}`);
  const what = bot
    ? `the site refused automated access (HTTP ${status}, a bot wall or challenge page). This is the website's answer, not a Toolshed permission error; the page cannot be fetched this way: look for another source, an API, or a cached copy.`
    : status === 404 || status === 410
      ? `the page does not exist (HTTP ${status}). Check the URL, or search for the page.`
      : status === 401 || status === 403
        ? `the site refused the request (HTTP ${status}): it needs a login or forbids this page. This is the website's answer, not a Toolshed permission error.`
        : status === 429
          ? `the site is rate-limiting us (HTTP 429)${headers.get("retry-after") ? `; it asks to retry after ${headers.get("retry-after")} s` : ""}. Retry later.`
          : status >= 500
            ? `the site had a server error (HTTP ${status}). Retry later.`
            : `the site answered HTTP ${status}${statusText ? ` ${statusText}` : ""}.`;
  return new ToolError("FETCH_FAILED", `Fetching ${url} failed: ${what}${excerpt ? ` Its answer began: "${excerpt}"` : ""}`, {
    url, status, ...(type ? { content_type: type } : {}), excerpt, ...(bot ? { bot_wall: true } : {}), ...(headers.get("retry-after") ? { retry_after: headers.get("retry-after") } : {}),
  });
}

/** The page in the asked format; stops converting past `limit` characters (`complete: false`). */
export function convert(kind: "html" | "text", format: Format, raw: string, base: string, limit: number): { title?: string; content: string; complete: boolean } {
  if (kind === "text" || format === "html") {
    const title = kind === "html" ? htmlTitle(raw) : undefined;
    return { ...(title ? { title } : {}), content: raw, complete: true };
  }
  return format === "text" ? htmlToText(raw, limit) : htmlToMarkdown(raw, base, limit);
}

/** The first `max` UTF-8 bytes of text, cut on a line boundary when one is near, never inside a character. */
export function cutHead(text: string, max: number): { text: string; bytes: number; cut: boolean } {
  const bytes = utf8.encode(text);
  if (bytes.length <= max) return { text, bytes: bytes.length, cut: false };
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  let kept = new TextDecoder().decode(bytes.subarray(0, end));
  const nl = kept.lastIndexOf("\n");
  if (nl > kept.length * 0.8) kept = kept.slice(0, nl);
  return { text: kept, bytes: bytes.length, cut: true };
}
