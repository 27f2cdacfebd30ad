/**
 * Multiline mode: the pattern runs over a whole text (at most MULTILINE_MAX bytes; `.` matches
 * line breaks), one find per step so the caller can check its budget between finds. One
 * match is reported per line, and the next find starts on the next line: the number of
 * finds is at most the number of lines, never the number of matches.
 */
import { columnOf, cutLine, type Compiled, type FileMatches, type SearchOptions } from "./matcher.js";

export class MultilineSearch {
  readonly result: FileMatches = { matches: [], count: 0 };
  private readonly starts: number[] = [0];
  private from = 0;
  private finished = false;
  private readonly m;

  /** `text` starts at line `firstLine` + 1 of the file (a resumed search starts at a line start). */
  constructor(private readonly c: Compiled, private readonly o: SearchOptions, private readonly text: string, private readonly firstLine = 0, count = 0) {
    this.result.count = count;
    for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) this.starts.push(i + 1);
    this.m = c.re.matcher(text);
  }

  get done(): boolean {
    return this.finished || this.result.count >= this.o.maxMatches || this.from > this.text.length;
  }

  /** Text offset (UTF-16 units) where the next find starts. */
  get position(): number {
    return Math.min(this.from, this.text.length);
  }

  /** Index of the line where the next find starts (for a cursor: lines before it are done). */
  get nextLine(): number {
    return this.lineAt(Math.min(this.from, this.text.length));
  }

  private lineAt(pos: number): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.starts[mid]! <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private lineText(k: number): string {
    const t = this.text;
    const s = this.starts;
    return t.slice(s[k]!, k + 1 < s.length ? s[k + 1]! - 1 : t.length);
  }

  /** One find. */
  step(): void {
    if (this.done) return;
    if (!this.m.find(this.from)) {
      this.finished = true;
      return;
    }
    const s = this.m.start();
    const e = this.m.end();
    const k = this.lineAt(s);
    // Matches later on the same line are not reported: start on the next line (or after the match).
    this.from = Math.max(e > s ? e : e + 1, k + 1 < this.starts.length ? this.starts[k + 1]! : this.text.length + 1);
    const endK = this.lineAt(Math.max(s, e - 1));
    this.result.count++;
    if (this.o.collect === false) return;
    const line = this.lineText(k);
    const col = s - this.starts[k]!;
    const before: string[] = [];
    for (let j = Math.max(0, k - this.o.before); j < k; j++) before.push(cutLine(this.lineText(j)));
    const after: string[] = [];
    for (let j = endK + 1; j <= Math.min(this.starts.length - 1, endK + this.o.after); j++) after.push(cutLine(this.lineText(j)));
    this.result.matches.push({ line: this.firstLine + k + 1, column: columnOf(line, col), text: cutLine(line, col, e - s), before, after, ...(endK > k ? { end_line: this.firstLine + endK + 1 } : {}) });
  }
}
