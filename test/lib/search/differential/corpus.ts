/**
 * Seeded random corpora for the differential search tests (grep and glob against ripgrep): a few
 * hundred files of ASCII and unicode text (multi-byte, combining marks, case-folding oddities),
 * LF / CRLF / lone CR line ends, empty files, files without a final newline, long lines, binary
 * files, nested directories, dotfiles, ignored directories, .gitignore rules, names with spaces
 * and unicode. Names are NFC (the workspace's one path function NFC-normalizes: DESIGN.md §3.1).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { END_OF_ARCHIVE, padding, tarHeader } from "../../../../lib/archive/tar-writer.js";
import { concatBytes } from "../../../../lib/shared/text.js";
import { rng } from "../../../support/prng.js";

export type Rng = ReturnType<typeof rng>;

/** Words most files hold (common), a few hold (rare), and unicode ones (multi-byte, combining, folding). */
export const COMMON = ["const", "value", "return", "item", "index", "error"] as const;
export const RARE = ["zebraQuux", "needle42", "Frobnicate", "lone_word"] as const;
export const UNICODE = ["café", "CAFÉ", "naïve", "nai\u0308ve", "Straße", "STRASSE", "σίσυφος", "ΣΊΣΥΦΟΣ", "日本語", "😀x", "\u212Aelvin", "ſtop", "Ünïcode", "ǅemal"] as const;
const PUNCT = ["(", ")", "{", "}", ";", "=>", ".", "*", "+", "?", "[", "]", "|", "\\", "$", "^", "-", "_", "/", "#", "'", '"', "12", "3.5", "a.b", "x*y"];

const DIRS = ["", "", "src", "src/lib", "src/lib/deep", "docs", "tests", "a b", "ünï", "日本", "build", "node_modules/pkg", "vendor/x", "__pycache__", ".config", ".git", "src/.hidden"];
const STEMS = ["main", "util", "read me", "naïve", "日本", "Test_1", "x", "gen_code", "keep", "ÜBER", "a-b"];
const EXTS = [".ts", ".tsx", ".mts", ".js", ".py", ".md", ".txt", ".json", ".log", "", ".rs"];
const DOTFILES = [".env", ".hidden.ts", ".bashrc"];

/** Root and nested ignore rules (simple ones: the documented .gitignore edge is left out). */
const GITIGNORES: Record<string, string> = {
  ".gitignore": "*.log\nbuild/\n!keep.log\n",
  "src/.gitignore": "gen_*\n",
};

export interface Corpus {
  /** path → bytes, every file of the tree. */
  files: Map<string, Uint8Array>;
}

const enc = new TextEncoder();

function word(r: Rng): string {
  const x = r.next();
  if (x < 0.45) return r.pick(COMMON);
  if (x < 0.5) return r.pick(RARE);
  if (x < 0.65) return r.pick(UNICODE);
  if (x < 0.85) return r.pick(PUNCT);
  return `w${r.int(40)}`;
}

function line(r: Rng): string {
  const x = r.next();
  if (x < 0.1) return "";
  if (x < 0.13) return " \t ";
  const n = x < 0.16 ? 150 + r.int(250) : 1 + r.int(9); // a few long lines (over the 400-char cut)
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(word(r));
  const indent = r.next() < 0.3 ? "  ".repeat(1 + r.int(3)) : r.next() < 0.05 ? "\t" : "";
  return indent + parts.join(r.next() < 0.9 ? " " : "");
}

/** Text with random line ends: LF, CRLF, mixed, a lone CR inside a line; a final newline or not. */
function text(r: Rng): string {
  const n = r.next() < 0.1 ? 1 : 1 + r.int(30);
  const ending = r.pick(["\n", "\n", "\n", "\r\n", "mixed"] as const);
  let out = "";
  for (let i = 0; i < n; i++) {
    let l = line(r);
    if (r.next() < 0.03) l = `${l}\r${line(r)}`; // a lone CR is not a line end
    const eol = ending === "mixed" ? r.pick(["\n", "\r\n"]) : ending;
    out += i < n - 1 || r.next() < 0.7 ? l + eol : l;
  }
  return out;
}

function content(r: Rng): Uint8Array {
  const x = r.next();
  if (x < 0.05) return new Uint8Array(0);
  if (x < 0.09) return enc.encode(r.pick(["\n", "\r\n", "\n\n", " "]));
  if (x < 0.13) {
    // Binary: a NUL near the start, with words after it that patterns would match.
    return concatBytes([enc.encode(word(r)), new Uint8Array([0, 1, 2, 0xff]), enc.encode(text(r))]);
  }
  if (x < 0.15) return concatBytes([new Uint8Array([0xef, 0xbb, 0xbf]), enc.encode(text(r))]); // UTF-8 BOM
  return enc.encode(text(r));
}

/** `large`: with one text over 1 MB (it triples the time of a run). */
export function makeCorpus(seed: number, { n = 260, large = false } = {}): Corpus {
  const r = rng(seed);
  const files = new Map<string, Uint8Array>();
  for (const [p, t] of Object.entries(GITIGNORES)) files.set(p, enc.encode(t));
  if (large) {
    // One text over 1 MB: not packed in the index, streamed from the file itself (docs/search.md, "The index").
    let big = "";
    while (big.length < 1.1 * 1024 * 1024) big += text(r);
    files.set("src/lib/big file.txt", enc.encode(big));
  }
  while (files.size < n) {
    const dir = r.pick(DIRS);
    const name = r.next() < 0.04 ? r.pick(DOTFILES) : `${r.pick(STEMS)}${r.next() < 0.5 ? r.int(20) : ""}${r.pick(EXTS)}`;
    const path = (dir ? `${dir}/${name}` : name).normalize("NFC");
    if (files.has(path) || [...files.keys()].some((k) => k.startsWith(`${path}/`) || path.startsWith(`${k}/`))) continue;
    files.set(path, content(r));
  }
  return { files };
}

/**
 * Writes the corpus under `dir` for ripgrep, with CRLF line ends as LF in text files (grep's
 * description: "CRLF files match as if they had LF endings"; rg --crlf is not that: its \n and \s
 * do not match a CRLF's \r, and it prints the \r).
 */
export function writeCorpus(c: Corpus, dir: string): void {
  const dec = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  for (const [p, b] of c.files) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), b.includes(0) ? b : enc.encode(dec.decode(b).replaceAll("\r\n", "\n")));
  }
}

/** A tar of the given files (the import route's input). */
export function tarOf(files: Iterable<[string, Uint8Array]>): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [name, body] of files) parts.push(tarHeader({ name, size: body.length, mtime: 1_700_000_000 }), body, padding(body.length));
  parts.push(END_OF_ARCHIVE());
  return concatBytes(parts);
}
