/**
 * `toolshed/ai-sdk`: a workspace's tools as Vercel AI SDK tools (`ai` 7), ready for `tools` of
 * generateText / streamText / Agent.
 *
 *   const tools = await toolshedTools({ baseUrl, apiKey, workspace: "demo", sessionId: "chat-1" });
 *   const r = await generateText({ model, tools, stopWhen: isStepCount(20), prompt: "Fix the failing test" });
 *
 * Each tool has the description and JSON Schema GET /v1/tools gives for the key (`jsonSchema()` of
 * `ai`), and `execute` calls the tool route through toolshed/client. A tool's failure is not thrown:
 * the model gets `Error <CODE>: <message>` as an `error-text` result (the message says what to do
 * next, e.g. read the file before editing it), and the run goes on.
 *
 * Progress: with `progress` (the default) a call is streamed (SSE) and `execute` is an async
 * iterable, the SDK's preliminary tool results: while a tool runs (bash, run_code, web_fetch…)
 * streamText emits `tool-result` parts with `preliminary: true` whose output is
 * `{status: "running", output: <the last 4,000 characters so far>, message?}`; the final result is
 * the call's outcome, and only it reaches the model. generateText ignores preliminary results.
 */
import { jsonSchema, tool, type Tool } from "ai";
import type { ProgressEvent } from "../index.js";
import { callTool, listTools, resultText, streamTool, type ToolOutcome, type WorkspaceToolsOptions } from "./workspace-tools.js";

export type { ToolOutcome, WorkspaceToolsOptions } from "./workspace-tools.js";

export interface ToolshedToolsOptions extends WorkspaceToolsOptions {
  /** Stream each call and report its progress as preliminary tool results (default true). */
  progress?: boolean;
}

/** What a tool is doing while it runs (a preliminary result). */
export interface ToolProgress {
  status: "running";
  tool: string;
  /** The tail of the output so far (stdout and stderr as they came). */
  output: string;
  /** The tool's last status line ("fetching…", "3/10 files"). */
  message?: string;
}

/** A tool's result in the AI SDK: progress while it runs, then its outcome. */
export type ToolshedToolOutput = ToolProgress | ToolOutcome;

export type ToolshedToolSet = Record<string, Tool<Record<string, unknown>, ToolshedToolOutput>>;

/** What the model is sent for a result (the SDK's ToolResultOutput). */
type ModelOutput = Awaited<ReturnType<NonNullable<Tool<Record<string, unknown>, ToolshedToolOutput>["toModelOutput"]>>>;

const PROGRESS_TAIL = 4000;

/** The model's view of a result: the tool's output as text, or its error as error-text. */
export function toolshedModelOutput(output: ToolshedToolOutput): ModelOutput {
  if ("status" in output) return { type: "text", value: output.output };
  return output.ok ? { type: "text", value: resultText(output) } : { type: "error-text", value: resultText(output) };
}

async function* withProgress(o: WorkspaceToolsOptions, name: string, args: unknown, signal?: AbortSignal): AsyncGenerator<ToolshedToolOutput, void, void> {
  const progress: ToolProgress = { status: "running", tool: name, output: "" };
  const it = streamTool(o, name, args, signal);
  for (;;) {
    const step = await it.next();
    if (step.done) {
      yield step.value;
      return;
    }
    const e: ProgressEvent = step.value;
    if (e.kind === "output") progress.output = (progress.output + e.text).slice(-PROGRESS_TAIL);
    else progress.message = e.message;
    yield { ...progress };
  }
}

/** The workspace's tools (those the key may use, or `options.tools`) as an AI SDK tool set. */
export async function toolshedTools(options: ToolshedToolsOptions): Promise<ToolshedToolSet> {
  const listed = await listTools(options, "toolshed");
  const set: ToolshedToolSet = {};
  for (const t of listed) {
    const name = t.name;
    set[name] = tool<Record<string, unknown>, ToolshedToolOutput, Record<string, unknown>>({
      description: t.description,
      inputSchema: jsonSchema<Record<string, unknown>>(t.input_schema as Parameters<typeof jsonSchema>[0]),
      execute: options.progress === false
        ? (args, { abortSignal }) => callTool(options, name, args, abortSignal)
        : (args, { abortSignal }) => withProgress(options, name, args, abortSignal),
      toModelOutput: ({ output }) => toolshedModelOutput(output),
    });
  }
  return set;
}
