// Entry point of `npm run bench:hop`: the engine part of bench:load's Table 3 alone, with no server
// and no load (about 20 s, where bench:load takes several minutes). The seed program, the peer
// bench's W3 and W2 on a ProgramRuntime in this process, on a WorkerPool of one worker process and
// on the bare channel to a process that runs nothing, in rounds; then the floor, in process plus
// the bare channel: this runtime's steps with one round trip each, what a step in another process
// costs on this machine before its worker does anything. It reports; it fails only on a wrong result.
import { describeEnvironment } from './environment.ts';
import type { MeasureOptions } from './measure.ts';
import { positiveNumberFromEnv } from './settings.ts';
import { measureEngineHop, printHop } from './worker-hop.ts';

const HOP: MeasureOptions = {
  warmup: positiveNumberFromEnv('BENCH_HOP_WARMUP', 20, true),
  iterations: positiveNumberFromEnv('BENCH_HOP_ITERATIONS', 200, true),
};

for (const line of describeEnvironment()) console.log(line);
const engine = await measureEngineHop(HOP, (message) => process.stderr.write(`running: ${message}\n`));
printHop([], engine, HOP.warmup);
