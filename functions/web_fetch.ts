import { z } from "@hono/zod-openapi";
import { ToolError } from "../lib/shared/errors.js";
import { sizeText, statusReporter } from "../lib/contract/progress.js";
import { defineTool, MAX_OUTPUT_CHARS, type ToolContext, type ToolResult } from "../lib/contract/tool.js";
import type { WebToolDeps } from "../lib/tools/web/deps.js";
import { classify, binaryError, convert, cutHead, HTML_READ_CAP, mediaType, remoteError, type Format } from "../lib/tools/web/content.js";
import { guardedFetch, readBounded, timeoutError } from "../lib/tools/web/fetch.js";
import { webAccess, type WebAccess } from "../lib/tools/web/transport.js";
import { secretInjector, type SecretInjector } from "../lib/tools/secrets/inject.js";
import { checkWebPolicy, loadTenantPolicy } from "../lib/tools/web/policy.js";
import { safeHref } from "../lib/shared/ssrf.js";

export const DEFAULT_MAX_BYTES = 51_200;
export const MAX_MAX_BYTES = 102_400;
const ERROR_EXCERPT_BYTES = 4096;
export const ACCEPT = "text/markdown, text/html;q=0.9, */*;q=0.8";
const USER_AGENT = "Mozilla/5.0 (compatible; Toolshed-web_fetch/0.1)";
/** Set by us, never by the caller. */
const RESERVED_HEADERS = new Set(["host", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade", "te", "trailer", "proxy-authorization", "proxy-connection"]);

const description = `Fetch a web page and return it as clean Markdown (or text, or raw HTML).
- url: an absolute http(s) URL. Only public internet addresses are reached: private, loopback, link-local and cloud-metadata addresses are refused (BLOCKED), also after redirects (at most 5, each checked).
- format: "markdown" (default: "markdown") keeps headings, lists, tables, links, code blocks with their language and images as [Image: alt]; scripts, styles and navigation are removed. "text" is plain text (smaller); "html" is the page's HTML as sent. JSON, plain text and markdown come back as they are.
- max_bytes: the most content returned (default: ${DEFAULT_MAX_BYTES}, at most ${MAX_MAX_BYTES}); a longer page is cut and says so.
- timeout: seconds for the whole fetch (default: 30, at most 120).
- method: "GET" or "POST" (default: "GET"); headers: extra request headers; body: the POST body (a string).
- A URL outside the tenant's allowed domains waits for a human's approval: NEEDS_APPROVAL with details.pending_id (get the outcome with the pending_result tool).
- The tenant's secrets are added as headers to https requests of the hosts they are bound to; their values never show in a result ({{secret:NAME}} stands in).
- Errors: BLOCKED (refused address or domain, with the reason), FETCH_FAILED (the site answered HTTP >= 400: its status and the start of its answer; a 403 from a bot wall says so), TIMEOUT, UNAVAILABLE (DNS or connection failure), BINARY_FILE (images, PDFs, archives: not returned).
Returns: {url, final_url, status, content_type, title?, bytes, truncated, content, redirects}`;

const Input = z.object({
  url: z.string().min(1).max(8192).describe("Absolute http(s) URL"),
  format: z.enum(["markdown", "text", "html"]).optional().describe('How to return HTML (default: "markdown")'),
  max_bytes: z.number().int().min(1).max(MAX_MAX_BYTES).optional().describe(`Most bytes of content returned (default: ${DEFAULT_MAX_BYTES})`),
  timeout: z.number().min(1).max(120).optional().describe("Seconds for the whole fetch (default: 30)"),
  method: z.enum(["GET", "POST"]).optional().describe('HTTP method (default: "GET")'),
  headers: z.record(z.string().max(256), z.string().max(8192)).optional().describe("Extra request headers"),
  body: z.string().max(1_048_576).optional().describe("Request body, for POST"),
});

export default defineTool({
  name: "web_fetch",
  description,
  category: "web",
  permission: "network",
  summary: "Fetch a public http(s) URL and return the page as Markdown (or text, or HTML), cut at max_bytes; private and metadata addresses are refused.",
  annotations: { title: "Fetch web page", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  output: z.object({ url: z.string(), final_url: z.string(), status: z.number().int(), content_type: z.string().nullable(), title: z.string().optional(), bytes: z.number().int(), truncated: z.boolean(), content: z.string(), redirects: z.array(z.string()) }),
  input: Input,
  async execute(args, ctx: ToolContext<WebToolDeps>) {
    // The tenant's secrets go to the hosts they are bound to (docs/secrets.md); what comes back never shows their values.
    const access = webAccess(ctx.deps.webFetch, "web_fetch");
    const secrets = secretInjector({ storage: ctx.deps.storage, secretsKey: ctx.deps.secretsKey, tenant: ctx.auth.tenant, guard: access.guard });
    try {
      return secrets.redactDeep(await fetchPage(args, ctx, access, secrets));
    } catch (e) {
      throw secrets.redactError(e);
    }
  },
});

async function fetchPage(args: z.infer<typeof Input>, ctx: ToolContext<WebToolDeps>, access: WebAccess, secrets: SecretInjector): Promise<ToolResult> {
  const { deps, auth, signal } = ctx;
  const format: Format = args.format ?? "markdown";
  const maxBytes = args.max_bytes ?? DEFAULT_MAX_BYTES;
  const timeoutMs = Math.round((args.timeout ?? 30) * 1000);
  const method = args.method ?? "GET";
  if (args.body !== undefined && method !== "POST") throw new ToolError("INVALID_ARGUMENT", 'body is sent only with method: "POST". Drop body, or set method: "POST".');
  const headers: Record<string, string> = { accept: ACCEPT, "user-agent": USER_AGENT };
  for (const [name, value] of Object.entries(args.headers ?? {})) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new ToolError("INVALID_ARGUMENT", `Invalid header name ${JSON.stringify(name)}.`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) throw new ToolError("INVALID_ARGUMENT", `The ${name} header is set by web_fetch itself; remove it from headers.`);
    if (/[\r\n\0]/.test(value)) throw new ToolError("INVALID_ARGUMENT", `The value of header ${name} has a line break or NUL.`);
    headers[name.toLowerCase()] = value;
  }
  const policy = (await loadTenantPolicy(deps.kv, auth.tenant, deps.policies)).web ?? {};
  // A human approved this call (the approval gate): its own host may be outside allowed_domains; a redirect elsewhere may not.
  const approvedHost = ctx.approved && URL.canParse(args.url) ? new URL(args.url).hostname : undefined;
  const fetched = await guardedFetch(
    { url: args.url, method, headers, ...(args.body !== undefined ? { body: args.body } : {}), timeoutMs, ...(signal ? { signal } : {}) },
    { ...access, checkHop: (u) => checkWebPolicy(u, policy, approvedHost), secrets, meter: ctx.ws },
  );
  const { response, finalUrl } = fetched;
  const final = safeHref(finalUrl);
  const progress = statusReporter(ctx, fetchedStatus(bodyLength(response.headers)));
  const read = async (cap: number) => {
    try {
      return await readBounded(response.body, cap, progress?.update);
    } catch (e) {
      if (fetched.signal.aborted) throw timeoutError(finalUrl, timeoutMs);
      throw new ToolError("UNAVAILABLE", `The connection to ${final} broke while reading the page (${String((e as Error)?.message ?? e).slice(0, 120)}). Retry.`, { url: final });
    }
  };
  if (response.status >= 400) {
    const { bytes } = await read(ERROR_EXCERPT_BYTES);
    throw remoteError(final, response.status, response.statusText, response.headers, bytes);
  }
  const contentType = response.headers.get("content-type");
  const type = mediaType(contentType);
  const declared = Number(response.headers.get("content-length") ?? NaN);
  const declaredBytes = Number.isFinite(declared) ? declared : null;
  // HTML is read up to HTML_READ_CAP to convert; other text only as far as max_bytes (+1 to know it goes on).
  const htmlLike = type === "text/html" || type === "application/xhtml+xml" || (!type && format !== "html");
  const body = await read(htmlLike && format !== "html" ? HTML_READ_CAP : maxBytes + 1);
  progress?.finish();
  const kind = classify(contentType, body.bytes.subarray(0, 8192), !body.more);
  if (kind === "binary") throw binaryError(final, contentType, body.bytes.subarray(0, 16), declaredBytes, body.bytes.length, body.more);
  const raw = decode(body.bytes, contentType);
  const page = convert(kind, format, raw, finalUrl.href, maxBytes);
  const cut = cutHead(page.content, maxBytes);
  const truncated = cut.cut || body.more || !page.complete;
  const note = truncated ? truncationNote({ kept: utf8Length(cut.text), total: cut.bytes, whole: !body.more && page.complete, readAll: !body.more, bodyBytes: body.bytes.length, maxBytes, format, kind }) : "";
  const data = {
    url: args.url,
    final_url: final,
    status: response.status,
    content_type: type || null,
    ...(page.title ? { title: page.title } : {}),
    bytes: body.bytes.length,
    truncated,
    content: cut.text,
    redirects: fetched.redirects,
  };
  const header = `${page.title ? `# ${page.title}\n` : ""}URL: ${final}${final !== args.url ? ` (from ${args.url})` : ""}\n\n`;
  // The output of every tool is capped (MAX_OUTPUT_CHARS); keep the head here rather than let that cap cut the middle.
  const room = MAX_OUTPUT_CHARS - utf8Length(header) - utf8Length(note) - 400;
  const shown = cutHead(cut.text, room);
  // The model reads only the output: what it lost is said with what to do (data.content, which holds it all, is the app's).
  const shownBytes = utf8Length(shown.text);
  const shownNote = shown.cut
    ? `\n\n[The output shows the first ${shownBytes} of the ${utf8Length(cut.text)} bytes returned (one output holds at most ${MAX_OUTPUT_CHARS} characters); the last ${utf8Length(cut.text) - shownBytes} are not shown. To see them, fetch a narrower URL${kind === "html" && format !== "text" ? ', or use format: "text", which is smaller' : ""}.]`
    : "";
  return { title: page.title ?? final, output: `${header}${shown.text}${shownNote}${note}`, data };
}

/** The body's length as sent, when the response says it and sends it unencoded (a compressed body decodes to more bytes). */
function bodyLength(headers: Headers): number | undefined {
  const encoding = (headers.get("content-encoding") ?? "identity").trim().toLowerCase();
  const n = Number(headers.get("content-length") ?? NaN);
  return encoding === "identity" && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** web_fetch's progress: bytes of the body received, of the Content-Length when known (never a total below what came). */
const fetchedStatus = (length: number | undefined) => (done: number) => {
  const total = length !== undefined && length >= done ? length : undefined;
  return { message: `fetched ${sizeText(done)}${total !== undefined ? ` of ${sizeText(total)}` : ""}`, done, ...(total !== undefined ? { total } : {}) };
};

const utf8Length = (s: string) => new TextEncoder().encode(s).length;

function decode(bytes: Uint8Array, contentType: string | null): string {
  const charset = contentType?.match(/charset=["']?([\w.:-]+)/i)?.[1];
  try {
    return new TextDecoder(charset ?? "utf-8").decode(bytes);
  } catch {
    return new TextDecoder("utf-8").decode(bytes);
  }
}

function truncationNote(o: { kept: number; total: number; whole: boolean; readAll: boolean; bodyBytes: number; maxBytes: number; format: Format; kind: "html" | "text" }): string {
  const of = o.whole ? `of ${o.total} bytes` : `of more than ${o.total} bytes${o.readAll ? "" : ` (only the first ${o.bodyBytes} bytes of the page were read)`}`;
  const ways = [
    o.maxBytes < MAX_MAX_BYTES ? `call again with max_bytes: ${MAX_MAX_BYTES}` : null,
    o.kind === "html" && o.format !== "text" ? 'use format: "text", which is smaller' : null,
    "web_fetch cannot start in the middle of a page, so for the rest fetch a narrower URL (a sub-page, a raw file, an API or a paginated URL)",
  ].filter(Boolean);
  return `\n\n[Content cut at ${o.kept} ${of}. To see more: ${ways.join("; ")}.]`;
}
