import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { runProgram } from '../../runtime/run-program.ts';
import { MAX_SPIN_WAIT_MS, spinWhileStepRuns } from '../../runtime/spin-wait.ts';
import { confinedToOneCpu } from '../../runtime/one-cpu.ts';

const run = promisify(execFile);

/** The immediates pending in this process: what keeps its event loop turning. */
function immediates(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === 'Immediate').length;
}

/** Lets the event loop turn `times` times. */
async function turns(times: number): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('a step waiting awake (spinWhileStepRuns)', () => {
  const ends: (() => void)[] = [];
  afterEach(() => {
    for (const end of ends.splice(0)) end();
  });
  const step = (spinMs: number): (() => void) => {
    const end = spinWhileStepRuns(spinMs);
    ends.push(end);
    return end;
  };

  it.skipIf(confinedToOneCpu())('keeps the loop turning while the one step runs, and stops as it ends', async () => {
    const before = immediates();
    const end = step(MAX_SPIN_WAIT_MS);
    expect(immediates()).toBe(before + 1);
    await turns(3);
    expect(immediates()).toBe(before + 1);
    end();
    expect(immediates()).toBe(before);
    // Ending twice changes nothing.
    end();
    expect(immediates()).toBe(before);
  });

  it('never with 0, and not while a second step runs: their threads need the CPUs', async () => {
    const before = immediates();
    step(0);
    expect(immediates()).toBe(before);
    for (const end of ends.splice(0)) end();
    const first = step(MAX_SPIN_WAIT_MS);
    const second = step(MAX_SPIN_WAIT_MS);
    expect(immediates()).toBe(before);
    second();
    first();
    expect(immediates()).toBe(before);
  });

  it('stops by itself once the step has run longer than it may spin', async () => {
    const before = immediates();
    step(0.001);
    // However slow the machine, a thousandth of a millisecond is over after a turn or two.
    for (let turn = 0; turn < 1000 && immediates() > before; turn++) await turns(1);
    expect(immediates()).toBe(before);
  });

  it('is refused outside 0 to MAX_SPIN_WAIT_MS, by name', async () => {
    for (const spinWaitMs of [-1, MAX_SPIN_WAIT_MS + 1, Number.NaN]) {
      await expect(runProgram("text('x')", { spinWaitMs })).rejects.toThrow(`spinWaitMs must be a number of milliseconds from 0 to ${MAX_SPIN_WAIT_MS}`);
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

  it('does not spin in a process confined to one CPU (taskset), where the isolate thread would share it', async () => {
    const script = `
      import { spinWhileStepRuns } from ${JSON.stringify(new URL('../../runtime/spin-wait.ts', import.meta.url).href)};
      const end = spinWhileStepRuns(50);
      console.log(process.getActiveResourcesInfo().filter((r) => r === 'Immediate').length);
      end();`;
    const { stdout } = await run('taskset', ['-c', '0', process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH ?? '' },
      timeout: 60_000,
    });
    expect(stdout.trim()).toBe('0');
  }, 60_000);
});
