/**
 * grep's bounds, through HTTP over local R2: time linear in the bytes read (long lines
 * included), long lines searched in windows without losing matches, and the per-call
 * verification budget with its resume cursor.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fileKey } from "../../lib/layout/paths.js";
import { MAX_LINE_BYTES, WINDOW_BYTES } from "../../lib/search/line-splitter.js";
import { newTenant, testApp, type Tenant } from "../helpers.js";
import { err, ok } from "../lib/search/helpers.js";
import { expectScaling } from "../support/scaling.js";

const MB = 1024 * 1024;

/** Writes straight to the bucket (no index): grep reads such files itself. */
async function put(t: Tenant, path: string, body: string | Uint8Array): Promise<void> {
  await env.FILES.put(fileKey(t.tenant, t.ws, path), body);
}

/** A line of `bytes` bytes of "ab " with `tail` at its end. */
const oneLine = (bytes: number, tail = "") => "ab ".repeat(Math.floor((bytes - tail.length) / 3)) + tail;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; r: T }> {
  const t0 = Date.now();
  const r = await fn();
  return { ms: Date.now() - t0, r };
}

/** Every call of a resumed search until it completes (at most `max`). */
async function drain(t: Tenant, args: Record<string, unknown>, max = 60): Promise<any[]> {
  const out: any[] = [];
  let resume: string | undefined;
  for (let i = 0; i < max; i++) {
    const d = ok(await t.call("grep", { ...args, ...(resume ? { resume } : {}) }));
    out.push(d);
    if (d.complete) return out;
    expect(typeof d.resume).toBe("string");
    resume = d.resume;
  }
  throw new Error(`no completion in ${max} calls`);
}

describe("grep: linear in the bytes read", { timeout: 120_000 }, () => {
  it("a 32 MB line costs about 4 times an 8 MB one, for a literal at the end and a regex without literals", async () => {
    const t = await newTenant();
    await put(t, "l8.txt", oneLine(8 * MB, "needle 123-4567"));
    await put(t, "l32.txt", oneLine(32 * MB, "needle 123-4567"));
    for (const [pattern, mode] of [
      ["needle", "content"],
      ["[0-9]{3}-[0-9]{4}", "files_with_matches"],
    ] as const) {
      const d = ok(await t.call("grep", { pattern, path: "l32.txt", output_mode: mode }));
      expect(d.complete).toBe(true);
      if (mode === "content") {
        expect(d.matches).toHaveLength(1);
        expect(d.matches[0]).toMatchObject({ line: 1, column: 32 * MB - "needle 123-4567".length + 1 - ((32 * MB - 15) % 3) });
        expect(d.matches[0].text).toMatch(/^\[\d+ chars\] …[ab ]+needle 123-4567$/);
      } else expect(d.files).toEqual(["l32.txt"]);
      // Linear: ~4x (plus fixed costs). The re-scanning loop this replaces was ~16x (8 MB: 8.6 s, 32 MB: 546 s).
      const { smallMs, largeMs } = await expectScaling({
        what: `grep ${pattern} (${mode}) on one line of 8 MB, then 32 MB`,
        small: () => t.call("grep", { pattern, path: "l8.txt", output_mode: mode }),
        large: () => t.call("grep", { pattern, path: "l32.txt", output_mode: mode }),
        bound: (s) => s * 8 + 500,
        runs: 1,
      });
      console.log(`grep ${pattern} (${mode}): 8 MB ${smallMs.toFixed(0)} ms, 32 MB ${largeMs.toFixed(0)} ms`);
    }
  });

  it("read pages a 32 MB line in bounded time too", async () => {
    const t = await newTenant();
    await put(t, "l8.txt", oneLine(8 * MB));
    await put(t, "l32.txt", oneLine(32 * MB));
    const r = await t.call("read", { file_path: "l32.txt" });
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    const { smallMs, largeMs } = await expectScaling({
      what: "read of one line of 8 MB, then 32 MB",
      small: () => t.call("read", { file_path: "l8.txt" }),
      large: () => t.call("read", { file_path: "l32.txt" }),
      bound: (s) => s * 8 + 500,
      runs: 1,
    });
    console.log(`read: 8 MB ${smallMs.toFixed(0)} ms, 32 MB ${largeMs.toFixed(0)} ms`);
  });
});

describe("grep: long lines in windows", { timeout: 120_000 }, () => {
  it("finds matches anywhere in lines longer than a window, with the right line, column, context and counts", async () => {
    const t = await newTenant();
    const long = MAX_LINE_BYTES + WINDOW_BYTES + 1000; // three windows
    // A match that straddles the first window's cut, one at the very end, and short lines around.
    const cut = WINDOW_BYTES - 3;
    const l2 = `${"x".repeat(cut)}NEEDLE${"x".repeat(long - cut - 6)}`;
    const l4 = `${"é".repeat(long / 2)}NEEDLE`;
    const text = ["short NEEDLE one", l2, "between", l4, "after"].join("\n");
    for (const [path, body] of [
      ["held.txt", text], // read whole (under 4 MB)
      ["streamed.txt", `${text}\n${"z".repeat(3 * MB)}\n`], // over 4 MB: streamed
    ] as const) {
      await put(t, path, body);
      const c = ok(await t.call("grep", { pattern: "NEEDLE", path, output_mode: "content", context: 1 }));
      expect(c.matches.map((m: any) => [m.line, m.column])).toEqual([
        [1, 7],
        [2, cut + 1],
        [4, long / 2 + 1],
      ]);
      expect(c.matches[1].text).toMatch(/^\[\d+ chars\] …x+NEEDLEx+… \[\d+ more chars\]$/);
      expect(c.matches[1].before).toEqual(["short NEEDLE one"]);
      expect(c.matches[1].after).toEqual(["between"]);
      expect(c.matches[0].after[0]).toMatch(/^x{400}… \[\d+ more chars\]$/);
      expect(c.matches[2].before).toEqual(["between"]);
      expect(ok(await t.call("grep", { pattern: "NEEDLE", path, output_mode: "count" })).counts).toEqual([{ file: path, count: 3 }]);
      // Anchors hold at the real line ends only, not at window cuts.
      expect(ok(await t.call("grep", { pattern: "^x+$", path, output_mode: "count" })).counts).toEqual([]);
      expect(ok(await t.call("grep", { pattern: "NEEDLE$", path, output_mode: "content" })).matches.map((m: any) => m.line)).toEqual([4]);
      expect(ok(await t.call("grep", { pattern: "^x", path, output_mode: "content" })).matches.map((m: any) => m.line)).toEqual([2]);
    }
  });
});

describe("grep: the verification budget", { timeout: 180_000 }, () => {
  it("stops a 32 MB line at its byte budget with a cursor, and resumed calls find the match at the very end", async () => {
    const t = await newTenant(testApp({ searchLimits: { bytes: 6 * MB } }));
    await put(t, "big.txt", oneLine(32 * MB, "needle"));
    const first = await timed(() => t.call("grep", { pattern: "needle", output_mode: "content" }));
    const d = ok(first.r);
    expect(d).toMatchObject({ complete: false, truncated: true, matches: [] });
    expect(d.stats.bytes_verified).toBeLessThanOrEqual(6 * MB + WINDOW_BYTES + 64 * 1024);
    expect(first.r.body.output).toContain(`Call grep again with the same arguments and resume: ${JSON.stringify(d.resume)} to continue.`);
    const calls = await drain(t, { pattern: "needle", output_mode: "content" });
    expect(calls.length).toBeGreaterThanOrEqual(4);
    expect(calls.length).toBeLessThanOrEqual(7);
    const last = calls[calls.length - 1];
    expect(last.matches).toHaveLength(1);
    expect(last.matches[0]).toMatchObject({ file: "big.txt", line: 1, column: 32 * MB - 6 - ((32 * MB - 6) % 3) + 1 });
    expect(calls.flatMap((c) => c.matches)).toHaveLength(1);
  });

  it("continues across files and lines: the same matches, counts and numbering as one unbounded call", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 5; i++) files[`f${i}.txt`] = Array.from({ length: 40_000 }, (_, j) => (j % 997 === 0 ? `hit ${i}:${j}` : `line ${j} of ${i}`)).join("\n");
    const whole = await newTenant();
    const bounded = await newTenant(testApp({ searchLimits: { bytes: 300 * 1024 } }));
    for (const t of [whole, bounded]) for (const [p, c] of Object.entries(files)) await put(t, p, c);
    for (const mode of ["content", "count", "files_with_matches"]) {
      const args = { pattern: "hit \\d+", output_mode: mode, head_limit: 2000, context: 1 };
      const all = ok(await whole.call("grep", args));
      expect(all.complete).toBe(true);
      const calls = await drain(bounded, args);
      expect(calls.length).toBeGreaterThanOrEqual(3);
      const key = mode === "content" ? "matches" : mode === "count" ? "counts" : "files";
      const merged = calls.flatMap((c) => c[key]);
      if (mode === "count") {
        // A file stopped inside is reported once, when its count is complete.
        expect(merged.sort((a: any, b: any) => (a.file < b.file ? -1 : 1))).toEqual([...all.counts].sort((a: any, b: any) => (a.file < b.file ? -1 : 1)));
      } else expect(merged).toEqual(all[key]);
      expect(calls[calls.length - 1].total_found).toBe(all.total_found);
    }
  });

  it("a slow pattern over a big file answers complete: false within its time budget, and the next call makes progress", async () => {
    // 20 ms: less than one 1 MB step of this pattern takes on any machine (300 ms let an idle CI machine finish the whole file).
    const t = await newTenant(testApp({ searchLimits: { cpu_ms: 20 } }));
    // Many small matches of a pattern without literals: every byte goes through the NFA.
    await put(t, "slow.txt", Array.from({ length: 400_000 }, (_, i) => `abcdefgh ${i % 100_000}`).join("\n"));
    const a = await timed(() => t.call("grep", { pattern: "(a|b|c|d|e|f|g|h)+ \\d{5}", output_mode: "count" }));
    const d1 = ok(a.r);
    expect(d1.complete).toBe(false);
    expect(a.ms).toBeLessThan(5_000);
    const b = await timed(() => t.call("grep", { pattern: "(a|b|c|d|e|f|g|h)+ \\d{5}", output_mode: "count", resume: d1.resume }));
    const d2 = ok(b.r);
    expect(b.ms).toBeLessThan(5_000);
    // Progress: the next call finished, or its cursor moved on in the file.
    const at = (tok: string) => JSON.parse(atob(tok.replaceAll("-", "+").replaceAll("_", "/"))).file?.line ?? Infinity;
    if (!d2.complete) expect(at(d2.resume)).toBeGreaterThan(at(d1.resume));
    // And the calls together count what one unbounded call counts.
    // How many 20 ms steps the file takes is the machine's load (60 were too few at load 12): the
    // property is that the calls complete and count it all, each making progress (asserted above).
    const calls = await drain(t, { pattern: "(a|b|c|d|e|f|g|h)+ \\d{5}", output_mode: "count" }, 600);
    expect(calls.flatMap((c) => c.counts)).toEqual([{ file: "slow.txt", count: 360_000 }]);
  });

  it("bounds a multiline search whose finds each scan to the end", async () => {
    const t = await newTenant(testApp({ searchLimits: { cpu_ms: 300 } }));
    // Every find of "a[^z]*z|a" runs to the end of the text (no z): quadratic without a bound.
    await put(t, "ml.txt", "a\n".repeat(1_000_000));
    const a = await timed(() => t.call("grep", { pattern: "a[^z]*z|a", multiline: true, output_mode: "count" }));
    const d1 = ok(a.r);
    expect(d1.complete).toBe(false);
    expect(a.ms).toBeLessThan(5_000);
    const d2 = ok(await t.call("grep", { pattern: "a[^z]*z|a", multiline: true, output_mode: "count", resume: d1.resume }));
    const line = (tok: string) => JSON.parse(atob(tok.replaceAll("-", "+").replaceAll("_", "/"))).file.line;
    expect(line(d2.resume)).toBeGreaterThan(line(d1.resume));
  });

  it("refuses a resume value from another search, or not from grep, saying what to do", async () => {
    const t = await newTenant(testApp({ searchLimits: { bytes: 1 * MB } }));
    await put(t, "big.txt", oneLine(3 * MB, "needle"));
    const d = ok(await t.call("grep", { pattern: "needle" }));
    expect(d.complete).toBe(false);
    const e = err(await t.call("grep", { pattern: "other", resume: d.resume }), 400, "INVALID_ARGUMENT");
    expect(e.message).toContain("belongs to a search with other arguments");
    err(await t.call("grep", { pattern: "needle", resume: "garbage!" }), 400, "INVALID_ARGUMENT");
  });
});
