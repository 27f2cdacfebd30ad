/**
 * `toolshed/openai-agents`: a workspace's tools as OpenAI Agents SDK (JS, `@openai/agents`) function
 * tools.
 *
 *   const tools = await toolshedAgentTools({ baseUrl, apiKey, workspace: "demo", sessionId: "run-1" });
 *   const agent = new Agent({ name: "coder", instructions: "…", tools });
 *   const result = await run(agent, "Fix the failing test");
 *
 * Why function tools and not `MCPServerStreamableHttp` at our MCP door: the SDK supports both, but
 * function tools are its core tool type (the Runner parses, validates, times out, guards and
 * approves them itself; every model provider gets them, not only ones that speak MCP), they need no
 * connection to open and close around a run, and ours come in the shape the SDK wants without a
 * conversion: GET /v1/tools?format=openai gives strict-mode JSON Schemas (optional arguments
 * nullable, which the API reads as absent), so each tool is `tool({parameters, strict: true})`.
 * The MCP door stays a one-line alternative (docs/agent-frameworks.md shows it).
 *
 * A tool's failure is not thrown: `execute` returns `Error <CODE>: <message>` as the tool's output,
 * which the model reads and acts on. Function tools have no progress channel in the SDK, so calls
 * are plain (not streamed); the model gets the output when the call ends.
 */
import { tool, type FunctionTool } from "@openai/agents";
import { callTool, listTools, resultText, type WorkspaceToolsOptions } from "./workspace-tools.js";

export type { ToolOutcome, WorkspaceToolsOptions } from "./workspace-tools.js";

/** A strict-mode object schema, as GET /v1/tools?format=openai gives each tool's parameters. */
type StrictParameters = { type: "object"; properties: Record<string, any>; required: string[]; additionalProperties: false };

/** The workspace's tools (those the key may use, or `options.tools`) as Agents SDK function tools. */
export async function toolshedAgentTools(options: WorkspaceToolsOptions): Promise<FunctionTool[]> {
  const listed = await listTools(options, "openai");
  return listed.map((t) => {
    const name = t.name;
    return tool({
      name,
      description: t.description,
      parameters: t.parameters as StrictParameters,
      strict: true,
      execute: async (args: unknown, _context, details) => resultText(await callTool(options, name, args, details?.signal)),
    }) as unknown as FunctionTool;
  });
}
