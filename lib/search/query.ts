/**
 * Trigram queries: a boolean formula over trigrams that every file containing a match must
 * satisfy, made from a literal here and from a regular expression in regex-query.ts. From a
 * regular expression (RE2 syntax) to such a formula (Russ Cox, "Regular Expression
 * Matching with a Trigram Index", simplified). The formula is *conservative*: when in
 * doubt a part becomes ALL (true), which only widens the candidate set; the regex itself
 * always verifies the candidates. A pattern with no usable literal gives ALL (scan every
 * text file).
 *
 * Rules: a concatenation ANDs the mandatory literal runs it contains; an alternation ORs
 * its branches; an atom that may be absent (?, *, {0,n}) contributes nothing; a group
 * repeated at least once contributes its own formula. Classes, ., \d, \w... break runs.
 */
import { literalTrigrams } from "./trigrams.js";

export type Query =
  | { op: "all" }
  | { op: "none" }
  | { op: "tri"; t: number }
  | { op: "and"; of: Query[] }
  | { op: "or"; of: Query[] };

export const ALL: Query = { op: "all" };
export const NONE: Query = { op: "none" };

export function and(parts: Query[]): Query {
  const of: Query[] = [];
  for (const p of parts) {
    if (p.op === "none") return NONE;
    if (p.op === "all") continue;
    if (p.op === "and") of.push(...p.of);
    else of.push(p);
  }
  if (of.length === 0) return ALL;
  return of.length === 1 ? of[0]! : { op: "and", of };
}

export function or(parts: Query[]): Query {
  const of: Query[] = [];
  for (const p of parts) {
    if (p.op === "all") return ALL;
    if (p.op === "none") continue;
    if (p.op === "or") of.push(...p.of);
    else of.push(p);
  }
  if (of.length === 0) return NONE;
  return of.length === 1 ? of[0]! : { op: "or", of };
}

/** AND of the trigrams of a literal string (ALL when shorter than three folded bytes). */
export function literalQuery(text: string, caseInsensitive = false): Query {
  const pieces = caseInsensitive ? splitForCaseInsensitive(text) : [text];
  return and(pieces.flatMap((p) => literalTrigrams(p).map((t): Query => ({ op: "tri", t }))));
}

/**
 * Under case-insensitive matching a non-ASCII letter may match another byte sequence
 * (é / É), which the ASCII-only fold does not cover: cut literals there. U+212A and U+017F
 * are folded to ASCII by the index and may stay.
 */
function splitForCaseInsensitive(text: string): string[] {
  const out: string[] = [];
  let cur = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80 || cp === 0x212a || cp === 0x17f) cur += ch;
    else {
      if (cur) out.push(cur);
      cur = "";
    }
  }
  if (cur) out.push(cur);
  return out;
}

/** Every trigram leaf of a query. */
export function leaves(q: Query, out: number[] = []): number[] {
  if (q.op === "tri") out.push(q.t);
  else if (q.op === "and" || q.op === "or") for (const x of q.of) leaves(x, out);
  return out;
}

/** Evaluates a query on a set of trigrams (tests and small inputs). */
export function evalQuery(q: Query, has: (t: number) => boolean): boolean {
  switch (q.op) {
    case "all":
      return true;
    case "none":
      return false;
    case "tri":
      return has(q.t);
    case "and":
      return q.of.every((x) => evalQuery(x, has));
    case "or":
      return q.of.some((x) => evalQuery(x, has));
  }
}
