/** Reads a Server-Sent Events response (lib/doors/sse.ts) into its events; comment lines (": keep-alive") are skipped. */
export interface SseEvent {
  event: string;
  data: any;
  /** When the test saw it (Date.now()). */
  at: number;
}

/** Every event until the stream ends; `onEvent` sees each one as it comes (it may abort the request: the events so far are returned). */
export async function readEvents(res: Response, onEvent: (e: SseEvent) => void = () => {}): Promise<SseEvent[]> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: SseEvent[] = [];
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i: number;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (!/^data: /m.test(block)) continue; // a comment (": keep-alive")
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? "message";
        const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        const e = { event, data: JSON.parse(data), at: Date.now() };
        events.push(e);
        onEvent(e);
      }
    }
  } catch (e) {
    if ((e as Error).name !== "AbortError") throw e;
  }
  return events;
}

/**
 * The status progress of a stream, checked: every progress event comes before the one result event
 * (last), and the `done` counts never go backwards nor past their `total`. Returns the status events.
 */
export function statusEvents(events: SseEvent[]): { message: string; done?: number; total?: number }[] {
  const results = events.filter((e) => e.event === "result");
  if (results.length !== 1 || events.at(-1)!.event !== "result") throw new Error(`expected one result event, last: ${events.map((e) => e.event).join(", ")}`);
  const status = events.filter((e) => e.event === "progress").map((e) => e.data);
  let last = -1;
  for (const s of status) {
    if (s.kind !== "status" || typeof s.message !== "string") throw new Error(`not a status event: ${JSON.stringify(s)}`);
    if (s.done === undefined) continue;
    if (s.done < last) throw new Error(`done went backwards: ${last} then ${JSON.stringify(s)}`);
    if (s.total !== undefined && s.done > s.total) throw new Error(`done past total: ${JSON.stringify(s)}`);
    last = s.done;
  }
  return status;
}
