/**
 * A small Server-Sent Events reader (the WHATWG event-stream format): `event:` and `data:` fields,
 * multi-line data joined with "\n", comments and `id:` / `retry:` ignored, one event per blank
 * line, CRLF / LF / CR line ends. Enough for Toolshed's tool streams (lib/doors/sse.ts); no
 * reconnection (a tool call is not resumable).
 */
export interface SseMessage {
  event: string;
  data: string;
}

export async function* readSse(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<SseMessage, void, void> {
  // TextDecoder in streaming mode rather than TextDecoderStream, whose type only the DOM lib has.
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  const onAbort = () => void reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break; // an unterminated last event is not an event (as before)
      buffer += decoder.decode(value, { stream: true });
      // A line ends at \r\n, \n or \r; a trailing \r may be the first half of \r\n, so wait for more.
      let m: RegExpExecArray | null;
      const lineEnd = /\r\n|\n|\r(?!$)/g;
      let start = 0;
      while ((m = lineEnd.exec(buffer))) {
        const line = buffer.slice(start, m.index);
        start = m.index + m[0].length;
        if (line === "") {
          if (data.length) yield { event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      buffer = buffer.slice(start);
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    // Also when the consumer stops early: cancelling the body ends the request, which cancels the call.
    await reader.cancel().catch(() => {});
  }
}
