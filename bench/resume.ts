// Entry point of `npm run bench:resume`: what resuming a paused program costs as its history
// grows, warm (the paused isolate, cached) versus replay (a fresh isolate re-running the program
// from its recorded calls), in process and over HTTP; and what each response store adds to a
// `store: true` request. Every ratio divides by a baseline measured in this same run. No
// thresholds: this reports, it never fails on speed, only on a wrong answer.
import { describeEnvironment } from './environment.ts';
import type { MeasureOptions } from './measure.ts';
import { measure, summarize, type Summary } from './measure.ts';
import { measureHttpResume } from './resume-http.ts';
import { LOOP_PROGRAM, type ResumeSchedule } from './resume-program.ts';
import { measureRuntimeResume, type PathSamples } from './resume-runtime.ts';
import { LONG_CHAIN, measureStoreLatency, PAUSED_PROGRAMS_KEPT } from './store-latency.ts';
import { formatTable, ratio, type Column } from './table.ts';
import { runBare, startReplayRunner, WORKLOADS } from './workloads.ts';
import { positiveNumberFromEnv } from './settings.ts';

/** BENCH_RESUME_SCALE multiplies every iteration count (e.g. 0.1 for a quick look, 3 for steadier numbers). */
const factor = positiveNumberFromEnv('BENCH_RESUME_SCALE', 1);
const scaled = (count: number): number => Math.max(1, Math.round(count * factor));

// Fewer iterations where each one is long: a resume at N=1000 replays a thousand batches.
const SCHEDULE: readonly ResumeSchedule[] = [
  { earlierCalls: 1, warmup: scaled(20), iterations: scaled(200) },
  { earlierCalls: 10, warmup: scaled(20), iterations: scaled(200) },
  { earlierCalls: 100, warmup: scaled(10), iterations: scaled(100) },
  { earlierCalls: 1000, warmup: scaled(3), iterations: scaled(30) },
];
const STORE_OPTIONS: MeasureOptions = { warmup: scaled(20), iterations: scaled(200) };

const progress = (message: string): void => {
  process.stderr.write(`running: ${message}\n`);
};

for (const line of describeEnvironment()) console.log(line);
console.log('Sequential, one request or resume at a time; times in ms unless marked; ratios divide medians measured in this run.\n');

const runtimeResults = await measureRuntimeResume(SCHEDULE, progress);
const httpResults = await measureHttpResume(SCHEDULE, progress);
// The floor for a replay of 1,000 recorded calls: one whole run of a 1,000-call program (W3) in
// plain isolated-vm, tools answering at once. A replay runs the program again feeding it its
// record, so it should cost no more than running it fresh.
progress('bare isolated-vm W3 (1,000 calls), the floor for a 1,000-call replay');
const W3 = WORKLOADS.find((workload) => workload.id === 'W3')!;
const bareW3 = summarize(await measure(() => runBare(W3), { warmup: scaled(3), iterations: scaled(30) }));
progress('replaying W3 from its 1,000 recorded calls');
const w3Replay = await startReplayRunner(W3);
const replayW3 = summarize(await measure(w3Replay.run, { warmup: scaled(3), iterations: scaled(30) }));
await w3Replay.close();
const stores = await measureStoreLatency(STORE_OPTIONS, progress);

const ms = (value: number): string => value.toFixed(3);

// ---- Table 1 ---------------------------------------------------------------------------------
const resumeColumns: Column[] = [
  { header: 'via', align: 'left' },
  { header: 'N', align: 'right' },
  { header: 'iters', align: 'right' },
  { header: 'warm median', align: 'right' },
  { header: 'warm p95', align: 'right' },
  { header: 'replay median', align: 'right' },
  { header: 'replay p95', align: 'right' },
  { header: 'replay/warm', align: 'right' },
  { header: 'warm(N)/warm(1)', align: 'right' },
  { header: 'replay(N)/replay(1)', align: 'right' },
  { header: 'replay per earlier call (µs)', align: 'right' },
];

function resumeRows(via: string, results: ReadonlyMap<number, PathSamples>): string[][] {
  const summaries = new Map<number, { warm: Summary; replay: Summary }>();
  for (const [n, samples] of results) summaries.set(n, { warm: summarize(samples.warm), replay: summarize(samples.replay) });
  const first = SCHEDULE[0]!;
  const base = summaries.get(first.earlierCalls)!;
  return SCHEDULE.map(({ earlierCalls: n, warmup, iterations }) => {
    const { warm, replay } = summaries.get(n)!;
    const perCall = n === first.earlierCalls ? '—' : (((replay.medianMs - base.replay.medianMs) / (n - first.earlierCalls)) * 1000).toFixed(1);
    return [
      via,
      String(n),
      `${warmup}+${iterations}`,
      ms(warm.medianMs),
      ms(warm.p95Ms),
      ms(replay.medianMs),
      ms(replay.p95Ms),
      ratio(replay.medianMs / warm.medianMs),
      ratio(warm.medianMs / base.warm.medianMs),
      ratio(replay.medianMs / base.replay.medianMs),
      perCall,
    ];
  });
}

console.log('Table 1: resume cost as the number of earlier calls N grows');
console.log(`  program: \`${LOOP_PROGRAM}\` (one call per batch, so N earlier calls = N earlier batches)`);
console.log('  each timed resume carries N+1 calls with outputs (N answered earlier + the one the program is paused on)');
console.log('  and must come back paused on call N+1 by the expected path, or the bench fails.');
console.log('  runtime: ProgramRuntime.resume in process. warm = isolate paused on call N (set up untimed by a replay);');
console.log('           replay = a fresh program id each iteration (disposed untimed afterwards).');
console.log('  HTTP:    a store:false request resending every item, real SDK (maxRetries 0) to a listening server;');
console.log('           warm = default cache (an untimed request first leaves the program paused on call N);');
console.log('           replay = a server with maxPausedPrograms: 0 (every resume replays; the isolate is disposed inside the request).');
console.log('  iters = warm-up + measured, per path. replay per earlier call = (replay(N) - replay(1)) / (N - 1), medians.\n');
console.log(formatTable(resumeColumns, [...resumeRows('runtime', runtimeResults), ...resumeRows('HTTP', httpResults)]));
const replay1000 = summarize(runtimeResults.get(1000)?.replay ?? []);
console.log(
  `\n  floor: one bare isolated-vm run of W3 (1,000 calls in batches of 50, fresh isolate) ${ms(bareW3.medianMs)} median;` +
    ` the runtime's replay at N=1000 above (1,000 one-call batches) is ${ratio(replay1000.medianMs / bareW3.medianMs)} of it,`,
);
console.log(
  `  and a replay of W3 itself from its ${w3Replay.calls} recorded calls (20 batches, in process) ${ms(replayW3.medianMs)} median, ${ratio(replayW3.medianMs / bareW3.medianMs)} of it`,
);

// ---- Table 2 ---------------------------------------------------------------------------------
const storeColumns: Column[] = [
  { header: 'store', align: 'left' },
  { header: 'request kind', align: 'left' },
  { header: 'iters', align: 'right' },
  { header: 'median', align: 'right' },
  { header: 'p95', align: 'right' },
  { header: 'ratio vs memory', align: 'right' },
  { header: 'added vs memory (ms)', align: 'right' },
];

const memoryMedian = new Map<string, number>();
const storeSummaries = stores.rows.map((row) => ({ row, summary: row.samples ? summarize(row.samples) : undefined }));
for (const { row, summary } of storeSummaries) if (row.store === 'memory' && summary) memoryMedian.set(row.request, summary.medianMs);

const storeRows = storeSummaries.map(({ row, summary }): string[] => {
  if (!summary) return [row.store, row.request, '', '', '', '', row.skipped ?? 'skipped'];
  const baseline = memoryMedian.get(row.request)!;
  return [
    row.store,
    row.request,
    `${STORE_OPTIONS.warmup}+${STORE_OPTIONS.iterations}`,
    ms(summary.medianMs),
    ms(summary.p95Ms),
    row.store === 'memory' ? '(baseline)' : ratio(summary.medianMs / baseline),
    row.store === 'memory' ? '' : (summary.medianMs - baseline >= 0 ? '+' : '') + ms(summary.medianMs - baseline),
  ];
});

console.log("\nTable 2: the store's added latency per store:true request (real SDK to a listening server per store)");
console.log('  servers identical but for the store; measured in round-robin (one request to each server per round);');
console.log(
  `  continuations branch off the tip of a stored chain of 1 or ${LONG_CHAIN} message turns (one store read per response in it) and store a new response.`,
);
console.log(`  each server keeps at most ${PAUSED_PROGRAMS_KEPT} paused programs, so program turns evict (and dispose) an older isolate alike on every store.`);
for (const note of stores.notes) console.log(`  ${note}`);
console.log('');
console.log(formatTable(storeColumns, storeRows));
