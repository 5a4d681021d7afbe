import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const PROGRAM = new URL('../../runtime/isolate-program.ts', import.meta.url).href;
const LIMITS = new URL('../../runtime/limits.ts', import.meta.url).href;

/**
 * Runs `programs` one after another in process (IsolateProgram), in a child process of its own
 * (what they leave running on isolated-vm's threads never returns, so the child is killed after),
 * and gives each one's outcome as it comes.
 */
async function outcomesInProcess(programs: readonly string[]): Promise<unknown[]> {
  const script = `
    import { IsolateProgram } from ${JSON.stringify(PROGRAM)};
    import { DEFAULT_LIMITS } from ${JSON.stringify(LIMITS)};
    const limits = { ...DEFAULT_LIMITS, stepWallTimeMs: 300, cpuTimeMs: 10_000 };
    for (const code of ${JSON.stringify(programs)}) {
      const event = await new IsolateProgram({ code, tools: [], seed: 1, clock: 0, limits }).start();
      console.log(JSON.stringify(event.type === 'completed' ? { completed: event.result } : { code: event.error?.code }));
    }`;
  const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let output = '';
    const lines = (): string[] => output.split('\n').filter(Boolean);
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (lines().length >= programs.length) resolve();
      });
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.once('exit', (code) => reject(new Error(`the child exited (${code}) after:\n${output}`)));
    });
    return lines().map((line) => JSON.parse(line) as unknown);
  } finally {
    child.kill('SIGKILL');
  }
}

// In process, a step that runs on past its limits where isolated-vm cannot stop it ends at
// RUNAWAY_THRESHOLDS_MS' `freeze` (runtime/runaway-thresholds.ts), with its limit's code, and
// the next program runs; what of it still runs holds one of isolated-vm's threads
// (docs/SANDBOX.md). In a worker, the supervisor stops the worker instead
// (test/containment.test.ts).
describe('runaways in process', () => {
  it('end at their wall-clock limit whatever still runs of them: a rejection getter read once, getters read one after another, a native loop', async () => {
    const outcomes = await outcomesInProcess([
      "const e = new Error('x'); Object.defineProperty(e, 'message', { get() { for (;;) {} } }); Promise.reject(e); text('done')",
      "Promise.reject({ get message() { for (;;) {} }, get stack() { for (;;) {} } }); text('done')",
      'text(Array.prototype.indexOf.call({ length: 2 ** 53 - 1 }, 1))',
      "text('still runs programs')",
    ]);
    expect(outcomes).toEqual([
      { code: 'wall_time_exceeded' },
      { code: 'wall_time_exceeded' },
      { code: 'wall_time_exceeded' },
      { completed: 'still runs programs' },
    ]);
  }, 120_000);
});
