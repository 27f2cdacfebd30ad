/**
 * gzip and deflate as pulled streams, over fflate's push codecs. Not the platform's
 * CompressionStream/DecompressionStream: in workerd their writable side applies no backpressure
 * (measured: 200 MB written into a CompressionStream nobody reads were all accepted), so
 * anything piped through them is pulled as fast as it arrives and its output queued in memory.
 * Here each pull feeds the codec slices of input only until it has produced output, so memory
 * holds at most one slice's output (a slice of 8 KB inflates to at most ~8 MB), and a bomb's
 * ratio is measured on exactly the input that produced the output. gzip's trailers are checked
 * (gzip-check.ts): fflate reads past them unchecked.
 */
import { Gunzip, Gzip, Inflate } from "fflate";
import { isToolError, ToolError } from "../shared/errors.js";
import type { ArchiveLimits } from "./limits.js";
import { GzipCheck } from "./gzip-check.js";

const SLICE = 8 * 1024;

interface PushCodec {
  push(chunk: Uint8Array, final?: boolean): void;
  ondata: (data: Uint8Array, final: boolean) => void;
}

interface Hooks {
  /** Each output chunk as it is handed on, with the bytes out and in so far (a bound may throw). */
  onOutput?(outBytes: number, inBytes: number): void;
  /** What a codec's refusal of its input (fflate throws plain Errors: "invalid distance", …) becomes; unset, it passes as it is. */
  damaged?(why: string): Error;
  /** A check of the codec's work (gzip's trailers): fed every input slice and, in the codec's order, every output chunk and its end. */
  check?: { input(slice: Uint8Array): void; output(data: Uint8Array): void; end(): void };
}

function pulled(source: ReadableStream<Uint8Array>, codec: PushCodec, hooks: Hooks = {}): ReadableStream<Uint8Array> {
  const { onOutput, damaged, check } = hooks;
  const reader = source.getReader();
  const queue: Uint8Array[] = [];
  let finished = false;
  let sourceDone = false;
  let pending: Uint8Array | null = null;
  let pos = 0;
  let inBytes = 0;
  let outBytes = 0;
  codec.ondata = (data, final) => {
    check?.output(data);
    if (data.length) queue.push(data);
    if (final) {
      finished = true;
      check?.end();
    }
  };
  const push = (chunk: Uint8Array, final: boolean) => {
    try {
      codec.push(chunk, final);
    } catch (e) {
      throw damaged && !isToolError(e) ? damaged(e instanceof Error ? e.message : String(e)) : e;
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      while (queue.length === 0) {
        if (finished) {
          await reader.cancel().catch(() => {});
          return c.close();
        }
        if (sourceDone) throw new Error("the compressed data ends early");
        if (!pending || pos >= pending.length) {
          const r = await reader.read();
          if (r.done) {
            sourceDone = true;
            push(new Uint8Array(0), true);
            continue;
          }
          pending = r.value;
          pos = 0;
        }
        const slice = pending.subarray(pos, pos + SLICE);
        pos += slice.length;
        inBytes += slice.length;
        check?.input(slice);
        push(slice, false);
      }
      const out = queue.shift()!;
      outBytes += out.length;
      onOutput?.(outBytes, inBytes);
      c.enqueue(out);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

/**
 * gzip decompression with a ratio guard: past `ratioFloorBytes` out, more than `maxRatio` bytes
 * out per byte in is refused as a decompression bomb before the bytes reach anything that keeps them.
 */
export function gunzip(body: ReadableStream<Uint8Array>, limits: Pick<ArchiveLimits, "maxRatio" | "ratioFloorBytes">): ReadableStream<Uint8Array> {
  const check = new GzipCheck();
  const codec = new Gunzip();
  codec.onmember = (next) => check.memberEnds(next);
  return pulled(body, codec as unknown as PushCodec, {
    check,
    onOutput(out, inBytes) {
      if (out > limits.ratioFloorBytes && out > inBytes * limits.maxRatio) {
        throw new ToolError("PAYLOAD_TOO_LARGE", `The gzip body inflates more than ${limits.maxRatio} times (${out} bytes from ${inBytes}): refused as a decompression bomb. Send the archive uncompressed, or split it.`, { reason: "ratio", max_ratio: limits.maxRatio });
      }
    },
  });
}

/** Raw deflate (zip entries); the caller bounds the output to the entry's declared size, and says (`damaged`) what data that does not inflate is. */
export const inflateRaw = (body: ReadableStream<Uint8Array>, damaged: (why: string) => Error): ReadableStream<Uint8Array> => pulled(body, new Inflate() as unknown as PushCodec, { damaged });

/** gzip compression, pulled: the source is read only as fast as the output is. */
export const gzipStream = (body: ReadableStream<Uint8Array>, level: 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 = 1): ReadableStream<Uint8Array> => pulled(body, new Gzip({ level }) as unknown as PushCodec);
