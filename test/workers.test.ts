import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import type { ProgramRuntimeOptions } from '../runtime/program-runtime.ts';
import { WorkerPool } from '../runtime/worker/worker-pool.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { ICU_RUNAWAY } from './support/hostile-programs.ts';
import { metric, startServer, type RunningServer } from './support/server.ts';

/** A process's state (Linux: field 3 of /proc/<pid>/stat; `T` is stopped by a signal), or undefined once it is gone. */
function processState(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0];
  } catch {
    return undefined;
  }
}

const MISBEHAVING = fileURLToPath(new URL('./fixtures/misbehaving-worker.ts', import.meta.url));
const RUNTIME: ProgramRuntimeOptions = { pausedTtlMs: 60_000, maxPausedPrograms: 100, maxPausedHeapBytes: 2 ** 30, warmIsolates: 2 };
const SUPERVISION = { heartbeatMs: 50, heartbeatTimeoutMs: 600, maxRssBytes: 400 * 2 ** 20, maxIdleCpuShare: 0.5 };
/**
 * Resolves once the server's workers have started `count` programs (their heartbeats report it):
 * a step sent before is then running, not on its way.
 */
async function runningInWorker(server: RunningServer, count: number): Promise<void> {
  await vi.waitFor(async () => expect(await metric(server, 'ptc_programs_started_total')).toBeGreaterThanOrEqual(count), { timeout: 60_000, interval: 20 });
}

/**
 * A pool of one scripted fixture worker (see test/fixtures/misbehaving-worker.ts), and `step`,
 * which starts a program whose code says what the worker does with it.
 */
function scriptedPool(options: Partial<ConstructorParameters<typeof WorkerPool>[0]> = {}) {
  const pool = new WorkerPool({
    ...SUPERVISION,
    size: 1,
    runtime: { ...RUNTIME, misbehave: 'scripted' } as ProgramRuntimeOptions,
    entry: MISBEHAVING,
    ...options,
  });
  const step = (programId: string, code: string) => pool.start(programId, { code, tools: [], seed: 1, clock: 0, limits: DEFAULT_LIMITS });
  return { pool, step };
}

/** A step of seconds of CPU (3 to 10 here, as the JIT goes), far within the limits these servers set. */
const HONEST_LONG_STEP = 'let x = 0; for (let i = 0; i < 4e9; i++) x = (x + i) | 0; text(x !== 0.5 ? "done" : "?")';
/**
 * Tests running HONEST_LONG_STEP twice (once more after its worker died) on a loaded machine:
 * seconds on a quiet one, ten times that with every core busy elsewhere.
 */
const TWO_LONG_STEPS_MS = 300_000;

/** The limits of servers running HONEST_LONG_STEP: its step must never end on them, however slow the machine. */
const LONG_STEP_TIME_MS = 600_000;

/** Supervisor tests start one or two worker processes each: on a loaded machine, seconds apiece. */
const SUPERVISOR_TEST_MS = 120_000;

describe('the supervisor kills and replaces a worker', { timeout: SUPERVISOR_TEST_MS }, () => {
  // Each case loosens the checks it is not about, so that on a loaded machine the one it
  // is about fires first by a wide margin: a burning worker may answer pings late, and a
  // bloating one burns CPU faulting its pages in.
  it.each([
    ['that answers no heartbeat', 'silent', 'heartbeat', { maxIdleCpuShare: 64 }],
    ['that burns CPU with no step running', 'burn', 'cpu', { heartbeatTimeoutMs: 15_000, maxIdleCpuShare: 0.15 }],
    ['whose resident memory passes its ceiling', 'bloat', 'rss', { heartbeatTimeoutMs: 15_000, maxIdleCpuShare: 64 }],
  ] as const)('%s', async (_, misbehave, reason, loosened) => {
    const deaths: string[] = [];
    const pool = new WorkerPool({
      ...SUPERVISION,
      ...loosened,
      size: 1,
      runtime: { ...RUNTIME, misbehave } as ProgramRuntimeOptions,
      entry: MISBEHAVING,
      onWorkerDeath: (_pid, cause) => deaths.push(cause),
    });
    try {
      await pool.ready();
      const [first] = pool.pids;
      await vi.waitFor(() => expect(deaths[0]).toBe(reason), { timeout: 60_000, interval: 50 });
      // It was replaced by a new process.
      await vi.waitFor(() => expect(pool.pids.some((pid) => pid !== first)).toBe(true), { timeout: 30_000, interval: 50 });
      expect(pool.stats().workers?.deaths[reason]).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
  });

  it('but not one that takes seconds to start, longer than its heartbeat timeout', async () => {
    const deaths: string[] = [];
    const pool = new WorkerPool({
      ...SUPERVISION,
      size: 1,
      runtime: { ...RUNTIME, misbehave: 'slow' } as ProgramRuntimeOptions,
      entry: MISBEHAVING,
      onWorkerDeath: (_pid, cause) => deaths.push(cause),
    });
    try {
      const [first] = pool.pids;
      await pool.ready();
      // Many heartbeat timeouts after it became ready, it is still the same process.
      await new Promise((resolve) => setTimeout(resolve, 5 * SUPERVISION.heartbeatTimeoutMs));
      expect(deaths).toEqual([]);
      expect(pool.pids).toEqual([first]);
    } finally {
      await pool.close();
    }
  });

  it('ends the step of a worker that dies under it with runtime_crashed', async () => {
    const pool = new WorkerPool({ ...SUPERVISION, size: 1, runtime: { ...RUNTIME, misbehave: 'die' } as ProgramRuntimeOptions, entry: MISBEHAVING });
    try {
      await pool.ready();
      const event = await pool.start('call_x', { code: 'text(1)', tools: [], seed: 1, clock: 0, limits: DEFAULT_LIMITS });
      expect(event).toMatchObject({ type: 'incomplete', error: { code: 'runtime_crashed' } });
      expect(event.type === 'incomplete' && event.error.message).toContain('code 70');
    } finally {
      await pool.close();
    }
  });

  it('kills a worker whose step runs past its wall-clock limit unstopped: that step ends wall_time_exceeded, the one beside it runs again and completes', async () => {
    const { pool, step } = scriptedPool();
    try {
      await pool.ready();
      const beside = step('beside', 'hold 2000 beside');
      // Reported in each heartbeat as 5 s past its limit: far past RUNAWAY_THRESHOLDS_MS.wall_time.kill.
      const runaway = await step('runaway', 'overrun');
      expect(runaway).toMatchObject({
        type: 'incomplete',
        error: {
          code: 'wall_time_exceeded',
          message: `One execution step ran past its wall-clock limit of ${DEFAULT_LIMITS.stepWallTimeMs} ms and its isolate could not stop it; the worker running it was stopped`,
        },
      });
      expect(await beside).toMatchObject({ type: 'completed', result: 'hold 2000 beside' });
      expect(pool.stats().workers).toMatchObject({ retried: 1, deaths: { deadline: 1 } });
    } finally {
      await pool.close();
    }
  });

  it('freezes a worker that reports a runaway, replaces it at once for new steps, and kills it for the runaway at its kill threshold', async () => {
    const deaths: string[] = [];
    const { pool, step } = scriptedPool({ onWorkerDeath: (_pid, cause) => deaths.push(cause) });
    try {
      await pool.ready();
      const [frozen] = pool.pids;
      // Reported 300 ms past its wall-clock limit: frozen at once, killed 700 ms later.
      const late = step('late', 'late 3000');
      // Every thread of the reporting worker stops...
      await vi.waitFor(() => expect(processState(frozen!)).toBe('T'), { timeout: 30_000, interval: 20 });
      // ...and a new worker takes the next step.
      await vi.waitFor(() => expect(pool.pids.length === 1 && pool.pids[0] !== frozen).toBe(true), { timeout: 30_000, interval: 20 });
      expect(await step('next', 'hold 10 next')).toMatchObject({ type: 'completed', result: 'hold 10 next' });
      // Frozen, the runaway never answers (left to run, it would complete after 3 s): it ends with the kill.
      expect(await late).toMatchObject({ type: 'incomplete', error: { code: 'wall_time_exceeded', message: expect.stringContaining('was stopped') } });
      await vi.waitFor(() => expect(processState(frozen!)).toBeUndefined(), { timeout: 30_000, interval: 50 });
      expect(deaths).toEqual(['deadline']);
      expect(pool.stats().workers?.retried).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it('kills a worker reporting a runaway at once, rather than freezing it, while as many frozen workers as the pool has wait to be killed', async () => {
    const { pool, step } = scriptedPool();
    try {
      await pool.ready();
      const [first] = pool.pids;
      // 300 ms past its isolate's disposal: frozen, and killed only 5.7 s later.
      const firstRunaway = step('first', 'disposed');
      await vi.waitFor(() => expect(pool.pids.length === 1 && pool.pids[0] !== first).toBe(true), { timeout: 30_000, interval: 20 });
      const stopped = { type: 'incomplete', error: { code: 'memory_limit_exceeded', message: expect.stringContaining('was stopped') } };
      // The replacement reports one too while the first is still frozen: it is killed at once.
      expect(await step('second', 'disposed')).toMatchObject(stopped);
      expect(processState(first!)).toBe('T');
      expect(await firstRunaway).toMatchObject(stopped);
      expect(pool.stats().workers?.deaths.deadline).toBe(2);
    } finally {
      await pool.close();
    }
  });

  it("runs a step again on the pool at once when its worker is frozen under it for another step's runaway, rather than after the worker's kill", async () => {
    const { pool, step } = scriptedPool();
    try {
      await pool.ready();
      const [frozen] = pool.pids;
      const beside = step('beside', 'hold 1500 beside');
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Frozen for it, the worker is killed 5.7 s later: the step beside must not wait for that.
      const runaway = step('runaway', 'disposed');
      expect(await beside).toMatchObject({ type: 'completed', result: 'hold 1500 beside' });
      expect(processState(frozen!)).toBe('T');
      expect(pool.stats().workers?.retried).toBe(1);
      expect(await runaway).toMatchObject({ type: 'incomplete', error: { code: 'memory_limit_exceeded', message: expect.stringContaining('was stopped') } });
    } finally {
      await pool.close();
    }
  });

  it("starts a step's hard deadline when the step is sent, not while its worker is still starting", async () => {
    // The worker takes 2.5 s to listen; the step's hard deadline is 2.2 s (2 × 100 ms + 2 s).
    const pool = new WorkerPool({
      ...SUPERVISION,
      size: 1,
      runtime: { ...RUNTIME, misbehave: 'scripted', startDelayMs: 2_500 } as ProgramRuntimeOptions,
      entry: MISBEHAVING,
    });
    try {
      const limits = { ...DEFAULT_LIMITS, stepWallTimeMs: 100, cpuTimeMs: 100 };
      const event = await pool.start('early', { code: 'hold 100 early', tools: [], seed: 1, clock: 0, limits });
      expect(event).toMatchObject({ type: 'completed', result: 'hold 100 early' });
      expect(pool.stats().workers?.deaths).toMatchObject({ deadline: 0, exit: 0 });
    } finally {
      await pool.close();
    }
  });

  it('runs the steps a dead worker took with it again shortest-run first, so that they do not wait behind the one that ran long', async () => {
    const { pool, step } = scriptedPool();
    try {
      await pool.ready();
      const finished: string[] = [];
      const older = step('older', 'hold 3000 older').then((event) => finished.push(event.type === 'completed' ? event.result : event.type));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const younger = step('younger', 'hold 3000 younger').then((event) => finished.push(event.type === 'completed' ? event.result : event.type));
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Kills the worker while both hold; run again by itself, it kills the spare too.
      expect(await step('killer', 'kill')).toMatchObject({
        type: 'incomplete',
        error: { code: 'runtime_crashed', message: expect.stringContaining('died again') },
      });
      await Promise.all([older, younger]);
      expect(finished).toEqual(['hold 3000 younger', 'hold 3000 older']);
      expect(pool.stats().workers?.retried).toBe(3);
      // Two deaths: the worker and the spare the killer took down. The spare stopped once no step
      // waited is none (given the time to exit).
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(pool.stats().workers?.deaths.exit).toBe(2);
    } finally {
      await pool.close();
    }
  });
});

describe('a warm resume through a worker carries only the pending answers', () => {
  const spec = {
    code: 'const a = await tools.get({ n: 1 }); const b = await tools.get({ n: a }); text(a + "," + b)',
    tools: [{ name: 'get', input: 'json' as const, parseOutputAsJson: false }],
    seed: 7,
    clock: 0,
    limits: DEFAULT_LIMITS,
  };
  // The program's calls as it makes them: `{n: 1}`, then `{n: a}` with the string it got.
  const call = (argumentsJson: string, output: string) => ({ tool: 'get', argumentsJson, output });

  it('resumes warm where the record leaves the program, and replays when an earlier answer differs from the one it received', async () => {
    const pool = new WorkerPool({ ...SUPERVISION, size: 1, runtime: RUNTIME });
    try {
      expect((await pool.start('brief', spec)).type).toBe('paused');
      const second = await pool.resume('brief', spec, [call('{"n":1}', '5')]);
      expect(second).toMatchObject({ path: 'warm', event: { type: 'paused', calls: [{ seq: 1, argumentsJson: '{"n":"5"}' }] } });
      const done = await pool.resume('brief', spec, [call('{"n":1}', '5'), call('{"n":"5"}', '9')]);
      expect(done).toMatchObject({ path: 'warm', event: { type: 'completed', result: '5,9' } });

      // Paused again at its second call, then resumed with another first answer than it got:
      // the digest of the earlier answers differs, so the worker replays from the whole record.
      expect((await pool.start('changed', spec)).type).toBe('paused');
      await pool.resume('changed', spec, [call('{"n":1}', '5')]);
      const replayed = await pool.resume('changed', spec, [call('{"n":1}', '6'), call('{"n":"6"}', '9')]);
      expect(replayed).toMatchObject({ path: 'replay', event: { type: 'completed', result: '6,9' } });
    } finally {
      await pool.close();
    }
  });
});

describe('WorkerPool.ready()', () => {
  it('resolves once each worker has made the isolates it keeps ahead: the next program takes one rather than making its own', async () => {
    const pool = new WorkerPool({ ...SUPERVISION, size: 1, runtime: RUNTIME });
    const spec = { code: 'text("ok")', tools: [], seed: 1, clock: 0, limits: DEFAULT_LIMITS };
    try {
      // Isolates are made for the memory limit programs ask for: one has asked by then.
      expect(await pool.start('first', spec)).toMatchObject({ type: 'completed' });
      await pool.ready();
      // The counters come with ready()'s answer, as of then.
      const before = pool.stats().warmIsolates;
      expect(before.ready).toBe(RUNTIME.warmIsolates);
      expect(await pool.start('second', spec)).toMatchObject({ type: 'completed', result: 'ok' });
      await pool.ready();
      expect(pool.stats().warmIsolates.taken).toBe(before.taken + 1);
    } finally {
      await pool.close();
    }
  });
});

describe('programs in worker processes, through the API', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      config: { workers: 2, workerHeartbeatMs: 100, limits: { ...DEFAULT_LIMITS, stepWallTimeMs: LONG_STEP_TIME_MS, cpuTimeMs: LONG_STEP_TIME_MS } },
    });
  });
  afterAll(() => server.close());

  async function workerPids(): Promise<number[]> {
    return ((await (await fetch(`${server.baseURL.replace(/\/v1$/, '')}/health`)).json()) as { workers: number[] }).workers;
  }

  it("run the guide's loop, pausing and resuming in the worker that holds the isolate", async () => {
    const tools = programTools('get');
    const input: ResponseInputItem[] = [
      { role: 'user', content: inlineProgram('let t = 0; for (let i = 0; i < 3; i++) t += Number(await tools.get({i})); text(t)') },
    ];
    for (;;) {
      const response = await server.client.responses.create({ model: 'm', store: false, input, tools });
      input.push(...toResponseInputItems(response.output));
      const calls = functionCallsOf(response);
      if (calls.length === 0) {
        expect(programOutputOf(response)?.result).toBe('3');
        break;
      }
      input.push(...calls.map((call) => ({ type: 'function_call_output' as const, call_id: call.call_id, output: '1', caller: call.caller ?? null })));
    }
    await vi.waitFor(async () => expect(await metric(server, 'ptc_program_resumes_total{path="warm"}')).toBeGreaterThanOrEqual(3), { timeout: 30_000 });
  });

  it(
    'survive both workers killed in the middle of a step: that step runs again by itself and completes, the next one runs, paused ones resume by replay',
    async () => {
      const tools = programTools('get');
      // A program paused in some worker, to be resumed after the workers die.
      const user: ResponseInputItem = { role: 'user', content: inlineProgram('text(await tools.get({}) + "!")') };
      const paused = await server.client.responses.create({ model: 'm', store: false, input: [user], tools });
      const [call] = functionCallsOf(paused);

      // Seconds of honest work: it did nothing wrong, so it is run again and finishes.
      const long = server.client.responses.create({ model: 'm', input: inlineProgram(HONEST_LONG_STEP), tools });
      const pids = await workerPids();
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const pid of pids) process.kill(pid, 'SIGKILL');
      expect(programOutputOf(await long)).toMatchObject({ status: 'completed', result: 'done' });
      expect(await metric(server, 'ptc_worker_step_retries_total')).toBeGreaterThanOrEqual(1);

      await vi.waitFor(async () => expect((await workerPids()).filter((pid) => !pids.includes(pid))).toHaveLength(2), { timeout: 60_000 });
      const next = await server.client.responses.create({ model: 'm', input: inlineProgram('text("alive")'), tools });
      expect(programOutputOf(next)).toMatchObject({ status: 'completed', result: 'alive' });
      const resumed = await server.client.responses.create({
        model: 'm',
        store: false,
        input: [
          user,
          ...toResponseInputItems(paused.output),
          { type: 'function_call_output', call_id: call!.call_id, output: 'back', caller: call!.caller ?? null },
        ],
        tools,
      });
      expect(programOutputOf(resumed)).toMatchObject({ status: 'completed', result: 'back!' });
      await vi.waitFor(async () => expect(await metric(server, 'ptc_worker_deaths_total{reason="exit"}')).toBeGreaterThanOrEqual(2), { timeout: 30_000 });
    },
    TWO_LONG_STEPS_MS,
  );
});

describe('a worker over its memory ceiling, through the API', () => {
  it(
    'is killed mid-step, and again when the step runs by itself: only that program ends runtime_crashed; a step beside it completes; the server keeps serving',
    async () => {
      const server = await startServer({
        config: {
          workers: 1,
          workerHeartbeatMs: 50,
          workerMaxRssBytes: 300 * 2 ** 20,
          limits: { ...DEFAULT_LIMITS, memoryMb: 1024, stepWallTimeMs: LONG_STEP_TIME_MS, cpuTimeMs: LONG_STEP_TIME_MS },
        },
      });
      try {
        const tools = programTools();
        const honest = server.client.responses.create({ model: 'm', input: inlineProgram(HONEST_LONG_STEP), tools });
        await runningInWorker(server, 1);
        // Well within its isolate's heap limit, but far over the worker's resident ceiling.
        const hog = inlineProgram('const keep = []; for (let i = 0; i < 64; i++) keep.push(new Float64Array(1e6).fill(i)); for (;;) keep.length');
        const response = await server.client.responses.create({ model: 'm', input: hog, tools });
        expect(JSON.parse(programOutputOf(response)!.result)).toMatchObject({
          error: { code: 'runtime_crashed', message: expect.stringMatching(/resident memory.*died again.*resident memory/) },
        });
        expect(programOutputOf(await honest)).toMatchObject({ status: 'completed', result: 'done' });
        // The hog was run again by itself, and so was the step it took down with it.
        expect(await metric(server, 'ptc_worker_step_retries_total')).toBe(2);
        const next = await server.client.responses.create({ model: 'm', input: inlineProgram('text("fine")'), tools });
        expect(programOutputOf(next)?.result).toBe('fine');
      } finally {
        await server.close();
      }
    },
    TWO_LONG_STEPS_MS,
  );

  it(
    'an ICU call that goes on after its isolate is disposed at its heap limit, next to an honest step: the runaway ends memory_limit_exceeded, the honest step is run again and completes',
    async () => {
      const server = await startServer({
        config: {
          workers: 1,
          workerHeartbeatMs: 50,
          workerMaxRssBytes: 300 * 2 ** 20,
          limits: { ...DEFAULT_LIMITS, stepWallTimeMs: LONG_STEP_TIME_MS, cpuTimeMs: LONG_STEP_TIME_MS },
        },
      });
      try {
        const tools = programTools();
        const honest = server.client.responses.create({ model: 'm', input: inlineProgram(HONEST_LONG_STEP), tools });
        await runningInWorker(server, 1);
        // Segmenting a long Thai text runs in ICU, which isolated-vm's timeout cannot interrupt: it
        // fills the heap, and goes on after the isolate is disposed for it (the worker's memory
        // grows); its worker reports it, and is killed.
        const runaway = await server.client.responses.create({
          model: 'm',
          input: inlineProgram(ICU_RUNAWAY),
          tools,
        });
        expect(JSON.parse(programOutputOf(runaway)!.result)).toMatchObject({
          error: { code: 'memory_limit_exceeded', message: expect.stringContaining('did not stop with its isolate') },
        });
        expect(programOutputOf(await honest)).toMatchObject({ status: 'completed', result: 'done' });
        // Only the honest step was run again; the worker died once, stopped for the runaway (or for
        // the memory it grew first, past this server's 300 MiB ceiling).
        expect(await metric(server, 'ptc_worker_step_retries_total')).toBe(1);
        expect((await metric(server, 'ptc_worker_deaths_total{reason="deadline"}')) + (await metric(server, 'ptc_worker_deaths_total{reason="rss"}'))).toBe(1);
      } finally {
        await server.close();
      }
    },
    TWO_LONG_STEPS_MS,
  );
});
