import { describe, expect, it } from "vitest";
import { cutText, describeCut, HeadTail, joinCut } from "../../../lib/shared/output-cut.js";
import { truncateMiddle, MAX_OUTPUT_CHARS } from "../../../lib/contract/tool.js";

const enc = new TextEncoder();
const bytes = (s: string) => enc.encode(s).length;
const seq = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => `${a + i}\n`).join("");
/** Line number (1-based) of the character at `index`. */
const lineAt = (s: string, index: number) => s.slice(0, index).split("\n").length;

/** Checks a cut against the real text: kept parts are a prefix and a suffix, every number is exact. */
function checkAgainst(text: string, head: string, tail: string, cut: NonNullable<ReturnType<HeadTail["parts"]>["cut"]>) {
  expect(text.startsWith(head)).toBe(true);
  expect(text.endsWith(tail)).toBe(true);
  expect(cut.total_bytes).toBe(bytes(text));
  expect(cut.total_lines).toBe(text.split("\n").length - (text.endsWith("\n") ? 1 : 0));
  expect(cut.omitted_bytes).toBe(bytes(text) - bytes(head) - bytes(tail));
  const omittedStart = head.length;
  const omittedEnd = text.length - tail.length; // exclusive
  expect(cut.omitted_from_line).toBe(lineAt(text, omittedStart));
  expect(cut.omitted_to_line).toBe(lineAt(text, omittedEnd - 1));
  const onLines = (head === "" || head.endsWith("\n")) && (omittedEnd === 0 || text[omittedEnd - 1] === "\n");
  expect(cut.within_line).toBe(!onLines);
}

describe("HeadTail / cutText: one cut that knows the real totals", () => {
  it("keeps everything under the cap", () => {
    const h = new HeadTail(100);
    h.push(enc.encode("hello "));
    h.push(enc.encode("world"));
    expect(h.truncated).toBe(false);
    expect(h.text()).toBe("hello world");
    expect(cutText("short", 100)).toEqual({ text: "short", cut: null });
  });

  it("seq 1 200000 cut to 30,000 bytes: the note's numbers are the real ones, cuts on line boundaries", () => {
    const text = seq(1, 200_000);
    expect(bytes(text)).toBe(1_288_895);
    const h = new HeadTail(30_000);
    // Pushed in uneven chunks, as a pipe delivers them.
    const all = enc.encode(text);
    for (let at = 0, n = 1; at < all.length; at += n, n = (n * 7 + 3) % 65_536 || 1) h.push(all.subarray(at, at + n));
    const p = h.parts();
    checkAgainst(text, p.head, p.tail, p.cut!);
    expect(p.cut).toEqual({ total_bytes: 1_288_895, total_lines: 200_000, omitted_bytes: 1_258_903, omitted_from_line: 3222, omitted_to_line: 197_858, within_line: false });
    expect(p.head.endsWith("3221\n")).toBe(true);
    expect(p.tail.startsWith("197859\n")).toBe(true);
    const out = h.text("20261127T233000000Z-r0123456789abcde.log");
    expect(out).toContain("[... output cut: 1,258,903 of 1,288,895 bytes omitted, lines 3,222–197,858 of 200,000. The full output is saved as 20261127T233000000Z-r0123456789abcde.log (not a workspace file): read it with bash_output (output_file: \"20261127T233000000Z-r0123456789abcde.log\", offset: 3222, limit: 2000). ...]\n197859\n");
    expect(bytes(out)).toBeLessThan(30_000 + 400);
  });

  it("a single over-long line is cut inside and says so; UTF-8 characters are never split", () => {
    const line = "é".repeat(50_000) + "\n";
    const { text, cut } = cutText(line, 1000);
    expect(cut).toMatchObject({ total_lines: 1, omitted_from_line: 1, omitted_to_line: 1, within_line: true });
    expect(text).toContain("part of line 1 of 1 (a line too long to show was cut inside)");
    expect(text).not.toContain("\uFFFD");
    const [head, tail] = text.split(/\n?\[\.\.\. .* \.\.\.\]\n/);
    checkAgainst(line, head!, tail!, cut!);
  });

  it("random outputs, random chunking: kept parts and every number match the real text", () => {
    let seed = 42;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const pieces = ["a", "é", "😀", "大", "\n", "\n", "xyz", " "];
    for (let round = 0; round < 200; round++) {
      let text = "";
      const len = rnd(3000);
      while (text.length < len) text += rnd(20) === 0 ? "L".repeat(rnd(800)) : pieces[rnd(pieces.length)]!;
      const max = 2 + rnd(600);
      const h = new HeadTail(max);
      const all = enc.encode(text);
      for (let at = 0; at < all.length; ) {
        const n = 1 + rnd(200);
        h.push(all.subarray(at, at + n));
        at += n;
      }
      const p = h.parts();
      if (!p.cut) {
        expect(p.head).toBe(text);
        expect(all.length).toBeLessThanOrEqual(max);
        continue;
      }
      checkAgainst(text, p.head, p.tail, p.cut);
      expect(bytes(p.head) + bytes(p.tail)).toBeLessThanOrEqual(max);
      // The string cut is the same cut.
      expect(cutText(text, max).cut).toEqual(p.cut);
    }
  });

  it("the lines of a later piece (background output) are numbered as in the whole output", () => {
    const h = new HeadTail(20);
    h.reset(1000);
    h.push(enc.encode(seq(1, 50)));
    const p = h.parts();
    expect(p.cut!.omitted_from_line).toBeGreaterThan(1000);
    expect(p.cut!.total_lines).toBe(1050);
  });

  it("the note says when the full output was not saved", () => {
    const cut = { total_bytes: 10, total_lines: 3, omitted_bytes: 4, omitted_from_line: 2, omitted_to_line: 2, within_line: false };
    expect(describeCut(cut, null)).toBe("output cut: 4 of 10 bytes omitted, part of line 2 of 3. The full output was not saved.");
    expect(joinCut("a", "b", "n")).toBe("a\n[... n ...]\nb");
  });
});

describe("the generic tool-output cap (truncateMiddle)", () => {
  it("cuts on line boundaries with the real bytes and lines, once", () => {
    const text = Array.from({ length: 20_000 }, (_, i) => `match ${i}: ${"ü".repeat(10)}`).join("\n") + "\n";
    const r = truncateMiddle(text, MAX_OUTPUT_CHARS);
    expect(r.truncated).toBe(true);
    expect(r.text.match(/\[\.\.\. output cut/g)).toHaveLength(1);
    const [head, tail] = r.text.split(/\[\.\.\. .* \.\.\.\]\n/);
    expect(head!.endsWith("\n")).toBe(true);
    expect(text.startsWith(head!)).toBe(true);
    expect(text.endsWith(tail!)).toBe(true);
    const omitted = bytes(text) - bytes(head!) - bytes(tail!);
    expect(r.text).toContain(`output cut: ${omitted.toLocaleString("en-US")} of ${bytes(text).toLocaleString("en-US")} bytes omitted, lines ${(head!.split("\n").length).toLocaleString("en-US")}–`);
    expect(r.text).toContain("Ask for less");
    expect(bytes(r.text)).toBeLessThan(MAX_OUTPUT_CHARS + 400);
    expect(truncateMiddle("small\n", MAX_OUTPUT_CHARS)).toEqual({ text: "small\n", truncated: false });
  });
});
