/**
 * A byte stream read into one reused buffer. A BYOB read hands the buffer to the source and gets
 * it back filled, so walking a 200 MB file allocates nothing per chunk: before this, `read` of a
 * large file's last page left ~120 MB of spent chunks in the isolate until the GC caught up (the
 * Workers limit is 128 MB). Streams that are not byte streams (the memory driver's, a test's) are
 * read chunk by chunk as they come.
 *
 * The contract: a chunk is a view that the next `next()` overwrites. Copy what you keep.
 */
import { concatBytes } from "./text.js";
export interface Chunks {
  /** The next chunk, or null at the end. Valid until the next call. */
  next(): Promise<Uint8Array | null>;
  /** Stops reading and cancels the source. */
  cancel(): Promise<void>;
}

export const CHUNK_BUFFER_BYTES = 256 * 1024;

export function reusedChunks(source: ReadableStream<Uint8Array>, bufferBytes = CHUNK_BUFFER_BYTES): Chunks {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = source.getReader({ mode: "byob" });
  } catch {
    // not a byte stream
  }
  if (!byob) {
    const reader = source.getReader();
    return {
      next: async () => {
        const { done, value } = await reader.read();
        return done ? null : value;
      },
      cancel: () => reader.cancel().catch(() => {}),
    };
  }
  const reader = byob;
  let buffer = new ArrayBuffer(bufferBytes);
  return {
    async next() {
      for (;;) {
        const { done, value } = await reader.read(new Uint8Array(buffer));
        if (done || !value) return null;
        buffer = value.buffer as ArrayBuffer; // the same memory, handed back
        if (value.length > 0) return value;
      }
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}

/** `first`, then the rest of `chunks`. */
export function prepend(first: Uint8Array, chunks: Chunks): Chunks {
  let sent = first.length === 0;
  return {
    next: async () => {
      if (sent) return chunks.next();
      sent = true;
      return first;
    },
    cancel: () => chunks.cancel(),
  };
}

/**
 * `chunks`, keeping a copy of what passes through while it stays within `maxBytes`. `whole()`:
 * every byte of the stream, once it was read to its end (null if it was cancelled or grew past
 * `maxBytes`).
 */
export function recordingChunks(chunks: Chunks, maxBytes: number): { chunks: Chunks; whole(): Uint8Array | null } {
  let copies: Uint8Array[] | null = [];
  let held = 0;
  let ended = false;
  return {
    chunks: {
      async next() {
        const c = await chunks.next();
        if (!c) ended = true;
        else if (copies) {
          held += c.length;
          if (held > maxBytes) copies = null;
          else copies.push(c.slice());
        }
        return c;
      },
      cancel: () => {
        copies = null;
        return chunks.cancel();
      },
    },
    whole: () => (ended && copies ? concatBytes(copies) : null),
  };
}
