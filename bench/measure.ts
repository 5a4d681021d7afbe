import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

export interface MeasureOptions {
  /** Iterations run and thrown away first: JIT, inline caches, lazy module init, socket pools. */
  readonly warmup: number;
  readonly iterations: number;
  /**
   * Idle time before each iteration, not timed: programs that arrive a few milliseconds apart,
   * as they do from real clients, rather than back to back (what the runtime does in idle time,
   * such as making isolates ahead, then counts).
   */
  readonly idleMs?: number;
}

export interface Summary {
  readonly iterations: number;
  readonly minMs: number;
  readonly medianMs: number;
  readonly p95Ms: number;
  readonly maxMs: number;
}

/**
 * Times `iteration` one call at a time (never overlapping: the numbers are latencies, not
 * throughput), `idleMs` apart, and returns every measured duration in milliseconds.
 */
export async function measure(iteration: () => Promise<void>, options: MeasureOptions): Promise<number[]> {
  const idle = async (): Promise<void> => {
    if (options.idleMs) await sleep(options.idleMs);
  };
  for (let i = 0; i < options.warmup; i++) {
    await idle();
    await iteration();
  }
  const samples: number[] = [];
  for (let i = 0; i < options.iterations; i++) {
    await idle();
    const started = performance.now();
    await iteration();
    samples.push(performance.now() - started);
  }
  return samples;
}

/** Nearest-rank percentile of ascending `sorted` samples: always a value that was measured. */
function percentile(sorted: readonly number[], fraction: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

/** Nearest-rank percentile of `samples` in any order. */
export function percentileOf(samples: readonly number[], fraction: number): number {
  return percentile(
    [...samples].sort((left, right) => left - right),
    fraction,
  );
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((left, right) => left - right);
  return {
    iterations: sorted.length,
    minMs: sorted[0] ?? Number.NaN,
    medianMs: percentile(sorted, 0.5),
    p95Ms: percentile(sorted, 0.95),
    maxMs: sorted[sorted.length - 1] ?? Number.NaN,
  };
}
