import { measure, summarize, type MeasureOptions, type Summary } from './measure.ts';
import { formatTable } from './table.ts';

export interface BenchCase {
  readonly name: string;
  readonly run: () => Promise<void>;
  readonly options: MeasureOptions;
}

/** Rounds each case's iterations are spread over. */
const ROUNDS = 5;

/**
 * Warms every case, then measures them taking turns, a slice of each per round, so that drift
 * over the run (JIT, GC, a noisy neighbour) spreads over every case instead of landing on
 * whichever ran last. Each case's summary, by name.
 */
export async function measureInRounds(cases: readonly BenchCase[]): Promise<Map<string, Summary>> {
  const samples = new Map<string, number[]>(cases.map(({ name }) => [name, []]));
  for (const { name, run, options } of cases) {
    process.stderr.write(`warming up: ${name}\n`);
    await measure(run, { warmup: options.warmup, iterations: 0 });
  }
  for (let round = 0; round < ROUNDS; round++) {
    process.stderr.write(`round ${round + 1} of ${ROUNDS}\n`);
    for (const { name, run, options } of cases) {
      samples.get(name)!.push(...(await measure(run, { warmup: 0, iterations: Math.max(1, Math.round(options.iterations / ROUNDS)) })));
    }
  }
  return new Map([...samples].map(([name, taken]) => [name, summarize(taken)]));
}

/** Each case's iterations, median and p95 (ms), and its median over the first case's (the baseline, headed `ratioHeader`). */
export function ratioTable(cases: readonly BenchCase[], results: ReadonlyMap<string, Summary>, caseHeader: string, ratioHeader: string): string {
  const baseline = results.get(cases[0]!.name)!;
  return formatTable(
    [
      { header: caseHeader, align: 'left' },
      { header: 'iters', align: 'right' },
      { header: 'median', align: 'right' },
      { header: 'p95', align: 'right' },
      { header: ratioHeader, align: 'right' },
    ],
    cases.map(({ name }) => {
      const summary = results.get(name)!;
      return [name, String(summary.iterations), summary.medianMs.toFixed(3), summary.p95Ms.toFixed(3), `${(summary.medianMs / baseline.medianMs).toFixed(2)}x`];
    }),
  );
}
