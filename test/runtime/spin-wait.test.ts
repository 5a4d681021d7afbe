import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { ProgramRuntime } from '../../runtime/program-runtime.ts';
import { runProgram } from '../../runtime/run-program.ts';
import { WorkerPool } from '../../runtime/worker/worker-pool.ts';
import { keepsLoopTurning, MAX_SPIN_WAIT_MS, spinUntilNextStep, spinWhileStepRuns, type SpinningStep } from '../../runtime/spin-wait.ts';
import { confinedToOneCpu } from '../../runtime/one-cpu.ts';

const run = promisify(execFile);
const RUNTIME = { pausedTtlMs: 60_000, maxPausedPrograms: 10, maxPausedHeapBytes: 2 ** 30, warmIsolates: 0 };

/** The immediates pending in this process: what keeps its event loop turning. */
function immediates(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === 'Immediate').length;
}

/** Lets the event loop turn `times` times. */
async function turns(times: number): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('a step waiting awake (spinWhileStepRuns)', () => {
  const steps: SpinningStep[] = [];
  afterEach(() => {
    for (const running of steps.splice(0)) running.end();
  });
  const step = (spinMs: number): SpinningStep => {
    const running = spinWhileStepRuns(spinMs);
    steps.push(running);
    return running;
  };
  /** As after a step that began at once once awaited: the next is awaited awake. */
  const cameAtOnce = (): void => {
    spinUntilNextStep(0);
    step(MAX_SPIN_WAIT_MS).end();
  };

  it.skipIf(confinedToOneCpu())('keeps the loop turning while the one step runs, and stops as it ends', async () => {
    const before = immediates();
    const running = step(MAX_SPIN_WAIT_MS);
    expect(immediates()).toBe(before + 1);
    await turns(3);
    running.handOver();
    expect(immediates()).toBe(before + 1);
    running.end();
    expect(immediates()).toBe(before);
    // Ending twice, or a hand-over once ended, changes nothing.
    running.end();
    running.handOver();
    expect(immediates()).toBe(before);
  });

  it('never with 0, and not while a second step runs: their threads need the CPUs', async () => {
    const before = immediates();
    step(0).handOver();
    expect(immediates()).toBe(before);
    for (const running of steps.splice(0)) running.end();
    const first = step(MAX_SPIN_WAIT_MS);
    const second = step(MAX_SPIN_WAIT_MS);
    first.handOver();
    expect(immediates()).toBe(before);
    second.end();
    first.end();
    expect(immediates()).toBe(before);
  });

  it.skipIf(confinedToOneCpu())('stops by itself once the step has waited longer than it may, and turns again at its next hand-over', async () => {
    const before = immediates();
    const running = step(0.001);
    // However slow the machine, a thousandth of a millisecond is over after a turn or two.
    for (let turn = 0; turn < 1000 && immediates() > before; turn++) await turns(1);
    expect(immediates()).toBe(before);
    // A step that first made its isolate on this thread hands it over later: it waits awake then.
    running.handOver();
    expect(immediates()).toBe(before + 1);
    running.end();
    expect(immediates()).toBe(before);
  });

  it('is refused outside 0 to MAX_SPIN_WAIT_MS, by name', async () => {
    const message = `spinWaitMs must be a number of milliseconds from 0 to ${MAX_SPIN_WAIT_MS}`;
    for (const spinWaitMs of [-1, MAX_SPIN_WAIT_MS + 1, Number.NaN]) {
      await expect(runProgram("text('x')", { spinWaitMs })).rejects.toThrow(message);
      // A runtime or a pool refuses it as it is made, not at its first program.
      expect(() => new ProgramRuntime({ ...RUNTIME, spinWaitMs })).toThrow(message);
      expect(
        () =>
          new WorkerPool({
            size: 1,
            heartbeatMs: 500,
            heartbeatTimeoutMs: 5000,
            maxRssBytes: 2 ** 30,
            maxIdleCpuShare: 0.5,
            runtime: { ...RUNTIME, spinWaitMs },
          }),
      ).toThrow(message);
    }
    expect((await runProgram("text('x')", { spinWaitMs: 0 })).result).toBe('x');
  });

  it('programs run as they did, waiting awake or not', async () => {
    const code = 'let n = 0; for (let i = 0; i < 5; i++) n += await tools.add({ n: i }); text(String(n))';
    const tools = { add: { json: true, run: (args: unknown) => (args as { n: number }).n * 2 } };
    for (const spinWaitMs of [0, 1, MAX_SPIN_WAIT_MS]) {
      const result = await runProgram(code, { tools, spinWaitMs });
      expect(result).toMatchObject({ status: 'completed', result: '20', stats: { steps: 6 } });
    }
  });

  // These two read the module's own state (keepsLoopTurning), not the immediates of the process:
  // an earlier test's isolates, made ahead and disposed, come and go with immediates of their own.
  it.skipIf(confinedToOneCpu())('awaits the next step awake while none runs, until one begins', async () => {
    cameAtOnce();
    expect(keepsLoopTurning()).toBe(false);
    spinUntilNextStep(MAX_SPIN_WAIT_MS);
    expect(keepsLoopTurning()).toBe(true);
    await turns(1);
    expect(keepsLoopTurning()).toBe(true);
    // The step begins: the wait is its own now, and ends with it.
    const running = step(MAX_SPIN_WAIT_MS);
    expect(keepsLoopTurning()).toBe(true);
    running.end();
    expect(keepsLoopTurning()).toBe(false);
    // Never while a step runs, and never with 0.
    const other = step(0);
    spinUntilNextStep(MAX_SPIN_WAIT_MS);
    expect(keepsLoopTurning()).toBe(false);
    other.end();
    spinUntilNextStep(0);
    expect(keepsLoopTurning()).toBe(false);
  });

  it.skipIf(confinedToOneCpu())('awaits asleep once a step came later than the wait, and awake again once one came within it', async () => {
    cameAtOnce();
    spinUntilNextStep(0.001);
    // However slow the machine, a thousandth of a millisecond is over after a turn or two.
    for (let turn = 0; turn < 1000 && keepsLoopTurning(); turn++) await turns(1);
    expect(keepsLoopTurning()).toBe(false);
    // This step began later than the wait lasted (a client that thinks between its calls)...
    step(0.001).end();
    // ...so the next is awaited asleep, whatever it is given.
    spinUntilNextStep(MAX_SPIN_WAIT_MS);
    expect(keepsLoopTurning()).toBe(false);
    // This one began at once, well within 100 ms: the next is awaited awake again.
    step(MAX_SPIN_WAIT_MS).end();
    spinUntilNextStep(MAX_SPIN_WAIT_MS);
    expect(keepsLoopTurning()).toBe(true);
    step(0).end();
    expect(keepsLoopTurning()).toBe(false);
  });

  it('does not spin in a process confined to one CPU (taskset), where the isolate thread would share it', async () => {
    const script = `
      import { spinUntilNextStep, spinWhileStepRuns } from ${JSON.stringify(new URL('../../runtime/spin-wait.ts', import.meta.url).href)};
      const running = spinWhileStepRuns(50);
      running.handOver();
      console.log(process.getActiveResourcesInfo().filter((r) => r === 'Immediate').length);
      running.end();
      spinUntilNextStep(50);
      console.log(process.getActiveResourcesInfo().filter((r) => r === 'Immediate').length);`;
    const { stdout } = await run('taskset', ['-c', '0', process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH ?? '' },
      timeout: 60_000,
    });
    expect(stdout.trim().split('\n')).toEqual(['0', '0']);
  }, 60_000);
});
