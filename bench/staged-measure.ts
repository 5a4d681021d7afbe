import { performance } from 'node:perf_hooks';
import type { MeasureOptions } from './measure.ts';

/**
 * One iteration split into what is timed and what is not: `timed` is the operation measured,
 * `check` (untimed) verifies its result and cleans up, so that a broken runtime fails the bench
 * instead of producing a fast sample, without the verification inflating the number.
 */
export interface Stage<T> {
  timed(): Promise<T>;
  check?(result: T): void | Promise<void>;
}

/**
 * Like measure(), but each iteration first runs `prepare` untimed (to put the program where the
 * timed step needs it: a paused isolate, a fresh id) and returns the stage to time. Returns the
 * measured durations in milliseconds; warm-up iterations are run and checked, not recorded.
 */
export async function measureStaged<T>(prepare: () => Promise<Stage<T>>, options: MeasureOptions): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < options.warmup + options.iterations; i++) {
    const stage = await prepare();
    const started = performance.now();
    const result = await stage.timed();
    const elapsed = performance.now() - started;
    await stage.check?.(result);
    if (i >= options.warmup) samples.push(elapsed);
  }
  return samples;
}

/**
 * Times several targets in rounds: each round runs every target once, one at a time, starting
 * from a different target each round. Drift over the run (thermal, GC, a growing store) then
 * lands on all targets alike instead of on whichever ran last, which keeps their ratios honest.
 * Returns one sample list per target, in the order given.
 */
export async function measureRoundRobin<T>(targets: readonly Stage<T>[], options: MeasureOptions): Promise<number[][]> {
  const samples = targets.map((): number[] => []);
  for (let round = 0; round < options.warmup + options.iterations; round++) {
    for (let offset = 0; offset < targets.length; offset++) {
      const index = (round + offset) % targets.length;
      const target = targets[index]!;
      const started = performance.now();
      const result = await target.timed();
      const elapsed = performance.now() - started;
      await target.check?.(result);
      if (round >= options.warmup) samples[index]!.push(elapsed);
    }
  }
  return samples;
}
