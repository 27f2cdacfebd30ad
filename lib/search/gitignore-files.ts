/**
 * The .gitignore files a search reads (lib/search/listing.ts): one file's text, at most
 * MAX_GITIGNORE_BYTES of it, and those of a search root's ancestors. Each read is taken from the
 * search's budget.
 */
import { parentOf } from "../layout/paths.js";
import type { SearchedWorkspace } from "./workspace-view.js";
import type { Budget } from "./store.js";

const MAX_GITIGNORE_BYTES = 256 * 1024;

/** A .gitignore's text (its first MAX_GITIGNORE_BYTES), or null when there is none. */
export async function readGitignore(ws: SearchedWorkspace, path: string, budget: Budget): Promise<string | null> {
  budget.take("get");
  const r = await ws.driver.get(ws.key(path), { range: { offset: 0, length: MAX_GITIGNORE_BYTES } });
  if (!r) return null;
  return new TextDecoder().decode(await new Response(r.body).arrayBuffer());
}

/** The .gitignore files of the root's ancestors (workspace root included), as [dir, text]. */
export async function readAncestorIgnores(ws: SearchedWorkspace, root: string, budget: Budget): Promise<[string, string][]> {
  if (root === "") return [];
  const dirs: string[] = [""];
  for (let d = parentOf(root); d !== ""; d = parentOf(d)) dirs.push(d);
  const texts = await Promise.all(dirs.map((d) => readGitignore(ws, d === "" ? ".gitignore" : `${d}/.gitignore`, budget)));
  return dirs.flatMap((d, i) => (texts[i] !== null ? [[d, texts[i]!] as [string, string]] : []));
}
