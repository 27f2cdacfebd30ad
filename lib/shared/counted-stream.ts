/**
 * A body counted as it passes: what a metered route brought or sent when no length was declared (a chunked
 * upload, a streamed export: lib/api/routes/route-usage.ts). `bytes()` is what has passed so far; `ended`
 * settles once the body was read to its end, failed, or was cancelled (the client went away). `onChunk` is
 * told each chunk's size as its reader takes it (a call's network bytes: lib/tools/web/net-bytes.ts). The
 * source is read only when asked (no read-ahead: a body cut short counts what was read). Bundles for Workers.
 */
export interface CountedStream {
  body: ReadableStream<Uint8Array>;
  bytes(): number;
  ended: Promise<void>;
}

export function countedStream(source: ReadableStream<Uint8Array>, onChunk?: (bytes: number) => void): CountedStream {
  const reader = source.getReader();
  let bytes = 0;
  let end!: () => void;
  const ended = new Promise<void>((r) => (end = r));
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(c) {
        try {
          const { value, done } = await reader.read();
          if (done) {
            end();
            c.close();
            return;
          }
          bytes += value.byteLength;
          onChunk?.(value.byteLength);
          c.enqueue(value);
        } catch (e) {
          end();
          c.error(e);
        }
      },
      async cancel(reason) {
        end();
        await reader.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
  return { body, bytes: () => bytes, ended };
}
