/**
 * The `resume` token of a stopped grep: its cursor, bound to the search it belongs to (a
 * fingerprint of the arguments that choose and match files), as base64url JSON. It holds no
 * secret and grants nothing: it only says where to continue, and a forged one can only make
 * the caller's own search skip files.
 */
import { ToolError } from "../shared/errors.js";
import { fnv1aHex } from "../shared/hash.js";
import { fromBase64Url, toBase64Url } from "../shared/text.js";
import type { GrepCursor } from "./grep-types.js";

/** FNV-1a (32 bits) of the search's arguments, as hex. */
export function searchFingerprint(args: Record<string, unknown>): string {
  return fnv1aHex(JSON.stringify(Object.keys(args).sort().map((k) => [k, args[k] ?? null])));
}

export function encodeResume(c: GrepCursor, fingerprint: string): string {
  return toBase64Url(JSON.stringify({ v: 1, q: fingerprint, ...c }));
}

const num = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0;

export function decodeResume(token: string, fingerprint: string): GrepCursor {
  const bad = (why: string) =>
    new ToolError("INVALID_ARGUMENT", `resume ${why}. Pass the resume value of the previous grep's result unchanged, with the same pattern, path and filters; or call grep without resume to search from the start.`, { resume: token.slice(0, 80) });
  let o: any;
  try {
    o = JSON.parse(fromBase64Url(token));
  } catch {
    throw bad("is not a value grep gave");
  }
  if (!o || o.v !== 1 || typeof o.path !== "string" || !num(o.modified) || !num(o.entries)) throw bad("is not a value grep gave");
  if (o.q !== fingerprint) throw bad("belongs to a search with other arguments");
  const c: GrepCursor = { modified: o.modified, path: o.path, entries: o.entries };
  const f = o.file;
  if (f !== undefined) {
    const longOk = f.long === undefined || (num(f.long.units) && num(f.long.cp) && typeof f.long.matched === "boolean");
    if (typeof f.etag !== "string" || !num(f.byte) || !num(f.line) || (f.overlap !== undefined && !num(f.overlap)) || (f.count !== undefined && !num(f.count)) || !longOk || (f.overlap ?? 0) > f.byte) {
      throw bad("is not a value grep gave");
    }
    c.file = {
      etag: f.etag,
      byte: f.byte,
      line: f.line,
      ...(f.overlap !== undefined ? { overlap: f.overlap } : {}),
      ...(f.long ? { long: { units: f.long.units, cp: f.long.cp, matched: f.long.matched } } : {}),
      ...(f.count !== undefined ? { count: f.count } : {}),
    };
  }
  return c;
}
