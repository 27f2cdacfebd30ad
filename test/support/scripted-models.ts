/**
 * Scripted models for the framework adapters' tests (test/lib/client/adapters.node.test.ts): each
 * plays a fixed list of tool calls, one per model turn, then answers "fixed", and records what it
 * was sent. One for the Vercel AI SDK (its own MockLanguageModelV4 from `ai/test`), one for the
 * OpenAI Agents SDK (its Model interface, answering Responses-style output items).
 */
import { MockLanguageModelV4 } from "ai/test";
import { Usage, type Model, type ModelRequest, type ModelResponse } from "@openai/agents";

/** A tool call per step: [tool, arguments]. */
export type Script = readonly (readonly [string, Record<string, unknown>])[];

/** An AI SDK model playing `script`; `prompts` gets each call's prompt (the last message of the next one holds the previous step's tool result). */
export function scriptedAiSdkModel(script: Script, prompts: unknown[][]) {
  let step = 0;
  return new MockLanguageModelV4({
    doGenerate: async (options) => {
      prompts.push(options.prompt as unknown[]);
      const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
      const next = script[step++];
      if (!next) return { content: [{ type: "text", text: "fixed" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
      return { content: [{ type: "tool-call", toolCallId: `c${step}`, toolName: next[0], input: JSON.stringify(next[1]) }], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
    },
  });
}

/** The tool results an AI SDK model was sent, in order: `{type: "text" | "error-text", value}`. */
export function aiSdkToolResults(prompts: unknown[][]): { type: string; value: string }[] {
  return prompts.slice(1).map((p) => {
    const m = p.at(-1) as { role: string; content: { type: string; output: { type: string; value: string } }[] };
    if (m.role !== "tool") throw new Error(`expected a tool message last, got ${m.role}`);
    return m.content.find((c) => c.type === "tool-result")!.output;
  });
}

/** An Agents SDK Model playing `script` as function calls; `inputs` gets each request's input. */
export function scriptedAgentModel(script: Script, inputs: unknown[]): Model {
  let step = 0;
  return {
    async getResponse(request: ModelRequest): Promise<ModelResponse> {
      inputs.push(structuredClone(request.input));
      const next = script[step++];
      if (!next) return { usage: new Usage(), output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "fixed" }] }] };
      return { usage: new Usage(), output: [{ type: "function_call", callId: `c${step}`, name: next[0], arguments: JSON.stringify(next[1]), status: "completed" }] };
    },
    // eslint-disable-next-line require-yield
    async *getStreamedResponse() {
      throw new Error("the scripted model answers getResponse only");
    },
  };
}

/** The function call outputs an Agents SDK model was last sent, as text, in order. */
export function agentToolResults(inputs: unknown[]): string[] {
  const items = (inputs.at(-1) ?? []) as { type: string; output?: unknown }[];
  return items.filter((i) => i.type === "function_call_result").map((i) => {
    const o = i.output as string | { type: string; text?: string } | { type: string; text?: string }[];
    if (typeof o === "string") return o;
    if (Array.isArray(o)) return o.map((x) => x.text ?? "").join("");
    return o.text ?? JSON.stringify(o);
  });
}
