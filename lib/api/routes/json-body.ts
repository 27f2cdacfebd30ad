/**
 * The one reader of JSON request bodies (tools, workspaces, admin, and the MCP route through
 * lib/api/routes/mcp-body.ts): bounded, strict UTF-8, and parsed once. Invalid UTF-8 is refused with the offset of the first bad byte, instead of being
 * decoded to U+FFFD and stored. The route guard (access.ts) puts it on every route whose
 * definition declares a JSON body; routes read the result with c.get("json") or, for zod-openapi
 * routes, through the usual validator (which reads the text cached here).
 */
import type { Context } from "hono";
import { ToolError } from "../../shared/errors.js";
import { concatBytes } from "../../shared/text.js";
import type { AppEnv } from "../http.js";

/** Largest JSON body: a 25 MB write in base64 (33.4 MB) with room for escapes. */
export const MAX_JSON_BODY_BYTES = 40 * 1024 * 1024;
/**
 * What a body may parse into, checked before it is parsed: the bytes bound the size, not the heap
 * (4 MB of nested or empty arrays parsed into ~100 MB, of an isolate's 128 MB, and seconds of CPU).
 * Nesting deeper than MAX_JSON_DEPTH, or more than MAX_JSON_VALUES containers and elements (each
 * `[`, `{` and `,`), is refused: a tool's arguments, an MCP batch of 100 calls, a custom tool's
 * schema stay far below; a 25 MB file's content is one value.
 */
export const MAX_JSON_DEPTH = 100;
export const MAX_JSON_VALUES = 200_000;

/** Offset of the first byte that is not part of valid UTF-8 (RFC 3629: no overlongs, surrogates or > U+10FFFF), or -1. */
export function utf8ErrorOffset(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const x = i + k < n ? bytes[i + k]! : -1;
      if (x < (k === 1 ? lo : 0x80) || x > (k === 1 ? hi : 0xbf)) return i;
    }
    i += need + 1;
  }
  return -1;
}

/** The body's bytes, refusing more than `max` (by Content-Length, and while reading): PAYLOAD_TOO_LARGE. */
export async function readCapped(req: Request, max: number): Promise<Uint8Array> {
  const tooLarge = () => new ToolError("PAYLOAD_TOO_LARGE", `The JSON body is larger than ${max} bytes; nothing was written. A file this large: write it in parts of at most 25 MB, one write call each, then join them with bash (cat part1 part2 > file && rm part1 part2), or make it with a command; an app uploads it whole with PUT /v1/workspaces/{ws}/files/{path}.`, { max });
  const declared = req.headers.get("content-length");
  if (declared && Number(declared) > max) throw tooLarge();
  if (!req.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}

/**
 * Refuses a JSON text that would parse past MAX_JSON_DEPTH or MAX_JSON_VALUES, in one pass that
 * jumps over strings (a file's content is found by one indexOf). Malformed text is left to JSON.parse.
 */
function assertJsonShape(text: string): void {
  const structure = /["[\]{},]/g;
  let depth = 0;
  let values = 0;
  for (let m = structure.exec(text); m; m = structure.exec(text)) {
    const ch = m[0];
    if (ch === '"') {
      // The closing quote: the next one not escaped (preceded by an even run of backslashes).
      let end = m.index;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return;
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === 92) slashes++;
        if (slashes % 2 === 0) break;
      }
      structure.lastIndex = end + 1;
      continue;
    }
    if (ch === "]" || ch === "}") {
      depth--;
      continue;
    }
    if ((ch === "[" || ch === "{") && ++depth > MAX_JSON_DEPTH) {
      throw new ToolError("INVALID_ARGUMENT", `The request body is nested deeper than ${MAX_JSON_DEPTH} levels. Send flatter JSON.`, { max_depth: MAX_JSON_DEPTH });
    }
    if (++values > MAX_JSON_VALUES) {
      throw new ToolError("PAYLOAD_TOO_LARGE", `The request body holds more than ${MAX_JSON_VALUES} JSON values (arrays, objects and their elements). Send fewer in one request; files go as one string each, or through PUT /v1/workspaces/{ws}/files/{path}.`, { max_values: MAX_JSON_VALUES });
    }
  }
}

/**
 * Decodes and parses a JSON body; undefined when it is empty. Its shape is bounded before it is
 * parsed (assertJsonShape). `send`: what a body that is not JSON is told to send instead (the tool
 * routes' arguments by default; the MCP route's says JSON-RPC: mcp-body.ts).
 */
export function parseJsonBytes(bytes: Uint8Array, send = "Send the arguments as one JSON object."): { text: string; value: unknown } {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    const at = utf8ErrorOffset(bytes);
    throw new ToolError("INVALID_ARGUMENT", `The request body is not valid UTF-8 (first bad byte at offset ${at}). Send JSON encoded as UTF-8; binary content goes in base64 (encoding: "base64") or through the raw files route.`, { byte_offset: at });
  }
  if (text.trim() === "") return { text, value: undefined };
  assertJsonShape(text);
  try {
    return { text, value: JSON.parse(text) };
  } catch (e) {
    throw new ToolError("INVALID_ARGUMENT", `The request body is not valid JSON (${(e as Error).message}). ${send}`, {});
  }
}

/** application/json, or a +json type; parameters (charset) allowed. */
const JSON_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

/** Reads the request's JSON body once (see the file comment); sets c.var.json. A body needs a JSON Content-Type; no body is fine. */
export async function readJsonBody(c: Context<AppEnv>, max = MAX_JSON_BODY_BYTES): Promise<void> {
  const type = c.req.header("content-type") ?? "";
  const wrongType = () =>
    new ToolError("INVALID_ARGUMENT", `Send the body as JSON with 'Content-Type: application/json' (got ${type ? JSON.stringify(type.slice(0, 100)) : "none"}).`, { content_type: type.slice(0, 100) });
  const isJson = JSON_TYPE.test(type.trim());
  if (type && !isJson) throw wrongType();
  const bytes = await readCapped(c.req.raw, max);
  if (!isJson && bytes.length > 0) throw wrongType();
  const { text, value } = parseJsonBytes(bytes);
  // Later readers (zod-openapi's validator, c.req.json()) get this text, never the raw stream again.
  (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text);
  c.set("json", value);
}
