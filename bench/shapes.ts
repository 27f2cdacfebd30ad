/**
 * The workspace shapes the search rows run on (issue #31): "raw", the corpus uploaded file by file
 * through PUT /files (one object per file: every listing lists 10,000 objects), and "imported",
 * the same files imported as tar.gz archives (POST /v1/workspaces/{ws}/import: packs + manifests + index
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

/** Files per archive: the corpus goes in a few merge imports, each tried up to 3 times if its connection breaks (a merge of the same files again is harmless). */
const CHUNK = 2500;

/** Creates workspace `ws` of the client's tenant and imports the corpus into it as tar.gz archives; returns its client and the wall time. */
export async function importCorpus(url: string, key: string, ws: string, corpus: Corpus): Promise<{ client: ToolshedClient; ms: number }> {
  const auth = { authorization: `Bearer ${key}` };
  const t = performance.now();
  const made = await fetch(`${url}/v1/workspaces`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ id: ws }) });
  if (made.status >= 300) throw new Error(`create ${ws}: ${made.status} ${(await made.text()).slice(0, 300)}`);
  await made.arrayBuffer().catch(() => undefined);
  for (let at = 0; at < corpus.files.length; at += CHUNK) {
    const body = tarGz(corpus.files.slice(at, at + CHUNK));
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await fetch(`${url}/v1/workspaces/${ws}/import?mode=merge`, { method: "POST", headers: { ...auth, "content-type": "application/gzip" }, body });
        const text = await r.text();
        if (r.status >= 300) throw new Error(`${r.status} ${text.slice(0, 300)}`);
        break;
      } catch (e) {
        const why = `${(e as Error).message} (${String((e as { cause?: unknown }).cause ?? "no cause")})`;
        if (attempt >= 3) throw new Error(`import ${ws} (files ${at}-${at + CHUNK}): ${why}`);
        console.warn(`import ${ws} (files ${at}-${at + CHUNK}) attempt ${attempt}: ${why}; trying again`);
      }
    }
  }
  return { client: new ToolshedClient(url, key, ws), ms: performance.now() - t };
}

/** The systems an op's row measures on a shape: the imported shape has no per-file objects for the floor, nor an MCP server of its own. */
export function systemsOn(op: Op, shape: Shape): System[] {
  const all: System[] = ["toolshed", "floor", "rg", "mcp"];
  return shape === "raw" ? all : all.filter((s) => s === "toolshed" || s === "rg");
}
