import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProgramSpec } from '../runtime/isolate-program.ts';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import type { ProgramEvent, RecordedCall } from '../runtime/program-events.ts';
import { ProgramRuntime, type ProgramRuntimeStats, type ResumePath } from '../runtime/program-runtime.ts';
import { WorkerPool } from '../runtime/worker/worker-pool.ts';
import { ChannelFloor, recordingSteps, type ScriptedStep, type StepEngine } from './channel-floor.ts';
import { sequentialConversation } from './load-client.ts';
import { metrics, spawnBenchServer } from './load-server.ts';
import { summarize, type MeasureOptions } from './measure.ts';
import { formatTable, ms, ratio, type Column } from './table.ts';
import { DEFAULT_CACHE } from './resume-program.ts';
import { SEED_EXPECTED_RESULT, SEED_IMPLEMENTATIONS, SEED_PROGRAM } from './seed.ts';

const CHANNEL_LABEL = 'the bare channel (no worker)';

/** Worker counters reach the server with each heartbeat (500 ms by default): wait past two before reading them. */
const HEARTBEAT_SETTLE_MS = 1_200;

/** Per target: one sample list per phase, in milliseconds. */
export interface HopSamples {
  readonly label: string;
  /** Phase name → samples, in the order the phases are timed. */
  readonly phases: ReadonlyMap<string, number[]>;
  /** Anything the target reported about itself after the run (resume paths, log lines). */
  readonly notes: readonly string[];
  /** A part of a worker's path (the bare channel), not another way to run programs: compared with nothing. */
  readonly part?: boolean;
}

interface HopTarget {
  /** One iteration: resolves to the milliseconds of each phase, in a fixed order. */
  run(): Promise<Record<string, number>>;
}

/**
 * Times the targets in rounds, one iteration of each per round, starting each round from a
 * different target (as staged-measure.ts's measureRoundRobin), so drift lands on both alike.
 * Each iteration reports several phases, which is why this is not measureRoundRobin itself.
 */
async function roundRobin(targets: readonly HopTarget[], options: MeasureOptions): Promise<Map<string, number[]>[]> {
  const samples = targets.map(() => new Map<string, number[]>());
  for (let round = 0; round < options.warmup + options.iterations; round++) {
    for (let offset = 0; offset < targets.length; offset++) {
      const index = (round + offset) % targets.length;
      const phases = await targets[index]!.run();
      if (round < options.warmup) continue;
      const into = samples[index]!;
      for (const [phase, ms] of Object.entries(phases)) {
        const list = into.get(phase) ?? [];
        list.push(ms);
        into.set(phase, list);
      }
    }
  }
  return samples;
}

/**
 * The seed conversation over HTTP, one at a time, against two servers identical but for
 * PTC_WORKERS: 0 (isolates in the server process) and 1 (one worker process: every start and
 * resume crosses the IPC channel). Both run as real child processes, measured in rounds.
 */
export async function measureHttpHop(env: Record<string, string>, options: MeasureOptions, progress: (message: string) => void): Promise<HopSamples[]> {
  progress('worker hop over HTTP: starting a PTC_WORKERS=0 and a PTC_WORKERS=1 server');
  const servers = await Promise.all([spawnBenchServer({ ...env, PTC_WORKERS: '0' }), spawnBenchServer({ ...env, PTC_WORKERS: '1' })]);
  const agents = servers.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    const targets = servers.map((server, index) => ({
      run: async () => {
        const started = performance.now();
        const { firstMs, secondMs } = await sequentialConversation(agents[index]!, server.origin);
        return { conversation: performance.now() - started, 'request 1 (start)': firstMs, 'request 2 (resume)': secondMs };
      },
    }));
    progress(`worker hop over HTTP: ${options.warmup} + ${options.iterations} conversations per server, in rounds`);
    const samples = await roundRobin(targets, options);
    const labels = ['HTTP, PTC_WORKERS=0 (in-process)', 'HTTP, PTC_WORKERS=1 (worker hop)'];
    await sleep(HEARTBEAT_SETTLE_MS);
    return await Promise.all(
      servers.map(async (server, index) => {
        const values = await metrics(server.origin);
        const logs = server.logCounts();
        const resumes = `resumes warm ${values.get('ptc_program_resumes_total{path="warm"}') ?? '?'}, replay ${values.get('ptc_program_resumes_total{path="replay"}') ?? '?'}`;
        return { label: labels[index]!, phases: samples[index]!, notes: [`${resumes}; warn/error log lines ${logs.warn}/${logs.error}`] };
      }),
    );
  } finally {
    for (const agent of agents) agent.destroy();
    await Promise.all(servers.map((server) => server.stop()));
  }
}

/** The seed program as the server would start it: both tools declare output_schema. */
export const SEED_SPEC: ProgramSpec = {
  code: SEED_PROGRAM,
  tools: Object.keys(SEED_IMPLEMENTATIONS).map((name) => ({ name, parseOutputAsJson: true })),
  seed: 1,
  clock: 0,
  limits: DEFAULT_LIMITS,
};

/** Fails unless the program paused on the seed's Promise.all batch; returns the calls with the client's outputs. */
function recordedFrom(label: string, event: ProgramEvent): RecordedCall[] {
  const calls = event.type === 'paused' ? event.calls : [];
  if (
    calls.length !== 2 ||
    calls[0]?.tool !== 'get_inventory' ||
    calls[1]?.tool !== 'get_demand' ||
    !calls.every((call) => call.argumentsJson === '{"sku":"sku_123"}')
  ) {
    throw new Error(`${label}: expected the seed program paused on get_inventory + get_demand, got ${JSON.stringify(event)}`);
  }
  return calls.map((call) => ({
    tool: call.tool,
    argumentsJson: call.argumentsJson,
    output: JSON.stringify(SEED_IMPLEMENTATIONS[call.tool]!(JSON.parse(call.argumentsJson) as { sku: string })),
  }));
}

/** A program run to its end with every call answered `1`, in pauses of `batch` calls, each resumed warm; its result is its number of calls. */
interface WarmWorkload {
  readonly name: string;
  readonly spec: ProgramSpec;
  readonly batch: number;
  readonly calls: number;
}

/** The peer bench's W3: 1,000 calls in 20 batches of 50. */
const LONG_RECORD: WarmWorkload = {
  name: 'the long record',
  spec: {
    code: 'let n = 0; for (let b = 0; b < 20; b++) { const r = await Promise.all(Array.from({ length: 50 }, (_, i) => tools.get({ b, i }))); n += r.length; } text(String(n))',
    tools: [{ name: 'get', input: 'json', parseOutputAsJson: false }],
    seed: 1,
    clock: 0,
    limits: DEFAULT_LIMITS,
  },
  batch: 50,
  calls: 1_000,
};

/** The peer bench's W2: 50 sequential awaited calls. */
const SEQUENTIAL_CALLS: WarmWorkload = {
  name: 'the sequential calls',
  spec: {
    code: 'let n = 0; for (let i = 0; i < 50; i++) n += await tools.get({ i }); text(String(n))',
    tools: [{ name: 'get', input: 'json', parseOutputAsJson: true }],
    seed: 1,
    clock: 0,
    limits: DEFAULT_LIMITS,
  },
  batch: 1,
  calls: 50,
};

/** Runs `workload` to its end on `engine`, checking every pause, resume and the result; the milliseconds it took. */
async function runWarm(label: string, engine: StepEngine, programId: string, workload: WarmWorkload): Promise<number> {
  const { name, spec, batch, calls } = workload;
  const started = performance.now();
  let event = await engine.start(programId, spec);
  const recorded: RecordedCall[] = [];
  while (event.type === 'paused') {
    if (event.calls.length !== batch) throw new Error(`${label}: expected ${name} to pause on ${batch} calls at a time, got ${event.calls.length}`);
    for (const call of event.calls) recorded.push({ tool: call.tool, argumentsJson: call.argumentsJson, output: '1' });
    const resumed = await engine.resume(programId, spec, recorded);
    if (resumed.path !== 'warm') throw new Error(`${label}: expected every resume of ${name} warm, got ${resumed.path}`);
    event = resumed.event;
  }
  if (event.type !== 'completed' || event.result !== String(calls) || recorded.length !== calls)
    throw new Error(`${label}: expected ${name} to complete with ${calls} after ${calls} calls, got ${JSON.stringify(event)}`);
  return performance.now() - started;
}

function checkCompleted(label: string, result: { event: ProgramEvent; path: ResumePath }): void {
  if (result.path !== 'warm') throw new Error(`${label}: expected a warm resume, got ${result.path}`);
  if (result.event.type !== 'completed' || result.event.result !== SEED_EXPECTED_RESULT) {
    throw new Error(`${label}: expected completed with ${SEED_EXPECTED_RESULT}, got ${JSON.stringify(result.event)}`);
  }
}

/** One iteration of the engine hop on `engine`: the milliseconds of each phase; every result is checked. */
export async function engineIteration(label: string, engine: StepEngine, programId: string): Promise<Record<string, number>> {
  const started = performance.now();
  const paused = await engine.start(programId, SEED_SPEC);
  const pausedAt = performance.now();
  const recorded = recordedFrom(label, paused);
  const resumedAt = performance.now();
  const finished = await engine.resume(programId, SEED_SPEC, recorded);
  const ended = performance.now();
  checkCompleted(label, finished);
  const long = await runWarm(label, engine, `${programId}-long`, LONG_RECORD);
  const sequential = await runWarm(label, engine, `${programId}-sequential`, SEQUENTIAL_CALLS);
  return {
    'start + resume': pausedAt - started + (ended - resumedAt),
    start: pausedAt - started,
    resume: ended - resumedAt,
    '1,000 calls, 20 warm resumes': long,
    '50 sequential calls, 50 warm resumes': sequential,
  };
}

/**
 * No HTTP: the seed program's start and warm resume, the peer bench's W3 and W2, on a
 * ProgramRuntime in this process, on a WorkerPool of one worker process (the same runtime behind
 * a typed IPC channel), and on the bare channel (ChannelFloor: the pool's messages, answered with
 * the replies a runtime gave, by a process that runs nothing). In process plus the bare channel
 * estimates the least a step in another process takes on this machine: one round trip per step
 * on top of this runtime's step.
 */
export async function measureEngineHop(options: MeasureOptions, progress: (message: string) => void): Promise<HopSamples[]> {
  progress('worker hop without HTTP: ProgramRuntime vs WorkerPool(size 1) vs the bare channel');
  const runtime = new ProgramRuntime(DEFAULT_CACHE);
  const pool = new WorkerPool({
    size: 1,
    runtime: DEFAULT_CACHE,
    heartbeatMs: 500,
    heartbeatTimeoutMs: 5_000,
    maxRssBytes: 1536 * 1024 * 1024,
    maxIdleCpuShare: 0.5,
  });
  let channel: ChannelFloor | undefined;
  try {
    channel = await ChannelFloor.open(await scriptOfOneIteration());
    await pool.ready();
    const targets: readonly { readonly label: string; readonly engine: StepEngine; readonly stats?: () => ProgramRuntimeStats }[] = [
      { label: 'ProgramRuntime (in-process)', engine: runtime, stats: () => runtime.stats() },
      { label: 'WorkerPool, 1 worker (IPC hop)', engine: pool, stats: () => pool.stats() },
      { label: CHANNEL_LABEL, engine: channel },
    ];
    let next = 0;
    const samples = await roundRobin(
      targets.map(({ label, engine }) => ({ run: () => engineIteration(label, engine, `hop-${next++}`) })),
      options,
    );
    await sleep(HEARTBEAT_SETTLE_MS);
    return targets.map(({ label, stats }, index) =>
      stats
        ? { label, phases: samples[index]!, notes: [statsNote(stats())] }
        : { label, phases: samples[index]!, notes: ['runs no program: the channel, both processes woken for each message, the copies'], part: true },
    );
  } finally {
    channel?.close();
    await runtime.close();
    await pool.close();
  }
}

/**
 * The bare channel's script: one iteration's steps on a runtime of its own (so that the measured
 * runtime's counters are its own iterations'), each result checked as on every target.
 */
async function scriptOfOneIteration(): Promise<ScriptedStep[]> {
  const runtime = new ProgramRuntime(DEFAULT_CACHE);
  try {
    const recording = recordingSteps(runtime);
    await engineIteration(CHANNEL_LABEL, recording.engine, 'hop-script');
    return recording.steps;
  } finally {
    await runtime.close();
  }
}

/** A runtime's or pool's counters after the run: its resume paths and, for a pool, its workers' deaths. */
function statsNote(stats: ProgramRuntimeStats & { readonly workers?: { readonly deaths: Readonly<Record<string, number>> } }): string {
  const deaths = stats.workers ? `; worker deaths ${Object.values(stats.workers.deaths).reduce((sum, count) => sum + count, 0)}` : '';
  return `started ${stats.started}, resumes warm ${stats.resumes.warm}, replay ${stats.resumes.replay}, paused left ${stats.paused}${deaths}`;
}

/**
 * Prints Table 3: each target's phases against the in-process baseline of its group (`http`, then
 * `engine`), and under the engine's the floor (in-process plus the bare channel). `warmup`: the
 * iterations each target ran unmeasured first.
 */
export function printHop(http: readonly HopSamples[], engine: readonly HopSamples[], warmup: number): void {
  const columns: Column[] = [
    { header: 'target', align: 'left' },
    { header: 'phase', align: 'left' },
    { header: 'iters', align: 'right' },
    { header: 'median ms', align: 'right' },
    { header: 'p95 ms', align: 'right' },
    { header: 'ratio median', align: 'right' },
    { header: 'ratio p95', align: 'right' },
    { header: 'added median ms', align: 'right' },
  ];
  /** Each target's phases against the first target's (the in-process baseline). */
  const rows = (targets: readonly HopSamples[]): string[][] => {
    const base = targets[0]!;
    const out: string[][] = [];
    for (const target of targets) {
      for (const [phase, samples] of target.phases) {
        const summary = summarize(samples);
        const baseline = summarize(base.phases.get(phase)!);
        const isBase = target === base;
        // A part of a worker's path (the bare channel) is no other way to run the program: it is compared with nothing.
        const compared = !isBase && !target.part;
        out.push([
          target.label,
          phase,
          `${warmup}+${summary.iterations}`,
          ms(summary.medianMs),
          ms(summary.p95Ms),
          isBase ? '(baseline)' : compared ? ratio(summary.medianMs / baseline.medianMs) : '',
          compared ? ratio(summary.p95Ms / baseline.p95Ms) : '',
          compared ? `${summary.medianMs - baseline.medianMs >= 0 ? '+' : ''}${ms(summary.medianMs - baseline.medianMs)}` : '',
        ]);
      }
    }
    return out;
  };
  /** In process plus the bare channel, phase by phase (medians added): this runtime's steps with one round trip each. */
  const floorRows = (targets: readonly HopSamples[]): string[][] => {
    const base = targets[0];
    const channel = targets.find((target) => target.part);
    if (!base || !channel) return [];
    return [...base.phases.keys()].map((phase) => {
      const baseline = summarize(base.phases.get(phase)!).medianMs;
      const floor = baseline + summarize(channel.phases.get(phase)!).medianMs;
      return ['in-process + the bare channel (floor)', phase, '', ms(floor), '', ratio(floor / baseline), '', `+${ms(floor - baseline)}`];
    });
  };
  console.log('\nTable 3: the worker hop, per program (sequential: one conversation or program at a time; ratios = target / in-process, this run)');
  if (http.length > 0) {
    console.log('  HTTP: two servers as child processes, identical but for PTC_WORKERS (0: isolates in the server; 1: one worker process),');
    console.log('        one keep-alive client, measured in rounds (one conversation on each server per round, starting side alternating).');
  }
  console.log("  no HTTP: the seed program started and resumed (warm), then the peer bench's W3 and W2, on a ProgramRuntime in this process,");
  console.log("           on a WorkerPool of 1 worker, and on the bare channel (a process forked like a worker, sent the pool's messages, that");
  console.log('           answers each with the reply a runtime gave and runs nothing). "start + resume" excludes the client\'s tool work between');
  console.log("           the two. The floor adds the bare channel to in process: this runtime's steps with one round trip each, no checks.");
  console.log('           Every result is checked.\n');
  console.log(formatTable(columns, [...rows(http), ...rows(engine), ...floorRows(engine)]));
  for (const target of [...http, ...engine]) for (const note of target.notes) console.log(`  ${target.label}: ${note}`);
}
