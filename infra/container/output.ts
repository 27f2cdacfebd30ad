/**
 * Output of a command with bounded memory: head and tail of stdout, stderr and the merged
 * stream are kept, the whole of each counted (lib/output-cut.ts: the one truncation, on line
 * boundaries, whose note states what was left out); the whole merged stream goes to a log
 * file (itself capped).
 */
import { createWriteStream, type WriteStream } from "node:fs";
import { HeadTail } from "../../lib/output-cut.js";

export { HeadTail };

export class OutputCollector {
  readonly stdout: HeadTail;
  readonly stderr: HeadTail;
  readonly merged: HeadTail;
  /** Merged output since the last take() (background tasks), also bounded. */
  private readonly pending: HeadTail;
  private log: WriteStream | null;
  private logBytes = 0;
  logTruncated = false;

  constructor(outputBytes: number, logPath: string | null, private readonly maxLogBytes = 64 * 1024 * 1024) {
    this.stdout = new HeadTail(outputBytes);
    this.stderr = new HeadTail(outputBytes);
    this.merged = new HeadTail(outputBytes);
    // A poll hands out whole pieces, head and tail within the output cap: a piece is at most half of it.
    this.pending = new HeadTail(Math.max(2, Math.floor(outputBytes / 2)));
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

  /** Output since the previous take(), its lines numbered as in the whole output. */
  take(): string {
    const s = this.pending.text(undefined, " printed since the previous poll");
    this.pending.reset(this.merged.completeLines);
    return s;
  }

  async close(): Promise<void> {
    const log = this.log;
    this.log = null;
    if (log) await new Promise<void>((r) => log.end(r));
  }
}
