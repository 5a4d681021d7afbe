// Entry point of `npm run bench`: runs every case of cases.ts one after another in this process
// and prints one table. Ratios divide a case's median by its floor's median from this same run,
// so they compare like with like on whatever machine the bench runs on. No thresholds: this
// reports, it never fails on speed.
import { CASES } from './cases.ts';
import { describeEnvironment } from './environment.ts';
import { measure, summarize, type Summary } from './measure.ts';
import { formatTable, type Column } from './table.ts';
import { positiveNumberFromEnv } from './settings.ts';

const iterations = positiveNumberFromEnv('BENCH_ITERATIONS', 200, true);
const warmup = positiveNumberFromEnv('BENCH_WARMUP', 20, true);

for (const line of describeEnvironment()) console.log(line);
console.log(`${warmup} warm-up + ${iterations} measured iterations per case, sequential, times in ms per iteration\n`);

const results = new Map<string, Summary>();
for (const benchCase of CASES) {
  // Progress goes to stderr so stdout stays just the report.
  process.stderr.write(`running: ${benchCase.name}\n`);
  const prepared = await benchCase.prepare();
  try {
    results.set(
      benchCase.name,
      summarize(await measure(prepared.iteration, { warmup, iterations, ...(benchCase.idleMs === undefined ? {} : { idleMs: benchCase.idleMs }) })),
    );
  } finally {
    await prepared.teardown?.();
  }
}

const ms = (value: number): string => value.toFixed(3);
const columns: Column[] = [
  { header: 'case', align: 'left' },
  { header: 'min', align: 'right' },
  { header: 'median', align: 'right' },
  { header: 'p95', align: 'right' },
  { header: 'max', align: 'right' },
  { header: 'x floor (median)', align: 'right' },
  { header: 'floor', align: 'left' },
];
const rows = CASES.map((benchCase) => {
  const summary = results.get(benchCase.name)!;
  const floor = benchCase.floor === undefined ? undefined : results.get(benchCase.floor);
  if (benchCase.floor !== undefined && floor === undefined) throw new Error(`${benchCase.name}: unknown floor "${benchCase.floor}"`);
  return [
    benchCase.name,
    ms(summary.minMs),
    ms(summary.medianMs),
    ms(summary.p95Ms),
    ms(summary.maxMs),
    floor ? `${(summary.medianMs / floor.medianMs).toFixed(2)}x` : '(floor)',
    benchCase.floor ?? '',
  ];
});
console.log(formatTable(columns, rows));
