/**
 * One byte budget for everything an isolate keeps between requests that can grow large: lower
 * layers' manifests (lib/layers/manifest.ts), index segment ranges (lib/search/segment-cache.ts)
 * and files' last versions (lib/workspace/version-cache.ts). Each cache is a region of it; they
 * share one least-recently-used order, so whichever the isolate's traffic uses most gets the room,
 * and the sum never passes `maxBytes` (a value heavier than the whole budget is still kept, alone).
 *
 * Why one number: a Workers isolate has 128 MB for its code, these caches and every request it
 * serves at once. Three caches bounded apart (16 MB + 16 MB + 40 MB) could hold 72 MB beside the
 * ~25 MB the app itself takes; one budget says in one place what is left for requests.
 * Made by createApp (no module-level state).
 */
import { WeightedLru } from "./weighted-lru.js";

/** Default budget: with the app's own ~25 MB, ~73 MB of the 128 MB of a Workers isolate at most. */
export const ISOLATE_CACHE_BYTES = 48 * 1024 * 1024;
/** Most a larger runtime gets (a Lambda function of 2 GB and more). */
export const MAX_CACHE_BYTES = 512 * 1024 * 1024;

/**
 * The budget for a runtime of `memoryMb` (Lambda: AWS_LAMBDA_FUNCTION_MEMORY_SIZE): a quarter of
 * it, never less than the Workers default nor more than MAX_CACHE_BYTES. Unknown: the default.
 */
export function cacheBytesFor(memoryMb: number | undefined): number {
  if (memoryMb === undefined || !Number.isFinite(memoryMb) || memoryMb <= 0) return ISOLATE_CACHE_BYTES;
  return Math.min(MAX_CACHE_BYTES, Math.max(ISOLATE_CACHE_BYTES, Math.floor((memoryMb * 1024 * 1024) / 4)));
}

export class IsolateMemory {
  private readonly lru: WeightedLru<unknown>;
  private readonly held = new Map<string, number>();

  constructor(readonly maxBytes = ISOLATE_CACHE_BYTES) {
    // Every entry that leaves (dropped for room, deleted, replaced) leaves its region's count.
    this.lru = new WeightedLru(maxBytes, (key, bytes) => this.count(key.slice(0, key.indexOf("\u0000")), -bytes));
  }

  /** The region `name` of this budget: its keys are its own, its bytes count toward the whole. */
  region<V>(name: string): MemoryRegion<V> {
    if (name.includes("\u0000")) throw new Error("a region name has no NUL");
    const lru = this.lru as WeightedLru<V>;
    const key = (k: string) => `${name}\u0000${k}`;
    return {
      name,
      memory: this,
      get: (k) => lru.get(key(k)),
      has: (k) => lru.has(key(k)),
      set: (k, value, bytes) => {
        lru.set(key(k), value, bytes);
        this.count(name, bytes);
      },
      delete: (k) => lru.delete(key(k)),
      get bytes() {
        return this.memory.bytesOf(name);
      },
    };
  }

  /** Bytes held in all regions. */
  get bytes(): number {
    return this.lru.weight;
  }

  /** Bytes held in region `name`. */
  bytesOf(name: string): number {
    return this.held.get(name) ?? 0;
  }

  private count(region: string, bytes: number): void {
    this.held.set(region, (this.held.get(region) ?? 0) + bytes);
  }
}

/** A cache's share of an IsolateMemory: get (a hit makes it the most recently used), set by bytes, delete. */
export interface MemoryRegion<V> {
  readonly name: string;
  readonly memory: IsolateMemory;
  get(key: string): V | undefined;
  has(key: string): boolean;
  /** Keeps `value` at `bytes`; the least recently used entries of every region go until the budget holds. */
  set(key: string, value: V, bytes: number): void;
  delete(key: string): void;
  /** Bytes this region holds. */
  readonly bytes: number;
}
