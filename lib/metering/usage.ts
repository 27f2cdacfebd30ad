/**
 * Billing records: one per tool call (success or failure), written as one JSON line to the
 * runtime's logs (Workers Logs / Logpush, CloudWatch), from where a pipeline can bill per call.
 * Holds no arguments, paths or output: only who, which tool, how it ended, and the cost.
 */
import type { UsageRecord } from "../deps.js";

export function logUsage(u: UsageRecord): void {
  console.log(JSON.stringify({ type: "toolshed.usage", at: new Date().toISOString(), ...u }));
}
