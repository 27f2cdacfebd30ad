/**
 * The lines of an NDJSON body, streamed: one line in memory at a time, at most `maxLine` bytes
 * (a longer line is skipped to its end and yielded as `text: null`). Blank lines are skipped;
 * `n` counts every line from 1.
 */
import { concatBytes } from "../../shared/text.js";

export async function* ndjsonLines(body: ReadableStream<Uint8Array>, maxLine: number): AsyncGenerator<{ n: number; text: string | null }> {
  const dec = new TextDecoder();
  const reader = body.getReader();
  let parts: Uint8Array[] = [];
  let have = 0;
  let tooLong = false;
  let n = 0;
  const line = function* (): Generator<{ n: number; text: string | null }> {
    n++;
    if (tooLong) yield { n, text: null };
    else if (have > 0) {
      const all = concatBytes(parts);
      const text = dec.decode(all[all.length - 1] === 0x0d ? all.subarray(0, all.length - 1) : all);
      if (text.trim()) yield { n, text };
    }
    parts = [];
    have = 0;
    tooLong = false;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      let start = 0;
      while (start < value.length) {
        const nl = value.indexOf(0x0a, start);
        const end = nl < 0 ? value.length : nl;
        if (!tooLong) {
          if (have + (end - start) > maxLine) {
            tooLong = true;
            parts = [];
            have = 0;
          } else if (end > start) {
            parts.push(value.subarray(start, end));
            have += end - start;
          }
        }
        if (nl < 0) break;
        yield* line();
        start = nl + 1;
      }
    }
    if (have > 0 || tooLong) yield* line();
  } finally {
    reader.releaseLock();
  }
}
