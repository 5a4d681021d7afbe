import { IsolateProgram } from '../runtime/isolate-program.ts';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import { runProgram, type HostTool } from '../runtime/run-program.ts';
import { bareIsolateAndContext, bareRunProgram } from './bare-isolated-vm.ts';
import { startSeedServer } from './http-seed-loop.ts';
import { assertSeedResult, SEED_IMPLEMENTATIONS, SEED_PROGRAM } from './seed.ts';

/** What a case needs while it is measured; built before warm-up so set-up cost is not timed. */
export interface PreparedCase {
  readonly iteration: () => Promise<void>;
  readonly teardown?: () => Promise<void>;
}

export interface BenchCase {
  readonly name: string;
  /** The floor this case's median is divided by, by name; absent on a floor itself. */
  readonly floor?: string;
  prepare(): Promise<PreparedCase>;
}

const SEED_FLOOR = 'bare isolated-vm floor (seed program)';
const COLD_START_FLOOR = 'bare isolate + context + dispose';

/** The seed tools in runProgram's shape: `json` as the fixture's tools declare output_schema. */
const HOST_TOOLS: Record<string, HostTool> = Object.fromEntries(
  Object.entries(SEED_IMPLEMENTATIONS).map(([name, implementation]) => [
    name,
    { json: true, run: (args: unknown) => implementation(args as { sku: string }) },
  ]),
);

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
        // No tools, default limits: isolate + context + prelude compile/run + install + one report.
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
];
