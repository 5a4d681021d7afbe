// Entry point of `npm run bench:load`: the seed conversation under load at rising concurrency
// against the server as a real child process with worker processes (throughput, latency, status
// counts, RSS of the server and of each worker over time), then the per-program overhead of the
// worker hop against the in-process runtime, as ratios measured in this same run. It reports; it
// fails (exit 1) only on a wrong answer: a status other than 200 or 429, or a 200 of the wrong shape.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEnvironment } from './environment.ts';
import { Tally, virtualClient, type ClientOptions, type Window } from './load-client.ts';
import { cpuSeconds, getJson, metrics, rssBytes, spawnBenchServer, workerPids, type BenchServer } from './load-server.ts';
import { percentileOf, type MeasureOptions } from './measure.ts';
import { SEED_SCENARIO_PATH } from './seed.ts';
import { formatTable, ms, ratio, type Column } from './table.ts';
import { measureEngineHop, measureHttpHop, printHop } from './worker-hop.ts';
import { positiveNumberFromEnv } from './settings.ts';

// ---- Settings ----------------------------------------------------------------------------------

const STEP_SECONDS = positiveNumberFromEnv('BENCH_LOAD_SECONDS', 10, false);
// Long enough, usually, for the server's first major GC under load: its RSS climbs ~100 MiB over its first 15-30k requests,
// then drops by as much and stays flat; a baseline taken before that drop makes the drift look like shrinkage.
const WARMUP_SECONDS = positiveNumberFromEnv('BENCH_LOAD_WARMUP_SECONDS', 60, false);
const WORKERS = positiveNumberFromEnv('BENCH_LOAD_WORKERS', 2, true);
const MAX_CONCURRENT = positiveNumberFromEnv('BENCH_LOAD_MAX_CONCURRENT_TURNS', 8, true);
const MAX_QUEUED = positiveNumberFromEnv('BENCH_LOAD_MAX_QUEUED_TURNS', 8, true);
const BOUND = MAX_CONCURRENT + MAX_QUEUED;
const HOP: MeasureOptions = {
  warmup: positiveNumberFromEnv('BENCH_HOP_WARMUP', 20, true),
  iterations: positiveNumberFromEnv('BENCH_HOP_ITERATIONS', 200, true),
};
const LOG_LEVEL = process.env['BENCH_LOAD_LOG_LEVEL'] || 'info';
const SAMPLE_MS = 500;

const CLIENT_STEPS: readonly number[] = (() => {
  const raw = process.env['BENCH_LOAD_CLIENTS'] || '1,2,4,8,16,32,64';
  const steps = raw.split(',').map((part) => Number(part.trim()));
  if (!steps.every((n) => Number.isSafeInteger(n) && n > 0)) throw new Error(`BENCH_LOAD_CLIENTS must be positive integers, got "${raw}"`);
  // Always exactly 4× the configured bound (running + queued), whatever the list says.
  return [...new Set([...steps, 4 * BOUND])].sort((a, b) => a - b);
})();
const PEAK = CLIENT_STEPS[CLIENT_STEPS.length - 1]!;

/** The server's settings, given in full: nothing from the bench's own environment leaks in. */
const SERVER_ENV: Record<string, string> = {
  PTC_STORE: 'memory',
  PTC_SCENARIOS: SEED_SCENARIO_PATH,
  PTC_MAX_CONCURRENT_TURNS: String(MAX_CONCURRENT),
  PTC_MAX_QUEUED_TURNS: String(MAX_QUEUED),
  // BENCH_LOAD_CPU_PINNING=off measures the workers left where the kernel puts them.
  PTC_WORKER_CPU_PINNING: process.env['BENCH_LOAD_CPU_PINNING'] || 'on',
  LOG_LEVEL,
};

const CLIENT: Omit<ClientOptions, 'origin'> = { timeoutMs: 30_000, maxAttempts: 60 };

const progress = (message: string): void => {
  process.stderr.write(`running: ${message}\n`);
};
const failures: string[] = [];

// ---- RSS sampling ------------------------------------------------------------------------------

interface Sample {
  /** performance.now() when read. */
  readonly at: number;
  readonly phase: string;
  readonly server: number | undefined;
  /** By worker slot (the order GET /health lists them). */
  readonly workers: readonly (number | undefined)[];
}

/**
 * Reads the RSS of the server and of every worker from /proc every SAMPLE_MS; refreshes the
 * worker pids from GET /health alongside (one probe at a time), noting any change: a worker
 * replaced under load is a death worth reporting.
 */
class RssSampler {
  readonly samples: Sample[] = [];
  readonly pidChanges: string[] = [];
  phase = 'start';
  #pids: number[];
  #timer: NodeJS.Timeout | undefined;
  #probing = false;

  constructor(
    private readonly server: BenchServer,
    pids: number[],
  ) {
    this.#pids = pids;
  }

  get slots(): number {
    return this.#pids.length;
  }

  get pids(): readonly number[] {
    return this.#pids;
  }

  sample(): Sample {
    const sample: Sample = { at: performance.now(), phase: this.phase, server: rssBytes(this.server.pid), workers: this.#pids.map((pid) => rssBytes(pid)) };
    this.samples.push(sample);
    return sample;
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.sample();
      if (this.#probing) return;
      this.#probing = true;
      workerPids(this.server.origin)
        .then((pids) => {
          if (pids.join(',') !== this.#pids.join(',')) {
            this.pidChanges.push(`${this.phase}: workers ${this.#pids.join(',')} -> ${pids.join(',')}`);
            this.#pids = pids;
          }
        })
        .catch((error: unknown) => this.pidChanges.push(`${this.phase}: GET /health failed: ${(error as Error).message}`))
        .finally(() => {
          this.#probing = false;
        });
    }, SAMPLE_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

// ---- The load run ------------------------------------------------------------------------------

interface StepResult {
  readonly clients: number;
  readonly seconds: number;
  readonly tally: Tally;
  /** The samples of the measured window: first (at its start) to last (at its end). */
  readonly window: readonly Sample[];
  /** CPU used in the window, in percent of one core: the server, each worker, this load client. */
  readonly cpu: { readonly server: number; readonly workers: readonly number[]; readonly client: number };
}

/** CPU counters of the server, its workers and this process, in seconds. */
function cpuNow(server: BenchServer, pids: readonly number[]): { server: number; workers: number[]; client: number } {
  const own = process.cpuUsage();
  return { server: cpuSeconds(server.pid) ?? Number.NaN, workers: pids.map((pid) => cpuSeconds(pid) ?? Number.NaN), client: (own.user + own.system) / 1e6 };
}

async function runWindow(server: BenchServer, sampler: RssSampler, clients: number, seconds: number, phase: string): Promise<StepResult> {
  sampler.phase = phase;
  const startAt = performance.now();
  const window: Window = { startAt, endAt: startAt + seconds * 1000 };
  const first = sampler.sample();
  const pids = [...sampler.pids];
  const cpuBefore = cpuNow(server, pids);
  const options: ClientOptions = { origin: server.origin, ...CLIENT };
  const running = Array.from({ length: clients }, () => virtualClient(options, window));
  await sleep(Math.max(0, window.endAt - performance.now()));
  const last = sampler.sample();
  const cpuAfter = cpuNow(server, pids);
  const share = (before: number, after: number): number => (100 * (after - before)) / ((last.at - first.at) / 1000);
  const cpu = {
    server: share(cpuBefore.server, cpuAfter.server),
    workers: pids.map((_, index) => share(cpuBefore.workers[index]!, cpuAfter.workers[index]!)),
    client: share(cpuBefore.client, cpuAfter.client),
  };
  const tallies = await Promise.all(running);
  const tally = new Tally();
  for (const one of tallies) tally.merge(one);
  const samples = sampler.samples.filter((sample) => sample.at >= first.at && sample.at <= last.at);
  return { clients, seconds, tally, window: samples, cpu };
}

interface LoadRun {
  readonly warmup: StepResult;
  readonly steps: StepResult[];
  readonly sampler: RssSampler;
  readonly afterWarmup: Sample;
  readonly endOfRun: Sample;
  readonly notes: string[];
}

async function runLoad(): Promise<LoadRun> {
  progress(`load: starting the server (PTC_WORKERS=${WORKERS}, bound ${MAX_CONCURRENT} running + ${MAX_QUEUED} queued)`);
  const server = await spawnBenchServer({ ...SERVER_ENV, PTC_WORKERS: String(WORKERS) });
  const notes: string[] = [];
  try {
    const pids = await workerPids(server.origin);
    if (pids.length !== WORKERS) throw new Error(`GET /health lists ${pids.length} workers, expected ${WORKERS}`);
    notes.push(`server pid ${server.pid}, worker pids ${pids.join(', ')} (from GET /health)`);
    const sampler = new RssSampler(server, pids);
    sampler.sample();
    sampler.start();
    progress(`load: warm-up, ${PEAK} clients for ${WARMUP_SECONDS} s`);
    const warmup = await runWindow(server, sampler, PEAK, WARMUP_SECONDS, 'warm-up');
    const afterWarmup = warmup.window[warmup.window.length - 1]!;
    const steps: StepResult[] = [];
    for (const clients of CLIENT_STEPS) {
      progress(`load: ${clients} clients for ${STEP_SECONDS} s`);
      steps.push(await runWindow(server, sampler, clients, STEP_SECONDS, `${clients} clients`));
    }
    const lastStep = steps[steps.length - 1]!;
    const endOfRun = lastStep.window[lastStep.window.length - 1]!;
    sampler.phase = 'idle';
    await sleep(1_200);
    sampler.stop();

    const health = await getJson(server.origin, '/health');
    const values = await metrics(server.origin);
    const get = (name: string): string => String(values.get(name) ?? '?');
    const deaths = [...values].filter(([name]) => name.startsWith('ptc_worker_deaths_total')).reduce((sum, [, value]) => sum + value, 0);
    notes.push(
      `after the run: GET /health ${health.text}; programs started ${get('ptc_programs_started_total')}, ` +
        `resumes warm ${get('ptc_program_resumes_total{path="warm"}')} / replay ${get('ptc_program_resumes_total{path="replay"}')}, ` +
        `paused evictions ttl/count/memory ${get('ptc_paused_program_evictions_total{reason="ttl"}')}/${get('ptc_paused_program_evictions_total{reason="count"}')}/${get('ptc_paused_program_evictions_total{reason="memory"}')}, ` +
        `worker deaths ${deaths}`,
    );
    if (deaths > 0) failures.push(`${deaths} worker death(s) under load`);
    for (const change of sampler.pidChanges) notes.push(`worker pids changed: ${change}`);
    const logs = server.logCounts();
    notes.push(`server log lines at warn or above: ${logs.warn} (error or above: ${logs.error})`);
    for (const line of server.warnings()) notes.push(`  ${line}`);
    return { warmup, steps, sampler, afterWarmup, endOfRun, notes };
  } finally {
    await server.stop();
  }
}

// ---- Formatting --------------------------------------------------------------------------------

const MIB = 1024 * 1024;
const mib = (bytes: number | undefined): string => (bytes === undefined ? '-' : (bytes / MIB).toFixed(1));
const percent = (part: number, whole: number): string => (whole === 0 ? '-' : `${((100 * part) / whole).toFixed(2)}%`);

const totalRss = (sample: Sample): number | undefined =>
  sample.server === undefined || sample.workers.some((rss) => rss === undefined)
    ? undefined
    : sample.workers.reduce((sum: number, rss) => sum + rss!, sample.server);

function startMaxEnd(samples: readonly Sample[], read: (sample: Sample) => number | undefined): string {
  const values = samples.map(read).filter((value): value is number => value !== undefined);
  if (values.length === 0) return '-';
  return `${mib(values[0])} / ${mib(Math.max(...values))} / ${mib(values[values.length - 1])}`;
}

function perClient(counts: readonly number[]): string {
  const sorted = [...counts].sort((a, b) => a - b);
  return `${sorted[0] ?? '-'} / ${percentileOf(sorted, 0.5)} / ${sorted[sorted.length - 1] ?? '-'}`;
}

function statusLine(step: StepResult): string[] {
  const { tally, seconds } = step;
  const responses = tally.ok + tally.busy + tally.otherTotal;
  return [
    String(step.clients),
    `${(step.clients / BOUND).toFixed(2)}x`,
    (tally.ok / seconds).toFixed(1),
    (tally.conversations / seconds).toFixed(1),
    ms(percentileOf(tally.okMs, 0.5)),
    ms(percentileOf(tally.okMs, 0.99)),
    ms(percentileOf(tally.conversationMs, 0.5)),
    ms(percentileOf(tally.conversationMs, 0.99)),
    String(tally.ok),
    String(tally.busy),
    String(tally.otherTotal),
    percent(tally.otherTotal, responses),
    percent(tally.busy, responses),
    perClient(tally.perClientConversations),
    String(tally.maxBusyStreak),
    String(tally.beyondSdkRetries),
  ];
}

function printLoad(run: LoadRun): void {
  const loadColumns: Column[] = [
    { header: 'clients', align: 'right' },
    { header: 'x bound', align: 'right' },
    { header: 'req/s (200)', align: 'right' },
    { header: 'conv/s', align: 'right' },
    { header: 'p50 ms', align: 'right' },
    { header: 'p99 ms', align: 'right' },
    { header: 'conv p50 ms', align: 'right' },
    { header: 'conv p99 ms', align: 'right' },
    { header: '200', align: 'right' },
    { header: '429', align: 'right' },
    { header: 'other', align: 'right' },
    { header: 'error rate', align: 'right' },
    { header: '429 share', align: 'right' },
    { header: 'conv/client min/med/max', align: 'right' },
    { header: 'max 429s in a row', align: 'right' },
    { header: '>= 3 429s in a row', align: 'right' },
  ];
  console.log(
    `Table 1: the seed conversation under load (server as a child process, PTC_WORKERS=${WORKERS}, bound ${MAX_CONCURRENT} running + ${MAX_QUEUED} queued = ${BOUND})`,
  );
  console.log('  each virtual client runs seed conversations back to back on its own keep-alive connection (node:http, no SDK):');
  console.log('  request 1 (user message) must return program + 2 function_calls; request 2 resends every item + 2 function_call_outputs');
  console.log('  (caller copied) and must return program_output (completed, the seed result) + message. A 429 waits retry-after-ms and');
  console.log('  resends the same request. Only exchanges that ended inside the window count; conversations count if they began there too.');
  console.log(`  warm-up: ${WARMUP_SECONDS} s at ${PEAK} clients (not in the table); then each step ${STEP_SECONDS} s.`);
  console.log('  req/s = 200s per second; p50/p99 = latency of each 200 exchange; conv = a whole conversation, including 429 waits;');
  console.log('  other = any status but 200/429, transport errors, and 200s of the wrong shape; error rate = other / all responses.');
  console.log('  conv/client = conversations each virtual client completed in the window; max 429s in a row = on one request, before it');
  console.log('  got through or the client stopped (each one cost a retry-after-ms wait); >= 3 429s in a row = requests that the SDK');
  console.log('  with its default maxRetries: 2 would have failed with a 429 (RateLimitError) instead of getting through.');
  console.log('  conv p50/p99 cover only conversations completed in the window: a client starved all window long adds none.\n');
  console.log(formatTable(loadColumns, run.steps.map(statusLine)));
  const warm = run.warmup.tally;
  console.log(`  warm-up: ${warm.ok} x 200, ${warm.busy} x 429, ${warm.otherTotal} other`);
  for (const step of [run.warmup, ...run.steps]) {
    for (const [key, count] of step.tally.other) console.log(`  ${step.window[0]?.phase}: ${count} x ${key}`);
    for (const example of step.tally.examples) console.log(`    e.g. ${example}`);
  }

  const slots = run.sampler.slots;
  const rssColumns: Column[] = [
    { header: 'phase', align: 'left' },
    { header: 'server MiB start / max / end', align: 'right' },
    ...Array.from({ length: slots }, (_, index): Column => ({ header: `worker ${index + 1} MiB start / max / end`, align: 'right' })),
    { header: 'total MiB start / max / end', align: 'right' },
    { header: `CPU % server / ${Array.from({ length: slots }, (_, index) => `w${index + 1}`).join(' / ')} / client`, align: 'right' },
  ];
  const rssRows = [run.warmup, ...run.steps].map((step) => [
    step.window[0]?.phase ?? '',
    startMaxEnd(step.window, (sample) => sample.server),
    ...Array.from({ length: slots }, (_, index) => startMaxEnd(step.window, (sample) => sample.workers[index])),
    startMaxEnd(step.window, totalRss),
    [step.cpu.server, ...step.cpu.workers, step.cpu.client].map((value) => value.toFixed(0)).join(' / '),
  ]);
  console.log(
    `\nTable 2: resident memory (VmRSS from /proc/<pid>/status) per step, sampled every ${SAMPLE_MS} ms; start and end are read at the window's edges;`,
  );
  console.log('  CPU = user + system time used in the window (/proc/<pid>/stat; the client: process.cpuUsage()), in % of one core (2 cores = 200%)');
  console.log(formatTable(rssColumns, rssRows));

  // ---- RSS over time --------------------------------------------------------------------------
  console.log(`\nRSS over time (MiB, one value per ${SAMPLE_MS} ms sample, one line per phase; a phase runs on while its clients finish)`);
  const phases = [...new Set(run.sampler.samples.map((sample) => sample.phase))];
  const width = Math.max(...phases.map((phase) => phase.length));
  const series: [string, (sample: Sample) => number | undefined][] = [
    ['server', (sample) => sample.server],
    ...Array.from({ length: slots }, (_, index): [string, (sample: Sample) => number | undefined] => [
      `worker ${index + 1}`,
      (sample) => sample.workers[index],
    ]),
    ['total', totalRss],
  ];
  for (const [name, read] of series) {
    console.log(`  ${name}:`);
    for (const phase of phases) {
      const values = run.sampler.samples
        .filter((sample) => sample.phase === phase)
        .map((sample) => {
          const value = read(sample);
          return value === undefined ? '-' : String(Math.round(value / MIB));
        });
      console.log(`    ${phase.padEnd(width)}  ${values.join(' ')}`);
    }
  }
  const driftColumns: Column[] = [
    { header: 'process', align: 'left' },
    { header: 'after warm-up MiB', align: 'right' },
    { header: 'max after warm-up MiB', align: 'right' },
    { header: 'end of run MiB', align: 'right' },
    { header: 'drift (end / after warm-up)', align: 'right' },
    { header: 'max / after warm-up', align: 'right' },
  ];
  const afterWarmupAt = run.afterWarmup.at;
  const measured = run.sampler.samples.filter((sample) => sample.at >= afterWarmupAt && sample.at <= run.endOfRun.at);
  const driftRows = series.map(([name, read]) => {
    const base = read(run.afterWarmup);
    const end = read(run.endOfRun);
    const max = Math.max(...measured.map(read).filter((value): value is number => value !== undefined));
    return [name, mib(base), mib(max), mib(end), base && end ? ratio(end / base) : '-', base ? ratio(max / base) : '-'];
  });
  console.log(`\n  drift: the sample at the end of the warm-up (${PEAK} clients) vs the sample at the end of the last step (${PEAK} clients)`);
  console.log(formatTable(driftColumns, driftRows).replace(/^/gm, '  '));
  for (const note of run.notes) console.log(`  ${note}`);
}

// ---- Main --------------------------------------------------------------------------------------

for (const line of describeEnvironment()) console.log(line);
console.log(
  `Server: node --no-node-snapshot --import tsx cli/main.ts serve as a child process; PTC_STORE=memory, PTC_SCENARIOS=test/fixtures/seed-scenario.yaml, ` +
    `PTC_WORKERS=${WORKERS}, PTC_MAX_CONCURRENT_TURNS=${MAX_CONCURRENT}, PTC_MAX_QUEUED_TURNS=${MAX_QUEUED}, LOG_LEVEL=${LOG_LEVEL}`,
);
console.log(
  `Load: clients ${CLIENT_STEPS.join(', ')} (4x the bound = ${4 * BOUND}), ${STEP_SECONDS} s per step after a ${WARMUP_SECONDS} s warm-up; ` +
    `the load client runs in this process, on the same cores as the server and its workers\n`,
);

const started = performance.now();
const load = await runLoad();
printLoad(load);
const http = await measureHttpHop(SERVER_ENV, HOP, progress);
const engine = await measureEngineHop(HOP, progress);
printHop(http, engine, HOP.warmup);

for (const step of [load.warmup, ...load.steps]) {
  if (step.tally.otherTotal > 0) failures.push(`${step.window[0]?.phase}: ${step.tally.otherTotal} response(s) neither a correct 200 nor a 429`);
  if (step.tally.ok === 0) failures.push(`${step.window[0]?.phase}: no 200 at all`);
}
console.log(`\nTotal time ${((performance.now() - started) / 1000).toFixed(1)} s`);
if (failures.length > 0) {
  console.log(`BENCH FAILED:\n${failures.map((failure) => `  - ${failure}`).join('\n')}`);
  process.exitCode = 1;
}
