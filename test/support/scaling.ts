/**
 * The one way a test asserts how cost grows with input: a complexity class, never a speed.
 *
 * A test that times one run against a fixed bound fails whenever the machine is busy (a CI run
 * of 275 files in parallel, a garbage collection in the middle of the larger input). What such a
 * test means to say is "linear, not quadratic": the larger input costs about `factor` times the
 * smaller one, where the wrong class costs `factor` squared. Here each round times the fastest of
 * a few runs of each side; the bound holds if any round meets it. A quadratic loop misses every
 * round by a factor of `factor`, so rounds only forgive noise. Speed itself is for `npm run bench`.
 */
import { expect } from "vitest";

export interface Scaling {
  /** What is measured, for the failure message. */
  what: string;
  /** The smaller input's run (or the baseline: a plain scan of the same bytes). */
  small: () => unknown;
  /** The larger input's run. */
  large: () => unknown;
  /** The most the larger run may cost, in ms, given the smaller run's ms. */
  bound: (smallMs: number) => number;
  /** Rounds before giving up (default 4); runs of each side per round (default 2). */
  rounds?: number;
  runs?: number;
}

/** The fastest of `runs` runs of f, in ms: the one least disturbed by other work. */
export async function fastest(f: () => unknown, runs = 2): Promise<number> {
  let min = Infinity;
  for (let k = 0; k < runs; k++) {
    const t0 = performance.now();
    await f();
    min = Math.min(min, performance.now() - t0);
  }
  return min;
}

/** Passes when, in some round, the larger run costs at most `bound(small)`; fails with every round's figures. */
export async function expectScaling(s: Scaling): Promise<{ smallMs: number; largeMs: number }> {
  const seen: string[] = [];
  for (let round = 0; round < (s.rounds ?? 4); round++) {
    const smallMs = await fastest(s.small, s.runs);
    const largeMs = await fastest(s.large, s.runs);
    if (largeMs < s.bound(smallMs)) return { smallMs, largeMs };
    seen.push(`small ${smallMs.toFixed(1)} ms, large ${largeMs.toFixed(1)} ms (bound ${s.bound(smallMs).toFixed(1)})`);
  }
  expect.fail(`${s.what}: the larger input cost more than its bound in every round: ${seen.join("; ")}`);
}
