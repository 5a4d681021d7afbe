import { execFile } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const PROGRAM = new URL('../../runtime/isolate-program.ts', import.meta.url).href;
const ONE_CPU = new URL('../../runtime/one-cpu.ts', import.meta.url).href;
const LIMITS = new URL('../../runtime/limits.ts', import.meta.url).href;

/**
 * Runs, in a process of its own started under `prefix` (`taskset -c 0`, or nothing), a program
 * leaving a rejection unhandled at every step, live and replayed, and prints what it came to:
 * whether the process saw one CPU, each live batch, the live result, and the replay's.
 */
async function runIn(prefix: readonly string[]): Promise<{ oneCpu: boolean; batches: string[][]; result: string; replayed: string }> {
  const script = `
    import { IsolateProgram } from ${JSON.stringify(PROGRAM)};
    import { confinedToOneCpu } from ${JSON.stringify(ONE_CPU)};
    import { DEFAULT_LIMITS } from ${JSON.stringify(LIMITS)};
    const code = 'Promise.reject(new Error("s")); const x = await tools.a({}); Promise.reject(new Error("d")); const [y, z] = await Promise.all([tools.b({}), tools.a({ n: x })]); text(x + y + z)';
    const spec = { code, tools: [{ name: 'a', parseOutputAsJson: false }, { name: 'b', parseOutputAsJson: false }], seed: 1, clock: 0, limits: DEFAULT_LIMITS };
    const program = new IsolateProgram(spec);
    const batches = [];
    let event = await program.start();
    while (event.type === 'paused') {
      batches.push(event.calls.map((call) => call.tool + call.argumentsJson));
      event = await program.resume(event.calls.map((call) => ({ seq: call.seq, output: call.tool + call.seq })));
    }
    const replay = new IsolateProgram(spec);
    let again = await replay.start([{ tool: 'a', argumentsJson: '{}', output: 'a0' }]);
    again = again.type === 'paused' ? await replay.resume(again.calls.map((call) => ({ seq: call.seq, output: call.tool + call.seq }))) : again;
    console.log(JSON.stringify({ oneCpu: confinedToOneCpu(), batches, result: event.result ?? JSON.stringify(event), replayed: again.result ?? JSON.stringify(again) }));`;
  const [command, ...args] = [...prefix, process.execPath, '--no-node-snapshot', '--import', 'tsx', '--input-type=module', '-e', script];
  const { stdout } = await run(command!, args, { env: { PATH: process.env.PATH ?? '' }, timeout: 120_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { oneCpu: boolean; batches: string[][]; result: string; replayed: string };
}

const expected = { batches: [['a{}'], ['b{}', 'a{"n":"a0"}']], result: 'a0b1a2', replayed: 'a0b1a2' };

// A step's report is queued behind its op on two CPUs or more, and asked after it on one
// (IsolateProgram's #callThenReport): both ways must come to the same batches and outcomes.
describe('a program confined to one CPU, and one that is not', () => {
  it('on one CPU (taskset -c 0): the same batches and results, rejections left unhandled at every step', async () => {
    expect(await runIn(['taskset', '-c', '0'])).toEqual({ oneCpu: true, ...expected });
  }, 180_000);

  it.skipIf(availableParallelism() < 2)(
    'on every CPU of this machine: the same',
    async () => {
      expect(await runIn([])).toEqual({ oneCpu: false, ...expected });
    },
    180_000,
  );
});
