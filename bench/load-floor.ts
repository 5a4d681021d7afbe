// Entry point of `npm run bench:floor`: the seed conversation at BENCH_FLOOR_CLIENTS clients against
// the emulator and against bench/floor-server.ts (the same engine and workers under a server that
// does nothing of its own but answer), each a child process started afresh, alternately over
// BENCH_FLOOR_ROUNDS rounds (the order swapped each round, so that the machine's drift lands on
// both). Per run: conversations a second, latency, and the CPU a conversation took in the server,
// in its workers and in this load client, from /proc. What the floor reaches, no change to the
// server's own code can pass; the difference is what that code costs. It reports; it fails only on
// a wrong answer (any status but 200 or 429, a transport error, a 200 of the wrong shape) or an
// error line in a server's log.
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEnvironment } from './environment.ts';
import { runClients, type Tally } from './load-client.ts';
import { cpuSecondsOf, spawnBenchServer, workerPids } from './load-server.ts';
import { percentileOf } from './measure.ts';
import { SEED_SCENARIO_PATH } from './seed.ts';
import { positiveNumberFromEnv } from './settings.ts';
import { formatTable } from './table.ts';

const CLIENTS = positiveNumberFromEnv('BENCH_FLOOR_CLIENTS', 8, true);
const SECONDS = positiveNumberFromEnv('BENCH_FLOOR_SECONDS', 15);
const WARMUP_SECONDS = positiveNumberFromEnv('BENCH_FLOOR_WARMUP_SECONDS', 8);
const ROUNDS = positiveNumberFromEnv('BENCH_FLOOR_ROUNDS', 2, true);
const WORKERS = positiveNumberFromEnv('BENCH_FLOOR_WORKERS', 2, true);

/** As bench:load runs the server: both targets read the same settings. */
const SERVER_ENV: Record<string, string> = {
  PTC_STORE: 'memory',
  PTC_SCENARIOS: SEED_SCENARIO_PATH,
  PTC_WORKERS: String(WORKERS),
  PTC_MAX_CONCURRENT_TURNS: '8',
  PTC_MAX_QUEUED_TURNS: '8',
  PTC_WORKER_CPU_PINNING: process.env['BENCH_FLOOR_CPU_PINNING'] || 'on',
  LOG_LEVEL: process.env['BENCH_FLOOR_LOG_LEVEL'] || 'info',
};

const TARGETS = [
  { name: 'server', script: ['cli/main.ts', 'serve'] },
  { name: 'bare server', script: ['bench/floor-server.ts'] },
] as const;

interface Run {
  readonly round: number;
  readonly target: string;
  readonly tally: Tally;
  /** CPU seconds used in the window: the server process, its workers together, this load client. */
  readonly cpu: { readonly server: number; readonly workers: number; readonly client: number };
}

const progress = (message: string): void => {
  process.stderr.write(`running: ${message}\n`);
};

async function measure(round: number, target: (typeof TARGETS)[number]): Promise<Run> {
  progress(`round ${round}: ${target.name}, warm-up ${WARMUP_SECONDS} s, then ${SECONDS} s at ${CLIENTS} clients`);
  const server = await spawnBenchServer(SERVER_ENV, target.script);
  try {
    const pids = await workerPids(server.origin);
    if (pids.length !== WORKERS) throw new Error(`${target.name}: GET /health lists ${pids.length} workers, expected ${WORKERS}`);
    await runClients(server.origin, CLIENTS, WARMUP_SECONDS);
    const before = { ...cpuSecondsOf(server.pid, pids), client: process.cpuUsage() };
    const tally = await runClients(server.origin, CLIENTS, SECONDS);
    const after = { ...cpuSecondsOf(server.pid, pids), client: process.cpuUsage(before.client) };
    // Let the server's lines of the window reach its log before they are counted.
    await sleep(300);
    const logs = server.logCounts();
    if (logs.error > 0) throw new Error(`${target.name}: ${logs.error} error line(s) in the server's log: ${server.warnings().join('\n')}`);
    return {
      round,
      target: target.name,
      tally,
      cpu: { server: after.server - before.server, workers: after.workers - before.workers, client: (after.client.user + after.client.system) / 1e6 },
    };
  } finally {
    await server.stop();
  }
}

const perConversation = (seconds: number, run: Run): string => ((1000 * seconds) / run.tally.conversations).toFixed(2);

function row(run: Run): string[] {
  const { tally, cpu } = run;
  return [
    String(run.round),
    run.target,
    (tally.conversations / SECONDS).toFixed(1),
    percentileOf(tally.okMs, 0.99).toFixed(2),
    percentileOf(tally.conversationMs, 0.99).toFixed(2),
    perConversation(cpu.server, run),
    perConversation(cpu.workers, run),
    perConversation(cpu.client, run),
    perConversation(cpu.server + cpu.workers + cpu.client, run),
    String(tally.busy),
    String(tally.otherTotal),
  ];
}

async function main(): Promise<void> {
  for (const line of describeEnvironment()) console.log(line);
  const runs: Run[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 === 1 ? TARGETS : [...TARGETS].reverse();
    for (const target of order) runs.push(await measure(round, target));
  }
  console.log(
    `\nThe seed conversation at ${CLIENTS} clients, ${SECONDS} s a run after ${WARMUP_SECONDS} s of warm-up, each target started afresh for each run;`,
  );
  console.log(`  both with PTC_WORKERS=${WORKERS} and the same settings. server = the CLI's; bare server = bench/floor-server.ts, the same`);
  console.log('  engine under a server that only answers (no validation, seals, store, journal, usage, logs or turn gate).');
  console.log('  CPU ms a conversation, from /proc: the server process (all its threads), its workers (all theirs), this load client.');
  console.log('  429 = answered busy (the turn gate) and sent again; other = any status but 200 and 429, transport errors, 200s of the wrong shape.\n');
  console.log(
    formatTable(
      [
        { header: 'round', align: 'right' },
        { header: 'target', align: 'left' },
        { header: 'conv/s', align: 'right' },
        { header: 'request p99 ms', align: 'right' },
        { header: 'conv p99 ms', align: 'right' },
        { header: 'server CPU ms', align: 'right' },
        { header: 'workers CPU ms', align: 'right' },
        { header: 'client CPU ms', align: 'right' },
        { header: 'all CPU ms', align: 'right' },
        { header: '429', align: 'right' },
        { header: 'other', align: 'right' },
      ],
      runs.map(row),
    ),
  );
  for (let round = 1; round <= ROUNDS; round++) {
    const [server, bare] = TARGETS.map((target) => runs.find((run) => run.round === round && run.target === target.name)!);
    console.log(`  round ${round}: server ÷ bare server, conversations a second: ${(server!.tally.conversations / bare!.tally.conversations).toFixed(2)}`);
  }
  const wrong = runs.filter((run) => run.tally.otherTotal > 0);
  for (const run of wrong)
    console.log(
      `  ${run.target}, round ${run.round}: ${[...run.tally.other].map(([key, count]) => `${count} x ${key}`).join(', ')}; ${run.tally.examples[0] ?? ''}`,
    );
  if (wrong.length > 0) process.exitCode = 1;
}

await main();
