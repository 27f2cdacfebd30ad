/**
 * Output of a command with bounded memory: head and tail of stdout, stderr and the merged
 * stream are kept, the whole of each counted (lib/shared/output-cut.ts: the one truncation, on line
 * boundaries, whose note states what was left out); the whole merged stream goes to a log
 * file (itself capped). The log is made only for output that may be cut: until the merged
 * stream passes the cap it is held in memory (at most the cap), and most runs never touch a file.
 */
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import { HeadTail } from "../../lib/shared/output-cut.js";

export { HeadTail };

export class OutputCollector {
  readonly stdout: HeadTail;
  readonly stderr: HeadTail;
  readonly merged: HeadTail;
  /** Merged output since the last take() (background tasks), also bounded. */
  private readonly pending: HeadTail;
  private log: WriteStream | null = null;
  /** The merged stream while no log is open (at most `outputBytes`); null once the log holds it. */
  private held: Buffer[] | null = [];
  private heldBytes = 0;
  private logMade = false;
  private logBytes = 0;
  logTruncated = false;

  constructor(private readonly outputBytes: number, private readonly logPath: string | null, private readonly maxLogBytes = 64 * 1024 * 1024) {
    this.stdout = new HeadTail(outputBytes);
    this.stderr = new HeadTail(outputBytes);
    this.merged = new HeadTail(outputBytes);
    // A poll hands out whole pieces, head and tail within the output cap: a piece is at most half of it.
    this.pending = new HeadTail(Math.max(2, Math.floor(outputBytes / 2)));
    if (!logPath) this.held = null;
  }

  /** Whether the log file exists (then the caller removes it after the run). */
  get hasLog(): boolean {
    return this.logMade;
  }

  /** Opens the log (its directory made if needed) with what was held so far. */
  private openLog(): void {
    const held = this.held!;
    this.held = null;
    mkdirSync(dirname(this.logPath!), { recursive: true, mode: 0o700 });
    this.log = createWriteStream(this.logPath!, { mode: 0o600 });
    this.logMade = true;
    for (const c of held) this.toLog(c);
  }

  private toLog(chunk: Buffer) {
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

  private both(chunk: Buffer) {
    this.merged.push(chunk);
    this.pending.push(chunk);
    if (this.held) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      if (this.heldBytes > this.outputBytes) this.openLog();
      return;
    }
    this.toLog(chunk);
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

  /** Ends the log; output that was cut although it fits the cap (a cut by lines) gets its log here. */
  async close(): Promise<void> {
    if (this.held && this.truncated) this.openLog();
    this.held = null;
    const log = this.log;
    this.log = null;
    if (log) await new Promise<void>((r) => log.end(r));
  }
}
