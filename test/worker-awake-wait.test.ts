import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import type { ProgramSpec } from '../runtime/isolate-program.ts';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import { confinedToOneCpu } from '../runtime/one-cpu.ts';
import type { ProgramEvent, RecordedCall } from '../runtime/program-events.ts';
import type { ProgramRuntimeOptions } from '../runtime/program-runtime.ts';
import { MAX_SPIN_WAIT_MS } from '../runtime/spin-wait.ts';
import { WorkerPool, type WorkerPoolOptions } from '../runtime/worker/worker-pool.ts';
import { observedWorkerLog } from './fixtures/observed-worker-log.ts';

const OBSERVED = fileURLToPath(new URL('./fixtures/observed-worker.ts', import.meta.url));
/** The longest wait awake there is, so that a client well within it and one well past it are told apart on any machine. */
const RUNTIME: ProgramRuntimeOptions = {
  pausedTtlMs: 60_000,
  maxPausedPrograms: 100,
  maxPausedHeapBytes: 2 ** 30,
  warmIsolates: 1,
  spinWaitMs: MAX_SPIN_WAIT_MS,
};
const POOL: WorkerPoolOptions = {
  size: 1,
  // Unpinned, as a pool of one worker on several CPUs is: a pinned worker never waits awake.
  pinCpus: false,
  runtime: RUNTIME,
  heartbeatMs: 500,
  heartbeatTimeoutMs: 30_000,
  maxRssBytes: 2 ** 31,
  maxIdleCpuShare: 0.9,
};

function spec(calls: number): ProgramSpec {
  return {
    code: `let n = 0; for (let i = 0; i < ${calls}; i++) n += await tools.get({ i }); text(String(n))`,
    tools: [{ name: 'get', parseOutputAsJson: true }],
    seed: 1,
    clock: 0,
    limits: DEFAULT_LIMITS,
  };
}

/** Answers each pause of `programId` with 1, after `thinkMs` for the pauses listed in `thinking` (by index); the events seen. */
async function run(pool: WorkerPool, programId: string, calls: number, thinking: Readonly<Record<number, number>> = {}): Promise<ProgramEvent['type'][]> {
  const program = spec(calls);
  const recorded: RecordedCall[] = [];
  let event = await pool.start(programId, program);
  const seen: ProgramEvent['type'][] = [event.type];
  while (event.type === 'paused') {
    const thinkMs = thinking[recorded.length];
    if (thinkMs !== undefined) await sleep(thinkMs);
    for (const call of event.calls) recorded.push({ tool: call.tool, argumentsJson: call.argumentsJson, output: '1' });
    const resumed = await pool.resume(programId, program, recorded);
    event = resumed.event;
    seen.push(event.type);
  }
  expect(event).toMatchObject({ type: 'completed', result: String(calls) });
  return seen;
}

describe.skipIf(confinedToOneCpu())('a worker waiting for the server awake (spinUntilNextStep)', () => {
  it('waits awake after a pause, never after a program ends, and asleep once the server answered later than the wait', async () => {
    const pool = new WorkerPool({ ...POOL, entry: OBSERVED });
    let log: string | undefined;
    try {
      await pool.ready();
      log = observedWorkerLog(pool.pids[0]!);
      rmSync(log, { force: true });
      await run(pool, 'prompt', 1);
      // Answered 3 × 100 ms after the pause: later than any wait awake could last.
      await run(pool, 'thinking', 1, { 0: 3 * MAX_SPIN_WAIT_MS });
      await run(pool, 'after-thinking', 1);
      await run(pool, 'prompt-again', 1);
      const expected = [
        ['paused true', 'completed false'],
        // Still awake: the step it last awaited came at once.
        ['paused true', 'completed false'],
        // That one came late: this pause is awaited asleep; answered at once all the same.
        ['paused false', 'completed false'],
        ['paused true', 'completed false'],
      ].flat();
      // The worker writes each line just after its answer has gone out.
      await vi.waitFor(() => expect(existsSync(log!) ? readFileSync(log!, 'utf8').trim().split('\n') : []).toHaveLength(expected.length), {
        timeout: 30_000,
        interval: 20,
      });
      expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual(expected);
    } finally {
      await pool.close();
      if (log) rmSync(log, { force: true });
    }
  }, 120_000);

  it('judges no CPU idle while the worker may still wait awake: a strict idle bound kills no healthy worker', async () => {
    // 5 % of a core over the supervisor's one-second window is 50 ms: half a wait of 100 ms.
    const pool = new WorkerPool({ ...POOL, heartbeatMs: 20, maxIdleCpuShare: 0.05 });
    try {
      await pool.ready();
      const program = spec(3);
      const recorded: RecordedCall[] = [];
      let event = await pool.start('quiet', program);
      // Two answers at once (the worker waits awake), then the client goes quiet after the third pause.
      for (let answer = 0; answer < 2; answer++) {
        for (const call of event.type === 'paused' ? event.calls : []) recorded.push({ tool: call.tool, argumentsJson: call.argumentsJson, output: '1' });
        event = (await pool.resume('quiet', program, recorded)).event;
      }
      expect(event.type).toBe('paused');
      // Past a whole idle window after the wait: long enough for the supervisor to judge one.
      await sleep(1_000 + MAX_SPIN_WAIT_MS + 500);
      expect(pool.stats().workers?.deaths).toEqual({ exit: 0, heartbeat: 0, rss: 0, cpu: 0, deadline: 0 });
      for (const call of event.type === 'paused' ? event.calls : []) recorded.push({ tool: call.tool, argumentsJson: call.argumentsJson, output: '1' });
      const resumed = await pool.resume('quiet', program, recorded);
      expect(resumed).toMatchObject({ path: 'warm', event: { type: 'completed', result: '3' } });
    } finally {
      await pool.close();
    }
  }, 120_000);
});
