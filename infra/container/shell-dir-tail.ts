/**
 * The output files of a live sandbox's shell directory (live-shell.ts), read as they grow: the
 * command can write that directory, so every open refuses a link or anything but a regular file.
 * Node only.
 */
import { constants, promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";

/** An output file past this is emptied after it was read (it holds output the collector already has). */
const TAIL_ROTATE_BYTES = 8 * 1024 * 1024;

/**
 * A file of the shell directory, opened only if it is a regular file reached without a link: the
 * command can write that directory, and the runner (root) must never follow what it put there
 * (a link to a host file, a FIFO that would block).
 */
async function openOwn(path: string, flags: number): Promise<FileHandle | null> {
  const h = await fs.open(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null);
  if (!h) return null;
  if ((await h.stat()).isFile()) return h;
  await h.close();
  return null;
}

/** Reads what was appended to a file since the last read; empties it when it grows large. */
export class Tail {
  private offset = 0;
  constructor(private readonly path: string, private readonly sink: (b: Buffer) => void) {}
  /**
   * What was appended since the last read (the last `limit` bytes of it, and how many bytes were
   * left out before them), and the file emptied (through the same open: the next read starts at 0).
   */
  async drain(limit: number): Promise<{ data: Buffer; skipped: number }> {
    const h = await openOwn(this.path, constants.O_RDWR);
    const offset = this.offset;
    this.offset = 0;
    if (!h) return { data: Buffer.alloc(0), skipped: 0 };
    try {
      const size = (await h.stat()).size;
      const from = Math.max(offset, size - limit);
      const data = Buffer.alloc(Math.max(0, size - from));
      const { bytesRead } = data.length ? await h.read(data, 0, data.length, from) : { bytesRead: 0 };
      if (size > 0) await h.truncate(0);
      return { data: data.subarray(0, bytesRead), skipped: Math.max(0, from - offset) };
    } finally {
      await h.close();
    }
  }

  async reset(): Promise<void> {
    const h = await openOwn(this.path, constants.O_RDWR);
    await h?.truncate(0).finally(() => h.close());
    this.offset = 0;
  }
  async pump(): Promise<void> {
    const h = await openOwn(this.path, constants.O_RDONLY);
    if (!h) return;
    try {
      for (;;) {
        const buf = Buffer.alloc(64 * 1024);
        const { bytesRead } = await h.read(buf, 0, buf.length, this.offset);
        if (bytesRead === 0) break;
        this.offset += bytesRead;
        this.sink(buf.subarray(0, bytesRead));
      }
    } finally {
      await h.close();
    }
    // Writers append (O_APPEND): after the truncation they write at the new end.
    if (this.offset > TAIL_ROTATE_BYTES) await this.reset();
  }
}
