/**
 * Items held for a moment after the response, then handed over in one batch per key: the search
 * index's changes per workspace (lib/search/indexer.ts, changedSoon) and the usage records of an
 * isolate (lib/metering/usage.ts). A burst of calls then costs one index segment or one log line
 * instead of one per call, and none of that work runs in the middle of the next call.
 *
 * One instance per app (per isolate; no module-level state). Every item's promise settles once
 * the batch holding it has been handed over, so each request's waitUntil covers its own item.
 * A batch goes `holdMs` after its first item, or at once when it reaches `maxItems` items or
 * `maxBytes` (as `bytesOf` counts them); every batch goes at once when all of them together hold
 * `maxHeldBytes` (an isolate serving many workspaces in one second stays within its memory).
 */
export interface HoldOptions {
  /** How long the first item of a batch waits for others (default 1,000 ms). */
  holdMs?: number;
  /** A batch of this many items goes at once (default 64). */
  maxItems?: number;
  /** A batch of this many bytes goes at once (default 1 MiB). */
  maxBytes?: number;
  /** When all batches together hold this many bytes, they all go at once (default 8 MiB). */
  maxHeldBytes?: number;
}

interface Batch<T> {
  items: T[];
  bytes: number;
  /** Settles once the batch has been handed over. */
  done: Promise<void>;
  /** Hands the batch over now instead of at the end of the hold. */
  go: () => void;
}

export class HeldBatches<T> {
  private readonly batches = new Map<string, Batch<T>>();
  readonly holdMs: number;
  readonly maxItems: number;
  readonly maxBytes: number;
  readonly maxHeldBytes: number;
  /** Bytes of every batch not yet handed over. */
  private heldBytes = 0;

  constructor(
    private readonly handOver: (items: T[]) => Promise<void>,
    opts: HoldOptions = {},
    private readonly bytesOf: (item: T) => number = () => 0,
  ) {
    this.holdMs = opts.holdMs ?? 1_000;
    this.maxItems = opts.maxItems ?? 64;
    this.maxBytes = opts.maxBytes ?? 1024 * 1024;
    this.maxHeldBytes = opts.maxHeldBytes ?? 8 * 1024 * 1024;
  }

  /** Holds `item` in `key`'s batch; settles when that batch has been handed over (within holdMs). */
  add(key: string, item: T): Promise<void> {
    const batch = this.batches.get(key) ?? this.open(key);
    const bytes = this.bytesOf(item);
    batch.items.push(item);
    batch.bytes += bytes;
    this.heldBytes += bytes;
    if (this.heldBytes >= this.maxHeldBytes) for (const b of this.batches.values()) b.go();
    else if (batch.items.length >= this.maxItems || batch.bytes >= this.maxBytes) batch.go();
    return batch.done;
  }

  /** Batches not yet handed over. */
  get pending(): number {
    return this.batches.size;
  }

  /** Bytes held by the batches not yet handed over. */
  get held(): number {
    return this.heldBytes;
  }

  private open(key: string): Batch<T> {
    let go!: () => void;
    const due = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.holdMs);
      go = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    const batch: Batch<T> = { items: [], bytes: 0, go: () => go(), done: Promise.resolve() };
    batch.done = due.then(() => {
      // From here on, new items of this key open the next batch.
      if (this.batches.get(key) === batch) this.batches.delete(key);
      this.heldBytes -= batch.bytes;
      return this.handOver(batch.items);
    });
    this.batches.set(key, batch);
    return batch;
  }
}
