/** A run's result never past what its record takes: its lists cut to fit, its outcome and sandbox time whole (lib/sync/result-size.ts). */
import { describe, expect, it } from "vitest";
import { fitResponse, resultBody } from "../../../lib/sync/result-size.js";

describe("resultBody", () => {
  it("a result that fits is sent as it is; one past the bound keeps its outcome and sandbox time, and names the lists it cut", () => {
    const small = { ok: true as const, result: { exit_code: 0, duration_ms: 5, files_changed: ["a"] } };
    expect(resultBody(small, 1000)).toBe(JSON.stringify(small));
    const paths = Array.from({ length: 5000 }, (_, i) => `dir/${"é".repeat(40)}${i}`);
    const big = { ok: true as const, result: { exit_code: null, duration_ms: 600_000, timed_out: true, files_changed: paths, discarded: paths, conflicts: [] } };
    const body = resultBody(big, 100_000);
    expect(new TextEncoder().encode(body).length).toBeLessThanOrEqual(100_000);
    const got = JSON.parse(body);
    expect(got.result).toMatchObject({ exit_code: null, duration_ms: 600_000, timed_out: true, conflicts: [], lists_cut: { files_changed: 5000, discarded: 5000 } });
    expect(got.result.files_changed).toEqual(paths.slice(0, got.result.files_changed.length));
    // As an object (the Lambda entry's answer): the same cut; one that fits is itself.
    expect(fitResponse(big, 100_000)).toEqual(got);
    expect(fitResponse(small, 1000)).toBe(small);
    // An error is sent whole (the server refuses it past the bound, as before).
    const error = { ok: false as const, error: { code: "INTERNAL", message: "x".repeat(200) } };
    expect(resultBody(error, 100)).toBe(JSON.stringify(error));
  });
});
