/** What a provider-native adapter gets: a way to run one of our tools, through the one tool path. */
import { ToolError } from "../../shared/errors.js";
import type { ToolOutcome } from "../../contract/tool.js";

/** Runs the tool named `tool` with `args` (scope, validation, workspace, metering: lib/run/run-tool.ts). */
export type RunTool = (tool: string, args: unknown) => Promise<ToolOutcome>;

/** An adapter's answer before it is shaped into the provider's item: the text, and the error it carries, if any. */
export interface CompatAnswer {
  text: string;
  error?: ToolError;
}

/** A field of the model's input that is missing or of the wrong type: INVALID_ARGUMENT naming it. */
export function requireField<T>(value: T | undefined, name: string, command: string, type: string): T {
  if (value === undefined || value === null) throw new ToolError("INVALID_ARGUMENT", `Parameter \`${name}\` (${type}) is required for ${command}.`, { field: name });
  return value;
}
