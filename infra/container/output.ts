/**
 * Output of a command with bounded memory: head and tail of stdout, stderr and the merged
 * stream are kept; the whole merged stream goes to a log file (itself capped).
 */
import { createWriteStream, type WriteStream } from "node:fs";

/** Keeps the first and last `max / 2` bytes of a stream. */
export class HeadTail {
  private head: Buffer[] = [];
  private headLen = 0;
  private tail: Buffer[] = [];
  private tailLen = 0;
  total = 0;
  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    const headMax = Math.floor(this.max / 2);
    if (this.headLen < headMax) {
      const take = chunk.subarray(0, headMax - this.headLen);
      this.head.push(take);
      this.headLen += take.length;
      chunk = chunk.subarray(take.length);
      if (chunk.length === 0) return;
    }
    const tailMax = this.max - headMax;
    this.tail.push(chunk);
    this.tailLen += chunk.length;
    while (this.tailLen - this.tail[0]!.length >= tailMax) this.tailLen -= this.tail.shift()!.length;
  }

  get truncated(): boolean {
    return this.total > this.max;
  }

  text(note = ""): string {
    const head = Buffer.concat(this.head);
    let tail = Buffer.concat(this.tail);
    const tailMax = this.max - Math.floor(this.max / 2);
    if (tail.length > tailMax) tail = tail.subarray(tail.length - tailMax);
    const omitted = this.total - head.length - tail.length;
    if (omitted <= 0) return Buffer.concat([head, tail]).toString("utf8");
    // Skip UTF-8 continuation bytes so the tail starts on a character.
    let i = 0;
    while (i < tail.length && i < 4 && (tail[i]! & 0xc0) === 0x80) i++;
    return `${head.toString("utf8")}\n\n... [${omitted} bytes omitted${note}] ...\n\n${tail.subarray(i).toString("utf8")}`;
  }

  reset(): void {
    this.head = [];
    this.tail = [];
    this.headLen = this.tailLen = this.total = 0;
  }
}

export class OutputCollector {
  readonly stdout: HeadTail;
  readonly stderr: HeadTail;
  readonly merged: HeadTail;
  /** Merged output since the last take() (background tasks), also bounded. */
  private readonly pending = new HeadTail(200_000);
  private log: WriteStream | null;
  private logBytes = 0;
  logTruncated = false;

  constructor(outputBytes: number, logPath: string | null, private readonly maxLogBytes = 64 * 1024 * 1024) {
    this.stdout = new HeadTail(outputBytes);
    this.stderr = new HeadTail(outputBytes);
    this.merged = new HeadTail(outputBytes);
    this.log = logPath ? createWriteStream(logPath, { mode: 0o600 }) : null;
  }

  private both(chunk: Buffer) {
    this.merged.push(chunk);
    this.pending.push(chunk);
    if (this.log && !this.logTruncated) {
      const room = this.maxLogBytes - this.logBytes;
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.log.write(part);
      this.logBytes += part.length;
      if (part.length < chunk.length) {
        this.logTruncated = true;
        this.log.write(`\n... [log cut at ${this.maxLogBytes} bytes]\n`);
      }
    }
  }

  out = (chunk: Buffer) => {
    this.stdout.push(chunk);
    this.both(chunk);
  };

  err = (chunk: Buffer) => {
    this.stderr.push(chunk);
    this.both(chunk);
  };

  get truncated(): boolean {
    return this.stdout.truncated || this.stderr.truncated || this.merged.truncated;
  }

  /** Output since the previous take(). */
  take(): string {
    const s = this.pending.text();
    this.pending.reset();
    return s;
  }

  async close(): Promise<void> {
    const log = this.log;
    this.log = null;
    if (log) await new Promise<void>((r) => log.end(r));
  }
}
