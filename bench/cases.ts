import { IsolateProgram } from '../runtime/isolate-program.ts';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import { runProgram, type HostTool } from '../runtime/run-program.ts';
import { sharedWarmIsolates } from '../runtime/warm-isolates.ts';
import { bareIsolateAndContext, bareRunProgram } from './bare-isolated-vm.ts';
import { startSeedServer } from './http-seed-loop.ts';
import { assertSeedResult, SEED_IMPLEMENTATIONS, SEED_PROGRAM, SEED_PROGRAM_TOOLS } from './seed.ts';
import { runBare, runInProcess, startWorkerRunner, WORKLOADS, type Workload } from './workloads.ts';

/** What a case needs while it is measured; built before warm-up so set-up cost is not timed. */
export interface PreparedCase {
  readonly iteration: () => Promise<void>;
  readonly teardown?: () => Promise<void>;
}

export interface BenchCase {
  readonly name: string;
  /** The floor this case's median is divided by, by name; absent on a floor itself. */
  readonly floor?: string;
  /** Untimed idle time before each iteration (see MeasureOptions.idleMs); back to back when absent. */
  readonly idleMs?: number;
  prepare(): Promise<PreparedCase>;
}

const SEED_FLOOR = 'bare isolated-vm floor (seed program)';
const COLD_START_FLOOR = 'bare isolate + context + dispose';

/** The seed tools in runProgram's shape: `json` as the fixture's tools declare output_schema. */
const HOST_TOOLS: Record<string, HostTool> = Object.fromEntries(
  Object.entries(SEED_IMPLEMENTATIONS).map(([name, implementation]) => [name, { json: true, run: (args: unknown) => implementation(args as { sku: string }) }]),
);

/** The seed program with the seed's strict tools (SEED_PROGRAM_TOOLS), driven as runProgram drives a program (isolates made ahead, shared). */
async function runStrictSeed(): Promise<string> {
  const program = new IsolateProgram({ code: SEED_PROGRAM, tools: SEED_PROGRAM_TOOLS, seed: 1, clock: 0, limits: DEFAULT_LIMITS }, sharedWarmIsolates());
  try {
    let event = await program.start();
    while (event.type === 'paused') {
      const outputs = event.calls.map((call) => ({ seq: call.seq, output: JSON.stringify(SEED_IMPLEMENTATIONS[call.tool]!(JSON.parse(call.argumentsJson))) }));
      event = await program.resume(outputs);
    }
    return event.type === 'completed' ? event.result : JSON.stringify(event.error);
  } finally {
    program.dispose();
  }
}

/** Programs this far apart leave the runtime idle time between them, as real clients do. */
const APART_MS = 5;

/**
 * Each of the peer bench's workloads three ways, against its own floor measured just before:
 * plain isolated-vm with a fresh isolate, runProgram in this process, a worker process. W1 and
 * W5 (where starting a program is most of the cost) also run APART_MS apart, the floor too.
 */
function workloadCases(workload: Workload): BenchCase[] {
  const floor = `${workload.id} bare isolated-vm, fresh isolate (${workload.title})`;
  const cases: BenchCase[] = [
    { name: floor, prepare: async () => ({ iteration: () => runBare(workload) }) },
    { name: `${workload.id} runProgram, in process`, floor, prepare: async () => ({ iteration: () => runInProcess(workload) }) },
    {
      name: `${workload.id} worker process (WorkerPool of 1)`,
      floor,
      prepare: async () => {
        const runner = await startWorkerRunner();
        return { iteration: () => runner.run(workload), teardown: runner.close };
      },
    },
  ];
  if (workload.id !== 'W1' && workload.id !== 'W5') return cases;
  const apartFloor = `${workload.id} bare isolated-vm, ${APART_MS} ms apart`;
  return [
    ...cases,
    { name: apartFloor, idleMs: APART_MS, prepare: async () => ({ iteration: () => runBare(workload) }) },
    {
      name: `${workload.id} runProgram, ${APART_MS} ms apart`,
      floor: apartFloor,
      idleMs: APART_MS,
      prepare: async () => ({ iteration: () => runInProcess(workload) }),
    },
  ];
}

/**
 * Floors come first so the cases compared with them run in the same process state; the run is
 * sequential, so any drift (thermal, GC pressure) shows up as a gap between neighbouring rows.
 */
export const CASES: readonly BenchCase[] = [
  {
    name: SEED_FLOOR,
    prepare: async () => ({
      iteration: async () => assertSeedResult(SEED_FLOOR, await bareRunProgram(SEED_PROGRAM, SEED_IMPLEMENTATIONS)),
    }),
  },
  {
    name: COLD_START_FLOOR,
    prepare: async () => ({ iteration: bareIsolateAndContext }),
  },
  {
    name: 'fresh-isolate cold start (empty program)',
    floor: COLD_START_FLOOR,
    prepare: async () => ({
      iteration: async () => {
        // No tools, default limits: an isolate and its context from the prelude's snapshot, `start` and one report.
        const program = new IsolateProgram({ code: '', tools: [], seed: 1, clock: 0, limits: DEFAULT_LIMITS });
        const event = await program.start();
        if (event.type !== 'completed') throw new Error(`cold start: expected completed, got ${JSON.stringify(event)}`);
      },
    }),
  },
  {
    name: 'seed program in-process (runProgram)',
    floor: SEED_FLOOR,
    prepare: async () => ({
      iteration: async () => {
        const run = await runProgram(SEED_PROGRAM, { tools: HOST_TOOLS });
        assertSeedResult('runProgram', run.status === 'completed' ? run.result : JSON.stringify(run.error));
      },
    }),
  },
  {
    name: 'seed program in-process, strict tools with output_schema',
    floor: SEED_FLOOR,
    prepare: async () => ({ iteration: async () => assertSeedResult('strict tools', await runStrictSeed()) }),
  },
  {
    name: 'seed program over HTTP, isolates in-process',
    floor: SEED_FLOOR,
    prepare: async () => {
      const server = await startSeedServer(0);
      return {
        iteration: async () => assertSeedResult('HTTP seed loop', await server.runSeedLoop()),
        teardown: () => server.close(),
      };
    },
  },
  {
    name: 'seed program over HTTP, 2 worker processes',
    floor: SEED_FLOOR,
    prepare: async () => {
      const server = await startSeedServer(2);
      return {
        iteration: async () => assertSeedResult('HTTP seed loop', await server.runSeedLoop()),
        teardown: () => server.close(),
      };
    },
  },
  ...WORKLOADS.flatMap(workloadCases),
];
