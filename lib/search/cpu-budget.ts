/**
 * What one search call may spend verifying text (DESIGN.md invariant 10): a Worker cannot
 * interrupt its own CPU-bound loop, so the loops ask this budget between bounded steps (a
 * block of lines, a window of a long line, one multiline find) and stop when it is spent.
 *
 * Two measures, whichever runs out first:
 * - bytes verified (deterministic, the same on every runtime);
 * - milliseconds spent verifying. Workers advance their clock only at I/O, so the budget
 *   yields to the event loop (a zero timer) every YIELD_BYTES or YIELD_MS: the clock catches
 *   up there, and other requests of the isolate get a turn.
 */
export interface SearchLimits {
  /** Milliseconds of verification one call may spend. */
  cpu_ms: number;
  /** Bytes one call may verify. */
  bytes: number;
}

export const DEFAULT_SEARCH_LIMITS: SearchLimits = { cpu_ms: 5_000, bytes: 512 * 1024 * 1024 };

const YIELD_BYTES = 1024 * 1024;
const YIELD_MS = 25;

export class CpuBudget {
  bytes = 0;
  ms = 0;
  yields = 0;
  private sinceYieldBytes = 0;
  private sinceYieldMs = 0;
  readonly limits: SearchLimits;

  constructor(limits: Partial<SearchLimits> = {}, private readonly signal?: AbortSignal, private readonly now: () => number = Date.now) {
    this.limits = { ...DEFAULT_SEARCH_LIMITS, ...limits };
  }

  /** Spent (or the client went away): stop at the next step and say how to continue. */
  get spent(): boolean {
    return this.bytes >= this.limits.bytes || this.ms >= this.limits.cpu_ms || this.signal?.aborted === true;
  }

  /** Runs one bounded, synchronous step of verification over `n` bytes and counts it. */
  step<T>(n: number, fn: () => T): T {
    const t0 = this.now();
    try {
      return fn();
    } finally {
      const dt = this.now() - t0;
      this.ms += dt;
      this.sinceYieldMs += dt;
      this.bytes += n;
      this.sinceYieldBytes += n;
    }
  }

  /** Counts bytes verified outside step() (when a step's size is known only after it ran). */
  charge(n: number): void {
    this.bytes += n;
    this.sinceYieldBytes += n;
  }

  /** Yields to the event loop when enough work was done since the last yield. */
  async pause(): Promise<void> {
    if (this.sinceYieldBytes < YIELD_BYTES && this.sinceYieldMs < YIELD_MS) return;
    const t0 = this.now();
    await new Promise<void>((r) => setTimeout(r, 0));
    // Where the clock stood still during the steps (Workers), it catches up here.
    this.ms += Math.max(0, this.now() - t0 - 1);
    this.sinceYieldBytes = 0;
    this.sinceYieldMs = 0;
    this.yields++;
  }
}
