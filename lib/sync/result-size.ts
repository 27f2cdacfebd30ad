/**
 * The size of a run's result as its record keeps it (PUT /v1/sync/run/result): the sync server takes at
 * most MAX_RESULT_BYTES, and the runner's client never sends more; nor does the Lambda entry answer a
 * foreground run past what Invoke carries (MAX_INVOKE_ANSWER_BYTES). A result past it (a command that
 * changed tens of thousands of paths with long names: each path is listed in files_changed, files_created,
 * discarded, ...) keeps the first entries of each list that fit and names the lists it cut (`lists_cut`:
 * field → its whole length); its outcome and its sandbox time are kept whole. Before this, such a result
 * was refused, never stored: the run stayed "running" to its deadline, and a background run was never billed.
 * Bundles for Workers.
 */
import type { ExecResponse } from "./types.js";

export const MAX_RESULT_BYTES = 16 * 1024 * 1024;
/** What a synchronous Lambda Invoke may answer (6 MB), less a margin: a foreground run's answer on AWS (infra/container/handler.ts). */
export const MAX_INVOKE_ANSWER_BYTES = 6 * 1024 * 1024 - 64 * 1024;

const utf8 = new TextEncoder();

/** What is kept of each list, tried in turn until the result fits (0: the lists are emptied, their lengths named). */
const KEEP = [10_000, 1_000, 100, 0];

/** The body of `res` for its record: itself, or its lists cut to fit in `max` bytes. */
export function resultBody(res: ExecResponse, max = MAX_RESULT_BYTES): string {
  return fitted(res, max).body;
}

/** `res` itself when it fits in `max` bytes, else its lists cut to fit (as resultBody). */
export function fitResponse(res: ExecResponse, max: number): ExecResponse {
  const f = fitted(res, max);
  return f.cut ? (JSON.parse(f.body) as ExecResponse) : res;
}

function fitted(res: ExecResponse, max: number): { body: string; cut: boolean } {
  const whole = JSON.stringify(res);
  if (whole.length * 3 <= max || utf8.encode(whole).length <= max || !res.ok || !res.result || typeof res.result !== "object") return { body: whole, cut: false };
  const result = res.result as Record<string, unknown>;
  let body = whole;
  for (const keep of KEEP) {
    const cut: Record<string, number> = {};
    const kept: Record<string, unknown> = {};
    for (const [field, v] of Object.entries(result)) {
      if (Array.isArray(v) && v.length > keep) {
        cut[field] = v.length;
        kept[field] = v.slice(0, keep);
      } else kept[field] = v;
    }
    body = JSON.stringify({ ok: true, result: { ...kept, lists_cut: cut } });
    if (utf8.encode(body).length <= max) return { body, cut: true };
  }
  return { body, cut: true }; // still past it (outputs alone are far smaller): refused, as before
}
