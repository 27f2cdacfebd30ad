/**
 * The benchmarked operations and how each system performs them. Every function returns the
 * milliseconds of the measured call; "cycle" ops (edit) do their untimed read first.
 * Baselines that lack an op leave it undefined (shown as "-" in the table).
 */
import type { McpFilesystem } from "./baselines/mcp.ts";
import type { FloorClient } from "./baselines/floor.ts";
import { rg } from "./baselines/rg.ts";
import type { Corpus } from "./corpus.ts";
import type { ToolshedClient } from "./toolshed.ts";

export type System = "toolshed" | "floor" | "rg" | "mcp";
export type Run = (i: number) => Promise<number>;

export interface Op {
  name: string;
  /** The Toolshed tool it needs (the row is "n/a (tool missing)" without it). */
  tool: string;
  run: Partial<Record<System, Run>>;
  /** Result sizes each system reported on its last call, compared in the checks section. */
  found: Partial<Record<System, number>>;
  /** The count the corpus itself gives (computed locally), when there is one. */
  expected?: number;
  /** Toolshed's own account of its last call (grep: data.stats and completeness). */
  details?: unknown;
}

/** Where the write/edit targets live (a directory of their own, removed after the run). */
export const SCRATCH = "zz-bench";

export const GLOB = "**/*.ts";
const GLOB_RE = "^(?:.*/)?[^/]*\\.ts$";
export const COMMON = "function";
export const NO_LITERAL = "\\w+\\s*=>\\s*\\{";
const HEAD = 50;
/** Files of one files_with_matches page: Toolshed's default head_limit; the baselines stop there too. */
const PAGE = 100;
const RG = ["--no-ignore", "--no-config"];

export interface Systems {
  toolshed: ToolshedClient;
  floor: FloorClient;
  mcp: McpFilesystem | null;
}

/** Read targets: text files of 1-64 KB and under 2,000 lines (one read page), spread over the set. */
export function readTargets(corpus: Corpus): string[] {
  const ok = corpus.files.filter((f) => f.text.length >= 1024 && f.text.length <= 64 * 1024 && f.text.split("\n").length < 2000);
  const n = Math.min(16, ok.length);
  return Array.from({ length: n }, (_, k) => ok[Math.floor((k * ok.length) / n)]!.path);
}

/** A real source file of about `bytes` bytes. */
export const sourceNear = (corpus: Corpus, bytes: number) => corpus.files.reduce((best, f) => (Math.abs(f.text.length - bytes) < Math.abs(best.text.length - bytes) ? f : best)).text;

export function editSeed(corpus: Corpus): string {
  return `${sourceNear(corpus, 16 * 1024)}\n// bench counter 0\n`;
}

export function buildOps(corpus: Corpus, s: Systems, rare: string): Op[] {
  const dir = corpus.dir;
  const targets = readTargets(corpus);
  const writeBody = sourceNear(corpus, 4 * 1024);
  const ops: Op[] = [];
  const op = (o: Omit<Op, "found">) => {
    const full: Op = { ...o, found: {} };
    ops.push(full);
    return full;
  };

  op({
    name: "read",
    tool: "read",
    run: {
      toolshed: async (i) => (await s.toolshed.call("read", { file_path: targets[i % targets.length] })).ms,
      floor: async (i) => (await s.floor.op({ op: "read", path: targets[i % targets.length] })).ms,
      ...(s.mcp && { mcp: async (i: number) => (await s.mcp!.call("read_text_file", { path: targets[i % targets.length] })).ms }),
    },
  });

  const body = (i: number) => `${writeBody}\n// write ${i}\n`;
  op({
    name: "write (4 KB)",
    tool: "write",
    run: {
      toolshed: async (i) => (await s.toolshed.call("write", { file_path: `${SCRATCH}/write-toolshed.txt`, content: body(i) })).ms,
      floor: async (i) => (await s.floor.op({ op: "write", path: `${SCRATCH}/write-floor.txt`, content: body(i) })).ms,
      ...(s.mcp && { mcp: async (i: number) => (await s.mcp!.call("write_file", { path: `${SCRATCH}/write-mcp.txt`, content: body(i) })).ms }),
    },
  });

  // Each system edits its own copy of a 16 KB file: "// bench counter k" -> k+1 (read first, untimed).
  const counter = { toolshed: 0, floor: 0, mcp: 0 };
  const edit = (sys: keyof typeof counter, f: (oldS: string, newS: string) => Promise<number>) => async () => {
    const ms = await f(`// bench counter ${counter[sys]}`, `// bench counter ${counter[sys] + 1}`);
    counter[sys]++;
    return ms;
  };
  op({
    name: "edit (16 KB file)",
    tool: "edit",
    run: {
      toolshed: edit("toolshed", async (o, n) => {
        const file_path = `${SCRATCH}/edit-toolshed.js`;
        await s.toolshed.call("read", { file_path });
        return (await s.toolshed.call("edit", { file_path, old_string: o, new_string: n })).ms;
      }),
      floor: edit("floor", async (o, n) => (await s.floor.op({ op: "edit", path: `${SCRATCH}/edit-floor.js`, old_string: o, new_string: n })).ms),
      ...(s.mcp && {
        mcp: edit("mcp", async (o, n) => {
          const path = `${SCRATCH}/edit-mcp.js`;
          await s.mcp!.call("read_text_file", { path });
          return (await s.mcp!.call("edit_file", { path, edits: [{ oldText: o, newText: n }] })).ms;
        }),
      }),
    },
  });

  const ls = op({
    name: "ls /",
    tool: "ls",
    run: {
      toolshed: async () => {
        const r = await s.toolshed.call("ls", {});
        ls.found.toolshed = r.body.data?.entries?.length ?? r.body.data?.count;
        return r.ms;
      },
      floor: async () => {
        const r = await s.floor.op({ op: "ls" });
        ls.found.floor = r.data.entries;
        return r.ms;
      },
      ...(s.mcp && {
        mcp: async () => {
          const r = await s.mcp!.call("list_directory", { path: "." });
          ls.found.mcp = r.text.split("\n").filter((l) => l.startsWith("[")).length;
          return r.ms;
        },
      }),
    },
  });

  const glob = op({
    name: `glob ${GLOB}`,
    tool: "glob",
    expected: corpus.files.filter((f) => f.path.endsWith(".ts")).length,
    run: {
      toolshed: async () => {
        const r = await s.toolshed.call("glob", { pattern: GLOB });
        glob.found.toolshed = r.body.data.total_found;
        return r.ms;
      },
      floor: async () => {
        const r = await s.floor.op({ op: "glob", pattern: GLOB_RE, limit: 100 });
        glob.found.floor = r.data.total;
        return r.ms;
      },
      rg: async () => {
        const r = await rg([...RG, "--files", "-g", GLOB], dir);
        glob.found.rg = r.lines.length;
        return r.ms;
      },
      ...(s.mcp && {
        mcp: async () => {
          const r = await s.mcp!.call("search_files", { path: ".", pattern: GLOB });
          glob.found.mcp = r.text === "No matches found" ? 0 : r.text.split("\n").length;
          return r.ms;
        },
      }),
    },
  });

  // A full page ends a search early (total_found: null): only "[Search incomplete" means files were left unsearched.
  const noteGrep = (o: Op, body: any) => {
    const d = body.data ?? {};
    const incomplete = String(body.output ?? "").includes("[Search incomplete");
    o.details = { complete: d.complete, total_found: d.total_found, incomplete, stats: d.stats };
    if (incomplete) o.found.toolshed = -1; // flagged in the checks
  };

  const rareOp = op({
    name: "grep rare literal",
    tool: "grep",
    expected: corpus.files.filter((f) => f.text.includes(rare)).length,
    run: {
      toolshed: async () => {
        const r = await s.toolshed.call("grep", { pattern: rare, literal: true, output_mode: "content" });
        rareOp.found.toolshed = new Set((r.body.data.matches ?? []).map((m: any) => m.file)).size;
        noteGrep(rareOp, r.body);
        return r.ms;
      },
      floor: async () => {
        const r = await s.floor.op({ op: "grep", pattern: rare, literal: true, mode: "content" });
        rareOp.found.floor = r.data.files;
        return r.ms;
      },
      rg: async () => {
        const r = await rg([...RG, "-n", "--no-heading", "-F", "--", rare], dir);
        rareOp.found.rg = new Set(r.lines.map((l) => l.slice(0, l.indexOf(":")))).size;
        return r.ms;
      },
    },
  });

  const commonFiles = op({
    name: `grep "${COMMON}" files, ${PAGE}`,
    tool: "grep",
    expected: Math.min(PAGE, corpus.files.filter((f) => f.text.includes(COMMON)).length),
    run: {
      toolshed: async () => {
        const r = await s.toolshed.call("grep", { pattern: COMMON, output_mode: "files_with_matches" });
        commonFiles.found.toolshed = r.body.data.count;
        noteGrep(commonFiles, r.body);
        return r.ms;
      },
      floor: async () => {
        const r = await s.floor.op({ op: "grep", pattern: COMMON, literal: true, mode: "files", limit: PAGE });
        commonFiles.found.floor = r.data.files;
        return r.ms;
      },
      rg: async () => {
        const r = await rg([...RG, "-l", "--", COMMON], dir, PAGE);
        commonFiles.found.rg = r.lines.length;
        return r.ms;
      },
    },
  });

  const commonContent = op({
    name: `grep "${COMMON}" content, ${HEAD} lines`,
    tool: "grep",
    run: {
      toolshed: async () => {
        const r = await s.toolshed.call("grep", { pattern: COMMON, output_mode: "content", head_limit: HEAD });
        commonContent.found.toolshed = r.body.data.count;
        noteGrep(commonContent, r.body);
        return r.ms;
      },
      floor: async () => {
        const r = await s.floor.op({ op: "grep", pattern: COMMON, literal: true, mode: "content", limit: HEAD });
        commonContent.found.floor = r.data.lines;
        return r.ms;
      },
      rg: async () => {
        const r = await rg([...RG, "-n", "--no-heading", "--", COMMON], dir, HEAD);
        commonContent.found.rg = r.lines.length;
        return r.ms;
      },
    },
  });

  const jsRe = new RegExp(NO_LITERAL);
  const regex = op({
    name: `grep /${NO_LITERAL}/ files, ${PAGE}`,
    tool: "grep",
    expected: Math.min(PAGE, corpus.files.filter((f) => f.text.split("\n").some((l) => jsRe.test(l))).length),
    run: {
      toolshed: async () => {
        const r = await s.toolshed.call("grep", { pattern: NO_LITERAL, output_mode: "files_with_matches" });
        regex.found.toolshed = r.body.data.count;
        noteGrep(regex, r.body);
        return r.ms;
      },
      floor: async () => {
        const r = await s.floor.op({ op: "grep", pattern: NO_LITERAL, mode: "files", limit: PAGE });
        regex.found.floor = r.data.files;
        return r.ms;
      },
      rg: async () => {
        const r = await rg([...RG, "-l", "--", NO_LITERAL], dir, PAGE);
        regex.found.rg = r.lines.length;
        return r.ms;
      },
    },
  });

  // Reads and searches first, on the workspace as loaded; writes and edits last.
  // Reads and searches first, on the workspace as loaded; writes and edits last.
  const writes = (o: Op) => o.tool === "write" || o.tool === "edit";
  return [...ops.filter((o) => !writes(o)), ...ops.filter(writes)];
}
