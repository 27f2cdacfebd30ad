/** Timing loops and percentiles. Every sample is client-side wall time in milliseconds. */

export interface Cell {
  n: number;
  p50: number;
  /** Set by measure/measureTogether (the business rows print it); one-sample cells leave it out. */
  p95?: number;
  p99: number;
  mean: number;
  errors: number;
  /** First error message, if any. */
  error?: string;
  /** Something the op reported that a reader of the table should know (e.g. incomplete results). */
  note?: string;
}

export interface MeasureOptions {
  /** Samples wanted (default 30). */
  iterations: number;
  /** Stop sampling once this much time went by, after at least minIterations (default 20 s). */
  budgetMs: number;
  minIterations: number;
  /** Untimed calls first (default 2; one when the op is slow). */
  warmup: number;
}

export const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
const round = (x: number) => Math.round(x * 10) / 10;

/**
 * Runs `fn(i)` (which returns the milliseconds of the part being measured) until the wanted
 * number of samples or the time budget. Errors are counted; three errors end the cell.
 */
export async function measure(fn: (i: number) => Promise<number>, opts: MeasureOptions): Promise<Cell> {
  return (await measureTogether({ only: fn }, opts)).only!;
}

/**
 * `measure` for several systems of one row at once: their warm-ups, then one sample of each in
 * turn (toolshed, floor, toolshed, floor, …), each system until its own number of samples, three
 * errors, or the row's budget (budgetMs per system). Whatever runs in the background meanwhile (the
 * index upkeep earlier rows left, the machine's other load) then falls on every system alike;
 * sampling one system's 30 calls and then the other's gave the first one the noisier moment.
 */
export async function measureTogether(fns: Record<string, (i: number) => Promise<number>>, opts: MeasureOptions): Promise<Record<string, Cell>> {
  const state = Object.entries(fns).map(([name, fn]) => ({ name, fn, samples: [] as number[], errors: 0, error: undefined as string | undefined, i: 0 }));
  type S = (typeof state)[number];
  const fail = (s: S, e: unknown) => {
    s.errors++;
    s.error ??= String((e as Error)?.message ?? e).slice(0, 300);
  };
  for (const s of state) {
    for (let w = 0; w < opts.warmup && s.errors < 3; w++) {
      const t = performance.now();
      try {
        await s.fn(s.i++);
      } catch (e) {
        fail(s, e);
      }
      if (performance.now() - t > opts.budgetMs / 10) break; // a slow op: one warm-up call is enough
    }
  }
  const start = performance.now();
  const budget = opts.budgetMs * state.length;
  const done = (s: S) => s.samples.length >= opts.iterations || s.errors >= 3 || (s.samples.length >= opts.minIterations && performance.now() - start > budget);
  for (let left = state.filter((s) => !done(s)); left.length; left = left.filter((s) => !done(s))) {
    for (const s of left) {
      try {
        s.samples.push(await s.fn(s.i++));
      } catch (e) {
        fail(s, e);
      }
    }
  }
  return Object.fromEntries(state.map((s) => [s.name, cellOf(s.samples, s.errors, s.error)]));
}

function cellOf(samples: number[], errors: number, error: string | undefined): Cell {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return { n: 0, p50: NaN, p99: NaN, mean: NaN, errors, ...(error ? { error } : {}) };
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 50)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
    errors,
    ...(error ? { error } : {}),
  };
}

/** Wall time of one async call, and its value. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t = performance.now();
  const value = await fn();
  return { ms: performance.now() - t, value };
}
