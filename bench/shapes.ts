/**
 * The workspace shapes the search rows run on (issue #31): "raw", the corpus uploaded file by file
 * through PUT /files (one object per file: every listing lists 10,000 objects), and "imported",
 * the same files as one tar.gz through POST /v1/workspaces?id= (packs + a manifest + index
 * segments: a listing merges the manifest with the small upper layer). `--shapes=raw,imported`
 * (default both). The imported rows run the search ops only (glob, grep), against ripgrep on
 * the same files; the floor reads per-file objects, which an imported workspace does not have.
 */
import type { Op, System } from "./ops.ts";
import { tarGz } from "./tar-gz.ts";
import { ToolshedClient } from "./toolshed.ts";
import type { Corpus } from "./corpus.ts";

export type Shape = "raw" | "imported";

/** The tools whose rows run on the imported shape too. */
export const SEARCH_TOOLS = new Set(["glob", "grep"]);

/** A row's name on a shape: the raw rows keep today's names (results.json compares across commits). */
export const shapeOp = (name: string, shape: Shape) => (shape === "raw" ? name : `${name} (imported)`);

/** Creates workspace `ws` of the client's tenant from the corpus as one tar.gz; returns its client and the wall time. */
export async function importCorpus(url: string, key: string, ws: string, corpus: Corpus): Promise<{ client: ToolshedClient; ms: number }> {
  const t = performance.now();
  const r = await fetch(`${url}/v1/workspaces?id=${ws}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/gzip" }, body: tarGz(corpus.files) });
  const body = await r.text();
  if (r.status >= 300) throw new Error(`import ${ws}: ${r.status} ${body.slice(0, 300)}`);
  return { client: new ToolshedClient(url, key, ws), ms: performance.now() - t };
}

/** The systems an op's row measures on a shape: the imported shape has no per-file objects for the floor, nor an MCP server of its own. */
export function systemsOn(op: Op, shape: Shape): System[] {
  const all: System[] = ["toolshed", "floor", "rg", "mcp"];
  return shape === "raw" ? all : all.filter((s) => s === "toolshed" || s === "rg");
}
