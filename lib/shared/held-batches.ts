/**
 * Items held for a moment after the response, then handed over in one batch per key: the search
 * index's changes per workspace (lib/search/indexer.ts, changedSoon) and the usage records of an
 * isolate (lib/run/metering/usage.ts). A burst of calls then costs one index segment or one log line
 * instead of one per call, and none of that work runs in the middle of the next call.
 *
 * One instance per app (per isolate; no module-level state). Items of many requests share a batch,
 * but **no request ever waits on a promise another request made**: the Workers runtime runs a
 * promise's timers and I/O in the request that made it, and a request awaiting one made by another
 * (a timer the first call of a burst set) is cancelled as hung ("Worker's code had hung",
 * "Promise will never complete") once the maker's request is gone, and its items with it. So the
 * batch is in the care of its **keeper**, the request that added to it last: each `add` makes the
 * adder the keeper and starts the adder's own timer for what is left of the hold. When a timer
 * fires and its adder is still the keeper, that request hands the batch over, in its own context
 * (its own I/O, under its own waitUntil); an adder that is no longer the keeper settles then
 * (a later request, alive and waiting, carries its items). The promise `add` returns is the
 * adder's own and is always settled by the adder's own timer or handover; the request that hands
 * the batch over also settles the promises of the batch's earlier adders whose timers have not
 * fired yet (those requests are still waiting, so alive: resolving a promise of a request that has
 * ended is what the runtime warns about), so they need not wait out the hold.
 *
 * A batch goes `holdMs` after its first item, or at once (by the adder) when it reaches `maxItems`
 * items or `maxBytes` (as `bytesOf` counts them); when all batches together hold `maxHeldBytes`,
 * the adder's batch goes at once, so what is held stays near that bound (an isolate serving many
 * workspaces in one second stays within its memory). handOver gets the items in the order added;
 * the last one is the keeper's (its request's objects are the ones to do I/O with).
 */
export interface HoldOptions {
  /** How long the first item of a batch waits for others (default 1,000 ms). */
  holdMs?: number;
  /** A batch of this many items goes at once (default 64). */
  maxItems?: number;
  /** A batch of this many bytes goes at once (default 1 MiB). */
  maxBytes?: number;
  /** When all batches together hold this many bytes, the batch added to goes at once (default 8 MiB). */
  maxHeldBytes?: number;
  /**
   * Waits `ms` in the calling request (default: setTimeout). Tests pass one that knows which
   * simulated request asked, to check that a batch never depends on another request's timer.
   */
  sleep?: (ms: number) => Promise<void>;
}

interface Batch<T> {
  items: T[];
  bytes: number;
  /** When the hold of the batch ends (its first item's time + holdMs). */
  due: number;
  /** The latest add: the one whose request hands the batch over. */
  keeper: object;
  /** Settles each add's promise (see the header): called once the batch has been handed over. */
  release: (() => void)[];
}

export class HeldBatches<T> {
  private readonly batches = new Map<string, Batch<T>>();
  readonly holdMs: number;
  readonly maxItems: number;
  readonly maxBytes: number;
  readonly maxHeldBytes: number;
  private readonly sleep: (ms: number) => Promise<void>;
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
    this.sleep = opts.sleep ?? ((ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  }

  /**
   * Holds `item` in `key`'s batch. Settles, in the caller's request, once the batch has been handed
   * over by this call, or once a later add has taken the batch into its care (see the header).
   */
  add(key: string, item: T): Promise<void> {
    let batch = this.batches.get(key);
    if (!batch) {
      batch = { items: [], bytes: 0, due: Date.now() + this.holdMs, keeper: {}, release: [] };
      this.batches.set(key, batch);
    }
    const me = {};
    const bytes = this.bytesOf(item);
    batch.items.push(item);
    batch.bytes += bytes;
    batch.keeper = me;
    this.heldBytes += bytes;
    if (this.heldBytes >= this.maxHeldBytes || batch.items.length >= this.maxItems || batch.bytes >= this.maxBytes) return this.goNow(key, batch);
    const b = batch;
    let handedOver!: () => void;
    const released = new Promise<void>((resolve) => (handedOver = resolve));
    b.release.push(handedOver);
    const own = this.sleep(Math.max(0, b.due - Date.now())).then(() => {
      // From here this request may end at any time: nobody else may resolve its promise any more.
      const mine = b.release.indexOf(handedOver);
      if (mine >= 0) b.release.splice(mine, 1);
      return b.keeper === me ? this.goNow(key, b) : undefined;
    });
    return Promise.race([own, released]);
  }

  /** Batches not yet handed over. */
  get pending(): number {
    return this.batches.size;
  }

  /** Bytes held by the batches not yet handed over. */
  get held(): number {
    return this.heldBytes;
  }

  /** Hands `batch` over now, in the calling request; new items of the key open the next batch. */
  private async goNow(key: string, batch: Batch<T>): Promise<void> {
    if (this.batches.get(key) !== batch) return;
    this.batches.delete(key);
    this.heldBytes -= batch.bytes;
    try {
      await this.handOver(batch.items);
    } finally {
      for (const release of batch.release) release();
    }
  }
}
