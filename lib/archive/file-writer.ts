/**
 * Where an import's files go. `ImportWriter` is the seam: today `ObjectWriter` makes one
 * conditional PUT per file through the Workspace; a pack writer (DESIGN §5: contents in packs,
 * a manifest, one pointer switch) can take its place without the reader, the policy or the
 * route changing.
 *
 * ObjectWriter: create-only for paths the target did not hold when it was listed, If-Match the
 * listed etag for those it did (a concurrent writer's change is never overwritten: the import
 * stops with FILE_MODIFIED / ALREADY_EXISTS). Up to `concurrency` PUTs in flight (Workers keep
 * 6 connections open at once). The search index is fed in batches: the Workspace defers its
 * listeners and this writer flushes them every `batchBytes` of content (or `batchFiles` files),
 * so the index gets one segment per batch, not one per file.
 */
import { ancestorsOf } from "../layout/paths.js";
import type { ArchiveWorkspace as Workspace } from "./workspace-view.js";

export interface ImportWriter {
  /** Claims `path` for this import, or says why it cannot be written (a directory there, a file above it). */
  claim(path: string): string | null;
  /** Writes one file. Resolves once the next may start: a byte body is written in the background, a stream body (the archive's own) before it resolves. Throws the first failure of any write. */
  write(path: string, body: Uint8Array | ReadableStream<Uint8Array>, size: number): Promise<void>;
  /** Waits for every write and flushes the index; throws the first failure. */
  finish(): Promise<void>;
  /** After a failure: waits for what is in flight, indexes what landed; never throws. */
  settle(): Promise<void>;
  /** path → etag of every file written. */
  readonly landed: Map<string, string>;
  readonly stats: { created: number; updated: number; bytes: number };
}

export interface Target {
  /** path → etag of the files under the prefix when the import began. */
  existing: Map<string, string>;
  /** Directories implied by those files. */
  dirs: Set<string>;
}

export interface ObjectWriterOptions {
  concurrency?: number;
  batchFiles?: number;
  batchBytes?: number;
}

/** Remembers the first error a stream raised, so a failed PUT reports its cause (a cut upload) rather than the storage's echo of it. */
function tap(stream: ReadableStream<Uint8Array>): { stream: ReadableStream<Uint8Array>; error: () => unknown } {
  let error: unknown;
  const reader = stream.getReader();
  return {
    stream: new ReadableStream<Uint8Array>({
      pull: async (c) => {
        try {
          const r = await reader.read();
          if (r.done) c.close();
          else c.enqueue(r.value);
        } catch (e) {
          error ??= e;
          throw e;
        }
      },
      cancel: (reason) => reader.cancel(reason),
    }, { highWaterMark: 0 }),
    error: () => error,
  };
}

export class ObjectWriter implements ImportWriter {
  readonly landed = new Map<string, string>();
  readonly stats = { created: 0, updated: 0, bytes: 0 };
  private readonly claimed = new Set<string>();
  private readonly inflight = new Set<Promise<void>>();
  private readonly byPath = new Map<string, Promise<void>>();
  private failure: { error: unknown } | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private readonly concurrency: number;
  private readonly batchFiles: number;
  private readonly batchBytes: number;

  constructor(private readonly ws: Workspace, private readonly target: Target, opts: ObjectWriterOptions = {}) {
    this.concurrency = opts.concurrency ?? 6;
    this.batchFiles = opts.batchFiles ?? 2000;
    this.batchBytes = opts.batchBytes ?? 4 * 1024 * 1024;
  }

  claim(path: string): string | null {
    if (this.target.dirs.has(path)) return `${path} is a directory in the workspace`;
    for (const a of ancestorsOf(path)) {
      if (this.target.existing.has(a) || this.claimed.has(a)) return `${a} is a file, so ${path} cannot be created below it`;
    }
    this.claimed.add(path);
    for (const a of ancestorsOf(path)) this.target.dirs.add(a);
    return null;
  }

  private check(): void {
    if (this.failure) throw this.failure.error;
  }

  async write(path: string, body: Uint8Array | ReadableStream<Uint8Array>, size: number): Promise<void> {
    this.check();
    while (this.inflight.size >= this.concurrency) await Promise.race(this.inflight);
    this.check();
    // The same path twice in one archive: the later entry wins, written over the earlier one.
    const previous = this.byPath.get(path);
    if (previous) await previous;
    this.check();
    const ifMatch = this.landed.get(path) ?? this.target.existing.get(path);
    if (body instanceof ReadableStream) {
      const t = tap(body);
      try {
        await this.put(path, t.stream, size, ifMatch);
      } catch (e) {
        this.failure ??= { error: t.error() ?? e };
        throw this.failure.error;
      }
      return;
    }
    const p: Promise<void> = this.put(path, body, size, ifMatch)
      .catch((e) => {
        this.failure ??= { error: e };
      })
      .finally(() => {
        this.inflight.delete(p);
        if (this.byPath.get(path) === p) this.byPath.delete(path);
      });
    this.inflight.add(p);
    this.byPath.set(path, p);
  }

  private async put(path: string, body: Uint8Array | ReadableStream<Uint8Array>, size: number, ifMatch: string | undefined): Promise<void> {
    const info = await this.ws.put(path, body, { length: size, placeChecked: true, ...(ifMatch !== undefined ? { ifMatch } : { create: true }) });
    if (this.target.existing.has(path) || this.landed.has(path)) this.stats.updated++;
    else this.stats.created++;
    this.landed.set(path, info.etag);
    this.stats.bytes += info.size;
    const pending = this.ws.pendingChanges;
    if (pending.files >= this.batchFiles || pending.bytes >= this.batchBytes) this.flush();
  }

  private flush(): void {
    this.flushing = this.flushing.then(() => this.ws.flushChanges()).catch(() => {});
  }

  private async drain(): Promise<void> {
    while (this.inflight.size) await Promise.all(this.inflight);
    this.flush();
    await this.flushing;
  }

  async finish(): Promise<void> {
    await this.drain();
    this.check();
  }

  async settle(): Promise<void> {
    await this.drain().catch(() => {});
  }
}
