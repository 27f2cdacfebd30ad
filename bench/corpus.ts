/**
 * Bench workspaces made of real source code already on the machine: text files from
 * node_modules (TypeScript, JavaScript, JSON, Markdown), each at most 256 KB, chosen evenly
 * over the sorted list so every package contributes. The 100- and 1,000-file sets are
 * subsets of the 10,000-file set. Each set is also written to bench/.data/<size>/ for ripgrep
 * and the MCP filesystem server.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

export interface CorpusFile {
  /** Workspace path (relative to node_modules, never containing node_modules, hidden or ignored segments). */
  path: string;
  text: string;
}

export interface Corpus {
  size: number;
  dir: string;
  files: CorpusFile[];
  bytes: number;
}

const MAX_FILE = 256 * 1024;
const TEXT_EXT = /\.(d\.ts|ts|mts|cts|tsx|js|mjs|cjs|jsx|json|md)$/;
/** Names Toolshed's glob/grep skip by default, and anything else that would blur the comparison. */
const SKIP_DIR = new Set(["node_modules", "vendor", "__pycache__"]);
const SAFE_PATH = /^[A-Za-z0-9@._+\-/]+$/;

function candidates(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
      if (e.name.startsWith(".")) continue;
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!SKIP_DIR.has(e.name)) walk(p);
      } else if (e.isFile() && TEXT_EXT.test(e.name) && SAFE_PATH.test(p) && p.length < 400) {
        const size = statSync(join(root, p)).size;
        if (size > 0 && size <= MAX_FILE) out.push(p);
      }
    }
  };
  walk("");
  return out.sort();
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
function readText(abs: string): string | null {
  const bytes = readFileSync(abs);
  if (bytes.subarray(0, 8192).includes(0)) return null;
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/** Up to `max` text files chosen evenly from node_modules, sorted by path. */
export function pickFiles(max: number, root = "node_modules"): CorpusFile[] {
  const all = candidates(root);
  const picked: CorpusFile[] = [];
  // Walk evenly spaced indexes; a file that is not clean UTF-8 text is replaced by the next one.
  let i = 0;
  for (let k = 0; k < max && i < all.length; k++) {
    i = Math.max(i, Math.floor((k * all.length) / max));
    for (; i < all.length; i++) {
      const text = readText(join(root, all[i]!));
      if (text !== null) {
        picked.push({ path: all[i]!, text });
        i++;
        break;
      }
    }
  }
  return picked;
}

/** The sets for each size: every (largest/size)-th file of the largest set. */
export function buildCorpora(sizes: number[], dataDir: string): Corpus[] {
  const largest = Math.max(...sizes);
  const base = pickFiles(largest);
  return sizes.map((size) => {
    const step = base.length / Math.min(size, base.length);
    const files = Array.from({ length: Math.min(size, base.length) }, (_, k) => base[Math.floor(k * step)]!);
    const dir = join(dataDir, String(size));
    writeTree(dir, files);
    return { size, dir, files, bytes: files.reduce((n, f) => n + Buffer.byteLength(f.text), 0) };
  });
}

/** Writes the files under dir (reusing it when its manifest says it already holds exactly them). */
function writeTree(dir: string, files: CorpusFile[]): void {
  const manifest = JSON.stringify(files.map((f) => [f.path, Buffer.byteLength(f.text)]));
  const manifestFile = `${dir}.manifest.json`;
  if (existsSync(dir) && existsSync(manifestFile) && readFileSync(manifestFile, "utf8") === manifest) return;
  rmSync(dir, { recursive: true, force: true });
  for (const f of files) {
    const abs = join(dir, f.path);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, f.text);
  }
  writeFileSync(manifestFile, manifest);
}

/** Restores files the benchmark changed (write/edit targets) so the next run starts equal. */
export function resetScratch(corpus: Corpus, scratchDir: string): void {
  rmSync(join(corpus.dir, scratchDir), { recursive: true, force: true });
}

/**
 * A long identifier that occurs in 1-3 files of the largest set (and so at most that in the
 * smaller ones), taken from the smallest set so every size has at least one hit.
 */
export function rareLiteral(smallest: Corpus, largest: Corpus): { literal: string; files: number } {
  const ident = /[A-Za-z_][A-Za-z0-9_]{13,40}/g;
  const counts = new Map<string, number>();
  for (const f of smallest.files) for (const m of new Set(f.text.match(ident) ?? [])) counts.set(m, 0);
  for (const f of largest.files) {
    for (const m of new Set(f.text.match(ident) ?? [])) {
      const n = counts.get(m);
      if (n !== undefined) counts.set(m, n + 1);
    }
  }
  // Deterministic choice among the rare ones: by a hash of the name, so not always "A...".
  const hash = (s: string) => [...s].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0, 7);
  const rare = [...counts].filter(([, n]) => n >= 1 && n <= 3).sort((a, b) => hash(a[0]) - hash(b[0]));
  for (const [literal] of rare) {
    // Tokens can hide inside longer identifiers: count real substring occurrences.
    const files = largest.files.filter((f) => f.text.includes(literal)).length;
    if (files >= 1 && files <= 3) return { literal, files };
  }
  throw new Error("no rare identifier found in the corpus");
}
