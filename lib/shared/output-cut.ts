/**
 * The one truncation of text handed to the model: the head and tail of a byte stream are
 * kept in bounded memory while the whole stream is counted (bytes, lines), and the cut falls
 * on line boundaries (a line too long to keep is cut inside it, and the note says so). The
 * note states what was left out of the real output and where the full output is. The command
 * runner (infra/container/output.ts) cuts streams with it; tools cut strings with cutText.
 * Pure: bundles for Workers.
 */
import { concatBytes } from "./text.js";

/** What a cut left out, in terms of the real output. Lines are 1-based, inclusive. */
export interface OutputCut {
  total_bytes: number;
  total_lines: number;
  omitted_bytes: number;
  omitted_from_line: number;
  omitted_to_line: number;
  /** A kept part ends or starts inside a line (a line longer than what could be kept). */
  within_line: boolean;
}

const NL = 10;
const decoder = () => new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

function newlines(b: Uint8Array, from = 0, to = b.length): number {
  let n = 0;
  for (let i = b.indexOf(NL, from); i !== -1 && i < to; i = b.indexOf(NL, i + 1)) n++;
  return n;
}

/** `end`, moved back so that it does not split a UTF-8 character. */
function charEnd(b: Uint8Array, end: number): number {
  let k = end;
  while (k > 0 && end - k < 3 && (b[k - 1]! & 0xc0) === 0x80) k--;
  if (k === 0) return end;
  const lead = b[k - 1]!;
  const len = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return end - (k - 1) < len ? k - 1 : end;
}

/** `start`, moved forward past continuation bytes so that it begins on a character. */
function charStart(b: Uint8Array, start: number): number {
  let k = start;
  while (k < b.length && k - start < 3 && (b[k]! & 0xc0) === 0x80) k++;
  return k;
}

/** Keeps the first `max / 2` and the last `max / 2` bytes of a stream, counting all of it. */
export class HeadTail {
  private head: Uint8Array[] = [];
  private headLen = 0;
  private tail: Uint8Array[] = [];
  private tailLen = 0;
  total = 0;
  private lines = 0;
  private last = -1;
  /** Lines before this stream's first byte (a background task's later pieces). */
  private lineOffset = 0;
  constructor(private readonly max: number) {}

  private get headMax() {
    return Math.floor(this.max / 2);
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.total += chunk.length;
    this.lines += newlines(chunk);
    this.last = chunk[chunk.length - 1]!;
    if (this.headLen < this.headMax) {
      const take = chunk.subarray(0, this.headMax - this.headLen);
      this.head.push(take.slice());
      this.headLen += take.length;
      chunk = chunk.subarray(take.length);
      if (chunk.length === 0) return;
    }
    // One byte more than the tail keeps: it tells whether the tail starts on a line.
    const keep = this.max - this.headMax + 1;
    this.tail.push(chunk.slice(Math.max(0, chunk.length - keep)));
    this.tailLen += Math.min(chunk.length, keep);
    while (this.tailLen - this.tail[0]!.length >= keep) this.tailLen -= this.tail.shift()!.length;
  }

  get truncated(): boolean {
    return this.total > this.max;
  }

  /** The kept head and tail, decoded, and what was left out between them (null: nothing). */
  parts(): { head: string; tail: string; cut: OutputCut | null } {
    const head = concatBytes(this.head);
    const tailAll = concatBytes(this.tail);
    if (!this.truncated) return { head: decoder().decode(concatBytes([head, tailAll])), tail: "", cut: null };
    const tailMax = this.max - this.headMax;
    const before = tailAll[tailAll.length - tailMax - 1]!;
    const tail = tailAll.subarray(tailAll.length - tailMax);
    // Head: up to its last newline, unless that drops more than half of it (a very long line).
    const lastNl = head.lastIndexOf(NL);
    const headOnLine = lastNl !== -1 && lastNl + 1 >= head.length / 2;
    const headKeep = headOnLine ? lastNl + 1 : charEnd(head, head.length);
    // Tail: from its first line start, unless that drops more than half of it.
    const firstNl = before === NL ? -1 : tail.indexOf(NL);
    const tailOnLine = before === NL || (firstNl !== -1 && firstNl < tail.length - 1 && firstNl + 1 <= tail.length / 2);
    const tailStart = before === NL ? 0 : tailOnLine ? firstNl + 1 : charStart(tail, 0);
    const keptTail = tail.subarray(tailStart);
    const lastOmitted = tailStart > 0 ? tail[tailStart - 1]! : before;
    const totalLines = this.lines + (this.last !== NL ? 1 : 0);
    const from = newlines(head, 0, headKeep) + 1;
    const to = this.lines - newlines(keptTail) - (lastOmitted === NL ? 1 : 0) + 1;
    return {
      head: decoder().decode(head.subarray(0, headKeep)),
      tail: decoder().decode(keptTail),
      cut: {
        total_bytes: this.total,
        total_lines: totalLines + this.lineOffset,
        omitted_bytes: this.total - headKeep - keptTail.length,
        omitted_from_line: from + this.lineOffset,
        omitted_to_line: Math.max(from, to) + this.lineOffset,
        within_line: !headOnLine || !tailOnLine,
      },
    };
  }

  /** The kept text with one note where the cut is (see describeCut). */
  text(fullOutput?: string | null, scope?: string): string {
    const p = this.parts();
    return p.cut ? joinCut(p.head, p.tail, describeCut(p.cut, fullOutput, scope)) : p.head;
  }

  /** Starts over (the next piece of a background task's output); `lineOffset` numbers its lines. */
  reset(lineOffset = 0): void {
    this.head = [];
    this.tail = [];
    this.headLen = this.tailLen = this.total = this.lines = 0;
    this.last = -1;
    this.lineOffset = lineOffset;
  }

  /** Lines seen so far (a complete last line counted once it ends). */
  get completeLines(): number {
    return this.lines;
  }
}


const fmt = (n: number) => n.toLocaleString("en-US");

/**
 * The note of a cut: what of the real output was left out (bytes and lines), and where the
 * full output is (a saved output's name, with how to read it: lib/sync/output-logs.ts), or `scope` when there is no path.
 */
export function describeCut(cut: OutputCut, fullOutput?: string | null, scope = "", hint = ""): string {
  const lines =
    cut.omitted_from_line === cut.omitted_to_line ? `part of line ${fmt(cut.omitted_from_line)}` : `lines ${fmt(cut.omitted_from_line)}–${fmt(cut.omitted_to_line)}`;
  let note = `output cut: ${fmt(cut.omitted_bytes)} of ${fmt(cut.total_bytes)} bytes${scope} omitted, ${lines} of ${fmt(cut.total_lines)}`;
  if (cut.within_line) note += " (a line too long to show was cut inside)";
  note += ".";
  if (fullOutput) note += ` The full output is saved as ${fullOutput} (not a workspace file): read it with bash_output (output_file: "${fullOutput}", offset: ${cut.omitted_from_line}, limit: 2000).`;
  else if (fullOutput === null) note += " The full output was not saved.";
  if (hint) note += ` ${hint}`;
  return note;
}

/** Head, the note on a line of its own, tail. */
export function joinCut(head: string, tail: string, note: string): string {
  return `${head}${head === "" || head.endsWith("\n") ? "" : "\n"}[... ${note} ...]\n${tail}`;
}

/**
 * Cuts a string to at most `maxBytes` UTF-8 bytes of kept text (plus the note), with the
 * same rules as a command's output; `fullOutput` is where the whole text can be read.
 */
export function cutText(text: string, maxBytes: number, fullOutput?: string | null, hint = ""): { text: string; cut: OutputCut | null } {
  // Under the cap in characters and in bytes: nothing to do, no encoding.
  if (text.length * 3 <= maxBytes) return { text, cut: null };
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= maxBytes) return { text, cut: null };
  const h = new HeadTail(maxBytes);
  h.push(bytes);
  const p = h.parts();
  return p.cut ? { text: joinCut(p.head, p.tail, describeCut(p.cut, fullOutput, "", hint)), cut: p.cut } : { text, cut: null };
}
