// Entry point of `npm run bench:paused`: what paused programs cost in memory. The server runs as
// a real child process with worker processes; N seed conversations are each left paused after
// request 1 (every one holds a live isolate waiting for its two outputs), then the RSS of the
// server and its workers is read, against the same processes' RSS before any program ran. Then
// every conversation is resumed, which must find its isolate still paused (a warm resume): the
// figure is only honest if none was evicted or replayed. It reports; it fails only on a wrong answer.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEnvironment } from './environment.ts';
import { checkSecondResponse, FIRST_BODY, postJson, secondRequestFor } from './load-client.ts';
import { metrics, rssBytes, spawnBenchServer, workerPids } from './load-server.ts';
import { SEED_SCENARIO_PATH } from './seed.ts';
import { positiveNumberFromEnv } from './settings.ts';
import { formatTable } from './table.ts';

const PROGRAMS = positiveNumberFromEnv('BENCH_PAUSED_PROGRAMS', 1000, true);
const WORKERS = positiveNumberFromEnv('BENCH_PAUSED_WORKERS', 2, true);
/** Requests in flight while the programs are started and resumed. */
const CONCURRENCY = 8;
/** Counters and RSS settle after the last request: a heartbeat (500 ms) carries the workers' counters. */
const SETTLE_MS = 1_500;
const MIB = 1024 * 1024;

// Every paused isolate must stay held: the cache's count and heap bounds are raised past what N
// programs need, the turn bound past the concurrency, and nothing expires during the run.
const server = await spawnBenchServer({
  PTC_STORE: 'memory',
  PTC_SCENARIOS: SEED_SCENARIO_PATH,
  PTC_WORKERS: String(WORKERS),
  PTC_MAX_PAUSED_PROGRAMS: String(PROGRAMS),
  PTC_MAX_PAUSED_HEAP_MB: '4096',
  PTC_PAUSED_TTL_MS: '3600000',
  PTC_MAX_CONCURRENT_TURNS: String(CONCURRENCY),
  PTC_MAX_QUEUED_TURNS: String(CONCURRENCY),
  LOG_LEVEL: 'warn',
});

/** Runs `task` for 0..count-1, `CONCURRENCY` at a time. */
async function inParallel(count: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

interface Memory {
  readonly server: number;
  readonly workers: number;
}

async function memory(): Promise<Memory> {
  await sleep(SETTLE_MS);
  const pids = await workerPids(server.origin);
  return { server: rssBytes(server.pid) ?? Number.NaN, workers: pids.reduce((sum, pid) => sum + (rssBytes(pid) ?? Number.NaN), 0) };
}

try {
  for (const line of describeEnvironment()) console.log(line);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  // A few conversations first, finished, so that lazy start-up costs (module loading, JIT) are in the baseline.
  await inParallel(CONCURRENCY * 4, async () => {
    const first = await postJson(agent, server.origin, '/v1/responses', FIRST_BODY, 60_000);
    const second = secondRequestFor(first.text);
    checkSecondResponse((await postJson(agent, server.origin, '/v1/responses', second.body, 60_000)).text, second.programCallId);
  });
  const before = await memory();
  const resumes = new Array<{ body: string; programCallId: string }>(PROGRAMS);
  process.stderr.write(`running: pausing ${PROGRAMS} programs\n`);
  await inParallel(PROGRAMS, async (index) => {
    const first = await postJson(agent, server.origin, '/v1/responses', FIRST_BODY, 60_000);
    if (first.status !== 200) throw new Error(`request 1 answered ${first.status}: ${first.text.slice(0, 300)}`);
    resumes[index] = secondRequestFor(first.text);
  });
  const paused = await memory();
  const held = (await metrics(server.origin)).get('ptc_paused_programs');
  const warmBefore = (await metrics(server.origin)).get('ptc_program_resumes_total{path="warm"}') ?? 0;
  process.stderr.write(`running: resuming ${PROGRAMS} programs\n`);
  await inParallel(PROGRAMS, async (index) => {
    const second = resumes[index]!;
    const finished = await postJson(agent, server.origin, '/v1/responses', second.body, 60_000);
    if (finished.status !== 200) throw new Error(`request 2 answered ${finished.status}: ${finished.text.slice(0, 300)}`);
    checkSecondResponse(finished.text, second.programCallId);
  });
  await sleep(SETTLE_MS);
  const after = await metrics(server.origin);
  const warm = (after.get('ptc_program_resumes_total{path="warm"}') ?? 0) - warmBefore;
  agent.destroy();

  const mib = (bytes: number): string => (bytes / MIB).toFixed(0);
  console.log(`\n${PROGRAMS} seed programs paused at once (server as a child process, PTC_WORKERS=${WORKERS}); RSS in MiB, read from /proc\n`);
  console.log(
    formatTable(
      [
        { header: 'state', align: 'left' },
        { header: 'server', align: 'right' },
        { header: `${WORKERS} workers`, align: 'right' },
        { header: 'total', align: 'right' },
      ],
      [
        ['before (no program paused)', mib(before.server), mib(before.workers), mib(before.server + before.workers)],
        [`${PROGRAMS} paused`, mib(paused.server), mib(paused.workers), mib(paused.server + paused.workers)],
      ],
    ),
  );
  const added = paused.server + paused.workers - (before.server + before.workers);
  console.log(
    `\npaused isolates held (ptc_paused_programs): ${held}; added by them: ${mib(added)} MiB, ${(added / PROGRAMS / 1024).toFixed(0)} KiB per paused program`,
  );
  console.log(`then resumed: ${warm} of ${PROGRAMS} warm (the rest replayed: evicted or lost), every answer checked`);
} finally {
  await server.stop();
}
