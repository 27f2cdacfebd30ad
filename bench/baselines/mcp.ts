/** The MCP filesystem server (@modelcontextprotocol/server-filesystem) over stdio, one per directory. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { timed } from "../stats.ts";

const require = createRequire(import.meta.url);

export class McpFilesystem {
  readonly client: Client;
  readonly root: string;
  private constructor(client: Client, root: string) {
    this.client = client;
    this.root = root;
  }

  static async start(root: string): Promise<McpFilesystem> {
    const pkg = require.resolve("@modelcontextprotocol/server-filesystem/package.json");
    const server = join(dirname(pkg), "dist/index.js");
    const transport = new StdioClientTransport({ command: process.execPath, args: [server, root], stderr: "ignore" });
    const client = new Client({ name: "toolshed-bench", version: "1.0.0" });
    await client.connect(transport);
    return new McpFilesystem(client, root);
  }

  /** One tool call; paths in args are relative to the root. Throws when the tool reports an error. */
  async call(name: string, args: Record<string, unknown>): Promise<{ ms: number; text: string }> {
    const abs = { ...args, ...(typeof args.path === "string" ? { path: join(this.root, args.path) } : {}) };
    const { ms, value } = await timed(() => this.client.callTool({ name, arguments: abs }));
    const text = ((value.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? "").join("\n");
    if (value.isError) throw new Error(`mcp ${name}: ${text.slice(0, 200)}`);
    return { ms, text };
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
