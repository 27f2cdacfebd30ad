/**
 * Full outputs of cut commands (bash, run_code, background tasks): service logs, kept OUTSIDE the
 * workspace's files (t/<tenant>/w/<ws>/x/outputs/), so exports, listings, search, checkpoints and
 * the sandbox's tree never hold them. Bounded: the KEEP_OUTPUT_LOGS newest of a workspace, none
 * older than OUTPUT_LOG_DAYS (pruned whenever one is saved), each at most the runner's log cap.
 * The model reads one with bash_output {output_file, offset, limit}. Bundles for Workers.
 *
 * Storage per saved log: 1 put + 1 list of the prefix (+ 1 delete for what falls out).
 */
import { ToolError } from "../shared/errors.js";
import { OUTPUT_LOG_NAME, outputLogsPrefix } from "../layout/paths.js";
import type { StorageDriver } from "../storage/types.js";

export const KEEP_OUTPUT_LOGS = 20;
export const OUTPUT_LOG_DAYS = 7;
/** The runner cuts its log at 64 MiB (infra/container/output.ts) and adds a line saying so. */
export const MAX_OUTPUT_LOG_BYTES = 64 * 1024 * 1024 + 1024;
/** Most bytes one read of a log shows (as the read tool). */
const READ_BYTES = 50_000;

const stampOf = (d: Date) => d.toISOString().replace(/[-:.]/g, ""); // 20261123T015959123Z

/** Saves the full output of run `runId`; returns its name (what output_file says). Older logs beyond the bounds are deleted. */
export async function saveOutputLog(driver: StorageDriver, tenant: string, workspace: string, runId: string, body: ReadableStream<Uint8Array> | Uint8Array, length: number): Promise<string> {
  if (!Number.isSafeInteger(length) || length < 0 || length > MAX_OUTPUT_LOG_BYTES) {
    if (!(body instanceof Uint8Array)) await body.cancel().catch(() => {});
    throw new ToolError("PAYLOAD_TOO_LARGE", `An output log has at most ${MAX_OUTPUT_LOG_BYTES} bytes and needs its Content-Length.`);
  }
  const now = new Date();
  const name = `${stampOf(now)}-${runId}.log`;
  const prefix = outputLogsPrefix(tenant, workspace);
  await driver.put(prefix + name, body instanceof Uint8Array ? body : atMost(body, length), { length, contentType: "text/plain; charset=utf-8" });
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await driver.list({ prefix, ...(cursor ? { cursor } : {}) });
    names.push(...page.objects.map((o) => o.key.slice(prefix.length)));
    cursor = page.cursor;
  } while (cursor);
  const oldest = stampOf(new Date(now.getTime() - OUTPUT_LOG_DAYS * 86_400_000));
  const doomed = names.sort().reverse().filter((n, i) => n !== name && (i >= KEEP_OUTPUT_LOGS || n < oldest || !OUTPUT_LOG_NAME.test(n)));
  for (let i = 0; i < doomed.length; i += 1000) await driver.delete(doomed.slice(i, i + 1000).map((n) => prefix + n));
  return name;
}

/** `body`, failing once it passes `length` bytes (a body longer than its Content-Length is never stored whole). */
function atMost(body: ReadableStream<Uint8Array>, length: number): ReadableStream<Uint8Array> {
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, c) {
        seen += chunk.byteLength;
        if (seen > length) c.error(new ToolError("PAYLOAD_TOO_LARGE", `The output log is longer than its Content-Length (${length} bytes).`));
        else c.enqueue(chunk);
      },
    }),
  );
}

export interface LogPage {
  /** The lines shown, numbered as read numbers them. */
  text: string;
  /** The first line not shown, when there are more. */
  next_offset?: number;
}

/** Lines offset..offset+limit-1 (1-based) of a saved output, at most READ_BYTES; streamed (never the whole log in memory). */
export async function readOutputLog(driver: StorageDriver, tenant: string, workspace: string, name: string, offset: number, limit: number): Promise<LogPage> {
  const gone = () =>
    new ToolError("NOT_FOUND", `No saved output ${name} in this workspace. Full outputs are kept for the ${KEEP_OUTPUT_LOGS} newest cut commands, ${OUTPUT_LOG_DAYS} days at most; run the command again (redirect its output to a file to keep it).`, { output_file: name });
  if (!OUTPUT_LOG_NAME.test(name)) throw gone();
  const got = await driver.get(outputLogsPrefix(tenant, workspace) + name);
  if (!got) throw gone();
  const reader = got.body.pipeThrough(new TextDecoderStream()).getReader();
  let line = 1;
  let partial = "";
  let text = "";
  let bytes = 0;
  const last = offset + limit - 1;
  const show = (l: string): boolean => {
    const row = `${String(line).padStart(6)}\t${l}\n`;
    if (bytes + row.length > READ_BYTES && text) return false;
    text += row;
    bytes += row.length;
    return true;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      const lines = (partial + (done ? "" : value)).split("\n");
      partial = done ? "" : lines.pop()!;
      if (done && lines.at(-1) === "") lines.pop();
      for (const l of lines) {
        if (line > last) return { text, next_offset: line };
        if (line >= offset && !show(l)) return { text, next_offset: line };
        line++;
      }
      if (done) break;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  if (offset >= line && line > 1) throw new ToolError("INVALID_ARGUMENT", `offset ${offset} is past the end of ${name} (${line - 1} lines).`, { lines: line - 1 });
  return { text };
}
