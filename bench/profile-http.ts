// Entry point of `npm run bench:profile`: the seed conversation at BENCH_PROFILE_CLIENTS clients
// against the server as a real child process, run under `node --cpu-prof` (its worker processes
// inherit the flag); after a warm-up, the samples of the measured window are summed by function
// and by where their code lives, for the server's loop (the HTTP path), its threads, and each
// worker's main thread; and the CPU each process's threads used in the window is read from /proc,
// since isolated-vm runs programs' steps on threads of its own that no profile samples. The
// .cpuprofile files are kept, for a viewer (Chrome DevTools, speedscope). It reports; it fails
// only on a wrong answer, as bench:load does.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CpuProfile, type ProfileSummary, summarizeProfile } from './cpu-profile.ts';
import { describeEnvironment } from './environment.ts';
import { runClients, type Tally } from './load-client.ts';
import { spawnBenchServer, threadCpuMs, workerPids } from './load-server.ts';
import { summarize } from './measure.ts';
import { SEED_SCENARIO_PATH } from './seed.ts';
import { positiveNumberFromEnv } from './settings.ts';
import { formatTable } from './table.ts';

const SECONDS = positiveNumberFromEnv('BENCH_PROFILE_SECONDS', 20);
const WARMUP_SECONDS = positiveNumberFromEnv('BENCH_PROFILE_WARMUP_SECONDS', 10);
const CLIENTS = positiveNumberFromEnv('BENCH_PROFILE_CLIENTS', 8, true);
const TOP = positiveNumberFromEnv('BENCH_PROFILE_TOP', 30, true);
const LOG_LEVEL = process.env['BENCH_PROFILE_LOG_LEVEL'] || 'info';

/** Microseconds on CLOCK_MONOTONIC, the clock of V8's profile timestamps. */
const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);

const percent = (part: number, whole: number): string => `${((100 * part) / whole).toFixed(1)} %`;
const ms = (micros: number): string => (micros / 1000).toFixed(0);

function printSummary(title: string, summary: ProfileSummary, windowMicros: number, functions: boolean): void {
  console.log(
    `\n${title}: busy ${ms(summary.busyMicros)} ms of CPU in the ${ms(windowMicros)} ms window (${percent(summary.busyMicros, windowMicros)} of one core)${summary.wholeProfile ? '; no sample in the window, so the whole profile' : ''}`,
  );
  const rows = (entries: readonly { what: string; micros: number }[]): string[][] =>
    entries.slice(0, TOP).map((entry) => [entry.what, ms(entry.micros), percent(entry.micros, summary.busyMicros)]);
  console.log(
    formatTable(
      [
        { header: 'where the code lives', align: 'left' },
        { header: 'self ms', align: 'right' },
        { header: 'of busy', align: 'right' },
      ],
      rows(summary.areas),
    ),
  );
  if (!functions) return;
  console.log('');
  console.log(
    formatTable(
      [
        { header: `top ${TOP} functions by self time`, align: 'left' },
        { header: 'self ms', align: 'right' },
        { header: 'of busy', align: 'right' },
      ],
      rows(summary.functions),
    ),
  );
}

/** CPU ms a process's main thread and its other threads used between two readings of threadCpuMs. */
function splitThreadCpu(pid: number, before: Map<number, number>, after: Map<number, number>): { main: number; others: number } {
  let main = 0;
  let others = 0;
  for (const [tid, cpuMs] of after) {
    const used = cpuMs - (before.get(tid) ?? 0);
    if (tid === pid) main += used;
    else others += used;
  }
  return { main, others };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-profile-'));
  const server = await spawnBenchServer({
    PTC_STORE: 'memory',
    PTC_SCENARIOS: SEED_SCENARIO_PATH,
    LOG_LEVEL,
    NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}`,
  });
  let window: { from: number; to: number };
  let tally: Tally;
  let workers: number[] = [];
  let threadsCpu: { main: number; others: number }[] = [];
  try {
    process.stderr.write(`running: warm-up, ${WARMUP_SECONDS} s at ${CLIENTS} clients\n`);
    await runClients(server.origin, CLIENTS, WARMUP_SECONDS);
    workers = await workerPids(server.origin);
    process.stderr.write(`running: measured window, ${SECONDS} s\n`);
    const cpuBefore = [server.pid, ...workers].map(threadCpuMs);
    const from = monotonicMicros();
    tally = await runClients(server.origin, CLIENTS, SECONDS);
    window = { from, to: monotonicMicros() };
    threadsCpu = [server.pid, ...workers].map((pid, index) => splitThreadCpu(pid, cpuBefore[index]!, threadCpuMs(pid)));
  } finally {
    // A profile is written as its process exits.
    await server.stop();
    await sleep(500);
  }
  // Named CPU.<date>.<time>.<pid>.<thread id>.<sequence>.cpuprofile: thread 0 is the process's main thread.
  const files = readdirSync(dir).filter((file) => file.endsWith('.cpuprofile'));
  const ofProcess = (pid: number): string[] => files.filter((file) => file.split('.')[3] === String(pid));
  const mainThreadOf = (pid: number): string | undefined => ofProcess(pid).find((file) => file.split('.')[4] === '0');
  const ofServer = ofProcess(server.pid);
  const serverFile = mainThreadOf(server.pid);
  if (!serverFile) throw new Error(`no profile of the server's main thread (pid ${server.pid}) in ${dir}: ${files.join(', ')}`);
  const read = (file: string): CpuProfile => JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
  const windowMicros = window.to - window.from;

  for (const line of describeEnvironment()) console.log(line);
  const requests = summarize(tally.okMs);
  console.log(
    `\nThe seed conversation at ${CLIENTS} clients, ${SECONDS} s after ${WARMUP_SECONDS} s of warm-up, every process under --cpu-prof (which costs them some speed): ` +
      `${(tally.conversations / SECONDS).toFixed(0)} conversations/s, request p50 ${requests.medianMs.toFixed(1)} ms, p95 ${requests.p95Ms.toFixed(1)} ms, ${tally.busy} 429s, ${tally.otherTotal} other.`,
  );
  printSummary(`The server's process (${serverFile})`, summarizeProfile(read(serverFile), window.from, window.to), windowMicros, true);
  // The server's threads beside its loop (JSON bodies, token counts, schemas, autopilot plans).
  for (const file of ofServer.filter((file) => file !== serverFile)) {
    printSummary(`A thread of the server (${file})`, summarizeProfile(read(file), window.from, window.to), windowMicros, false);
  }
  // Each worker's main thread: the runtime's host side (isolates made, replies checked, the channel).
  for (const pid of workers) {
    const file = mainThreadOf(pid);
    if (file) printSummary(`Worker ${pid}'s main thread (${file})`, summarizeProfile(read(file), window.from, window.to), windowMicros, true);
    else console.log(`\nWorker ${pid} wrote no profile (it did not exit by itself)`);
  }
  const conversations = tally.conversations;
  console.log(
    `\nCPU in the window, from /proc (% of one core; per conversation, ${conversations} conversations). "Other threads" of a worker are mostly isolated-vm's, where programs' steps run:`,
  );
  console.log(
    formatTable(
      [
        { header: 'process', align: 'left' },
        { header: 'main thread', align: 'right' },
        { header: 'other threads', align: 'right' },
        { header: 'ms / conversation', align: 'right' },
      ],
      threadsCpu.map(({ main, others }, index) => [
        index === 0 ? `server ${server.pid}` : `worker ${workers[index - 1]}`,
        percent(main * 1000, windowMicros),
        percent(others * 1000, windowMicros),
        conversations > 0 ? ((main + others) / conversations).toFixed(2) : '-',
      ]),
    ),
  );
  console.log(`\nProfiles kept in ${dir}`);
  if (tally.otherTotal > 0) {
    console.error(`wrong answers: ${[...tally.other].map(([key, count]) => `${count} x ${key}`).join('; ')}\n${tally.examples.join('\n')}`);
    process.exitCode = 1;
  }
}

await main();
