/**
 * Writes file contents into packs: small files are concatenated into one buffer and written as a
 * pack of ≤ PACK_BYTES (one PUT per pack, a few in flight); a file larger than a pack is streamed
 * into a pack of its own. Each file becomes a manifest entry (its etag the MD5 of its bytes,
 * computed here, or the etag its upper object had when it is sealed by a checkpoint).
 * Packs are written under fresh random ids (create-only): nothing else ever writes them.
 */
import { randomId } from "../shared/hash.js";
import { packKey } from "../layout/paths.js";
import type { StorageDriver } from "../storage/types.js";
import type { ManifestEntry } from "./manifest.js";
import { md5Hex, md5Stream } from "../storage/md5.js";

export const PACK_BYTES = 8 * 1024 * 1024;
const IN_FLIGHT = 3;

export const newLayerId = (): string => `${Date.now().toString(36)}${randomId(14)}`;

export class PackWriter {
  readonly packs: string[] = [];
  readonly entries: ManifestEntry[] = [];
  private chunks: Uint8Array[] = [];
  private size = 0;
  private current = -1;
  private readonly inflight = new Set<Promise<void>>();
  private failure: { error: unknown } | null = null;

  constructor(private readonly driver: StorageDriver, private readonly tenant: string) {}

  private check(): void {
    if (this.failure) throw this.failure.error;
  }

  /** Adds a file whose bytes are in hand; `etag` given (sealing) or computed (MD5). */
  async add(path: string, bytes: Uint8Array, opts: { etag?: string; modified?: number } = {}): Promise<ManifestEntry> {
    this.check();
    if (this.size + bytes.length > PACK_BYTES && this.size > 0) await this.flush();
    if (this.current < 0 && bytes.length > 0) this.current = this.packs.push(newLayerId()) - 1;
    const e: ManifestEntry = { path, etag: opts.etag ?? md5Hex(bytes), size: bytes.length, modified: opts.modified ?? Date.now(), pack: bytes.length ? this.current : -1, offset: bytes.length ? this.size : 0 };
    if (bytes.length) {
      this.chunks.push(bytes);
      this.size += bytes.length;
    }
    this.entries.push(e);
    return e;
  }

  /** Adds a large file, streamed into a pack of its own. */
  async addStream(path: string, body: ReadableStream<Uint8Array>, size: number, opts: { etag?: string; modified?: number } = {}): Promise<ManifestEntry> {
    this.check();
    const id = newLayerId();
    const hash = md5Stream();
    let seen = 0;
    // The source's own error (a bound, a cut body) is what the caller must see, not the storage's echo of it.
    let sourceError: unknown;
    const reader = body.getReader();
    const tapped = new ReadableStream<Uint8Array>({
      async pull(c) {
        try {
          const r = await reader.read();
          if (r.done) return c.close();
          hash.update(r.value);
          seen += r.value.length;
          c.enqueue(r.value);
        } catch (e) {
          sourceError ??= e;
          throw e;
        }
      },
      cancel: (reason) => reader.cancel(reason),
    }, { highWaterMark: 0 });
    try {
      await this.driver.put(packKey(this.tenant, id), tapped, { ifNoneMatch: "*", length: size });
    } catch (e) {
      throw sourceError ?? e;
    }
    if (seen !== size) throw new Error(`${path}: expected ${size} bytes, read ${seen}`);
    const pack = this.packs.push(id) - 1;
    const e: ManifestEntry = { path, etag: opts.etag ?? hash.hex(), size, modified: opts.modified ?? Date.now(), pack, offset: 0 };
    this.entries.push(e);
    return e;
  }

  /** Starts writing the current pack (in the background, a few at a time). */
  async flush(): Promise<void> {
    if (this.size === 0) return;
    while (this.inflight.size >= IN_FLIGHT) await Promise.race(this.inflight);
    this.check();
    const body = new Uint8Array(this.size);
    let at = 0;
    for (const c of this.chunks) {
      body.set(c, at);
      at += c.length;
    }
    const key = packKey(this.tenant, this.packs[this.current]!);
    this.chunks = [];
    this.size = 0;
    this.current = -1;
    const p: Promise<void> = this.driver
      .put(key, body, { ifNoneMatch: "*", length: body.length })
      .then(() => undefined, (e: unknown) => void (this.failure ??= { error: e }))
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  /** Writes what is buffered and waits for every pack; throws the first failure. */
  async finish(): Promise<void> {
    await this.flush();
    while (this.inflight.size) await Promise.all(this.inflight);
    this.check();
  }

  /** After a failure: waits for what is in flight; never throws. */
  async settle(): Promise<void> {
    while (this.inflight.size) await Promise.all(this.inflight).catch(() => {});
  }
}
