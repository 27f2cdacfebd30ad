/**
 * The route table of docs/api.md names every path the app serves (read from /openapi.json, plus the
 * MCP route, which MCP specifies rather than OpenAPI): a route added without its row, whose page a
 * reader of api.md would never find, fails here. A row may shorten a path under a workspace or a
 * tenant to `…/rest` (`GET …/checkpoints/{id}`); one row stands for every built-in tool's route.
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { tools } from "../../functions/index.js";
import { createApp } from "../../lib/api/app.js";
import { memoryDriver } from "../../lib/storage/drivers/memory.js";
import { storageKeyValue } from "../../lib/storage/kv-over-storage.js";

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The forms a row may write `path` in. */
function forms(path: string): string[] {
  const tool = /^\/v1\/workspaces\/\{ws\}\/tools\/[a-z_]+$/.test(path) ? "/v1/workspaces/{ws}/tools/{tool}" : path;
  const out = [tool];
  for (const prefix of ["/v1/workspaces/{ws}", "/v1/admin/tenants/{tenant}"]) if (tool.startsWith(`${prefix}/`)) out.push(`…${tool.slice(prefix.length)}`);
  if (tool.endsWith("/{resource_path}")) out.push(`…${tool.slice(tool.lastIndexOf("/", tool.length - "/{resource_path}".length - 1), -"/{resource_path}".length)}/v1/workspaces/{ws}/mcp`);
  return out;
}

it("docs/api.md's route table names every route of /openapi.json and the MCP route", async () => {
  const page = readFileSync("docs/api.md", "utf8");
  const table = page.slice(page.indexOf("## Routes"), page.indexOf("## Access"));
  const app = createApp({ storage: memoryDriver(), kv: storageKeyValue(memoryDriver(), "kv/"), adminToken: "t" }, tools);
  const doc = (await (await app.request("/openapi.json")).json()) as { paths: Record<string, unknown> };
  const paths = [...Object.keys(doc.paths), "/v1/workspaces/{ws}/mcp"];
  expect(paths.length).toBeGreaterThan(50);
  const missing = paths.filter((p) => !forms(p).some((f) => new RegExp(`[\\s\`]${escape(f)}(?=[\`\\s?·|])`).test(table)));
  expect(missing).toEqual([]);
});
