/**
 * Exact reads over a ReadableStream<Uint8Array>: the archive readers ask for n bytes, skip n
 * bytes, or take the next n bytes as a stream of their own (pulled, so a large entry is never
 * held in memory). Only what one read asks for is buffered.
 *
 * A source that fails (the client cut the upload, a corrupt gzip) surfaces as INVALID_ARGUMENT
 * with a message that says so; a ToolError raised inside the source (a bound of the gzip
 * guard) passes through unchanged.
 */
import { isToolError, ToolError } from "../shared/errors.js";
import { concatBytes } from "../shared/text.js";

export function sourceError(e: unknown): ToolError {
  if (isToolError(e)) return e;
  const why = e instanceof Error ? e.message : String(e);
  return new ToolError("INVALID_ARGUMENT", `The archive could not be read to its end (${why.slice(0, 200)}): the upload was cut or the archive is damaged. Send the whole archive again.`, { reason: "unreadable" });
}

/** Little-endian fields (zip headers, gzip trailers), and a 32-bit checksum as a message shows it. */
export const u16 = (b: Uint8Array, o: number) => b[o]! | (b[o + 1]! << 8);
export const u32 = (b: Uint8Array, o: number) => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16)) + b[o + 3]! * 0x1000000;
export const hex32 = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, "0")}`;

export const truncated = (what: string) =>
  new ToolError("INVALID_ARGUMENT", `The archive ends in the middle of ${what}: the upload was cut or the archive is damaged. Send the whole archive again.`, { reason: "truncated" });

export class ByteReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private chunk: Uint8Array = new Uint8Array(0);
  private pos = 0;
  private ended = false;
  /** Bytes handed out so far (read, skipped or streamed). */
  consumed = 0;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.reader = stream.getReader();
  }

  /** Loads the next chunk; false at the end of the stream. */
  private async fill(): Promise<boolean> {
    while (this.pos >= this.chunk.length) {
      if (this.ended) return false;
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await this.reader.read();
      } catch (e) {
        throw sourceError(e);
      }
      if (r.done) {
        this.ended = true;
        return false;
      }
      this.chunk = r.value;
      this.pos = 0;
    }
    return true;
  }

  /** Up to n bytes (fewer only at the end of the stream; empty at the end). */
  async readUpTo(n: number): Promise<Uint8Array> {
    if (!(await this.fill())) return new Uint8Array(0);
    const available = this.chunk.length - this.pos;
    if (available >= n) {
      const out = this.chunk.subarray(this.pos, this.pos + n);
      this.pos += n;
      this.consumed += n;
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n && (await this.fill())) {
      const take = Math.min(n - filled, this.chunk.length - this.pos);
      out.set(this.chunk.subarray(this.pos, this.pos + take), filled);
      this.pos += take;
      filled += take;
    }
    this.consumed += filled;
    return filled === n ? out : out.subarray(0, filled);
  }

  /** Exactly n bytes, or `truncated(what)`. */
  async read(n: number, what: string): Promise<Uint8Array> {
    const out = await this.readUpTo(n);
    if (out.length !== n) throw truncated(what);
    return out;
  }

  async skip(n: number, what: string): Promise<void> {
    let left = n;
    while (left > 0) {
      if (!(await this.fill())) throw truncated(what);
      const take = Math.min(left, this.chunk.length - this.pos);
      this.pos += take;
      this.consumed += take;
      left -= take;
    }
  }

  /** The next n bytes as a stream, pulled chunk by chunk; it must be read to its end before any other read. */
  stream(n: number, what: string): ReadableStream<Uint8Array> {
    let left = n;
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        if (left === 0) return controller.close();
        if (!(await this.fill())) return controller.error(truncated(what));
        const take = Math.min(left, this.chunk.length - this.pos, 1 << 20);
        // A copy: the consumer may keep the chunk after our buffer moves on.
        controller.enqueue(this.chunk.slice(this.pos, this.pos + take));
        this.pos += take;
        this.consumed += take;
        left -= take;
        if (left === 0) controller.close();
      },
    }, { highWaterMark: 0 });
  }

  /** Reads on to the end of the stream, dropping what it reads, unless more than `max` bytes are left; true when the end was reached. */
  async drain(max: number): Promise<boolean> {
    let left = max;
    while (await this.fill()) {
      const take = this.chunk.length - this.pos;
      if (take > left) return false;
      this.pos += take;
      this.consumed += take;
      left -= take;
    }
    return true;
  }

  async cancel(reason?: unknown): Promise<void> {
    await this.reader.cancel(reason).catch(() => {});
  }
}

/** The first bytes of a stream (up to n, fewer if it is shorter) and a stream that still yields all of it. */
export async function peek(stream: ReadableStream<Uint8Array>, n: number): Promise<{ head: Uint8Array; stream: ReadableStream<Uint8Array> }> {
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let have = 0;
  while (have < n) {
    let r: ReadableStreamReadResult<Uint8Array>;
    try {
      r = await reader.read();
    } catch (e) {
      throw sourceError(e);
    }
    if (r.done) break;
    parts.push(r.value);
    have += r.value.length;
  }
  const head = concatBytes(parts);
  let sentHead = false;
  const rest = new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      if (!sentHead) {
        sentHead = true;
        if (head.length) return controller.enqueue(head);
      }
      const r = await reader.read();
      if (r.done) controller.close();
      else controller.enqueue(r.value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
  return { head: head.subarray(0, Math.min(n, head.length)), stream: rest };
}
