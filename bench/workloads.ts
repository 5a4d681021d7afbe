import type { ProgramSpec } from '../runtime/isolate-program.ts';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import type { ProgramEvent, RecordedCall } from '../runtime/program-events.ts';
import { runProgram, type HostTool } from '../runtime/run-program.ts';
import { ProgramRuntime } from '../runtime/program-runtime.ts';
import { WorkerPool } from '../runtime/worker/worker-pool.ts';
import { bareRunProgram, type BareTools } from './bare-isolated-vm.ts';
import { DEFAULT_CACHE } from './resume-program.ts';

/**
 * The peer bench's five workloads (../shared/peer-bench, lib/workloads.mjs), as programs of the
 * "tools.* + text()" dialect with the answer each must give. Same program texts and tool
 * answers, so a ratio here and one there measure the same work.
 */
export interface Workload {
  readonly id: string;
  readonly title: string;
  readonly program: string;
  readonly expected: string;
}

export const WORKLOADS: readonly Workload[] = [
  {
    id: 'W1',
    title: 'the seed program (2 parallel calls)',
    program: `const [stock, demand] = await Promise.all([tools.get_inventory({ sku: 'sku_123' }), tools.get_demand({ sku: 'sku_123' })]);
text(JSON.stringify({ sku: stock.sku, available_units: stock.available_units, requested_units: demand.requested_units, shortage_units: Math.max(demand.requested_units - stock.available_units, 0) }));`,
    expected: '{"sku":"sku_123","available_units":40,"requested_units":55,"shortage_units":15}',
  },
  {
    id: 'W2',
    title: '50 sequential awaited calls',
    program: `let total = 0;
for (let i = 0; i < 50; i++) {
  const r = await tools.get_inventory({ sku: 'sku_' + i });
  total += r.available_units;
}
text(String(total));`,
    expected: '2000',
  },
  {
    id: 'W3',
    title: '1,000 calls in batches of 50',
    program: `let sum = 0;
for (let b = 0; b < 20; b++) {
  const batch = await Promise.all(Array.from({ length: 50 }, (_, j) => tools.get_inventory({ sku: 'sku_' + (b * 50 + j) })));
  for (const r of batch) sum += r.available_units;
}
text(String(sum));`,
    expected: '40000',
  },
  {
    id: 'W4',
    title: 'CPU loop, 5e6 iterations',
    program: `let s = 0;
for (let i = 0; i < 5e6; i++) { s += i; }
text(String(s));`,
    expected: '12499997500000',
  },
  { id: 'W5', title: "text('ok') alone", program: "text('ok');", expected: 'ok' },
];

/** The peer bench's host tools: they answer at once, so only the runtime's overhead is timed. */
const TOOL_ANSWERS: BareTools = {
  get_inventory: ({ sku }) => ({ sku, available_units: 40, warehouse: 'ams-1' }),
  get_demand: ({ sku }) => ({ sku, requested_units: 55 }),
};

const HOST_TOOLS: Record<string, HostTool> = Object.fromEntries(
  Object.entries(TOOL_ANSWERS).map(([name, answer]) => [name, { json: true, run: (args: unknown) => answer(args as { sku: string }) }]),
);

function expectResult(workload: Workload, how: string, result: string | undefined): void {
  if (result !== workload.expected) throw new Error(`${workload.id} ${how}: expected ${workload.expected}, got ${JSON.stringify(result)}`);
}

/** One run of the workload in plain isolated-vm, a fresh isolate for it (the floor). */
export async function runBare(workload: Workload): Promise<void> {
  expectResult(workload, 'bare isolated-vm', await bareRunProgram(workload.program, TOOL_ANSWERS));
}

/** One run through `runProgram`: a fresh isolate with every default limit armed, in this process. */
export async function runInProcess(workload: Workload): Promise<void> {
  const run = await runProgram(workload.program, { tools: HOST_TOOLS });
  expectResult(workload, 'runProgram', run.status === 'completed' ? run.result : JSON.stringify(run.error));
}

/**
 * A pool of one supervised worker process driven as the server drives it: start, then resume
 * with every call recorded so far after each pause, then dispose.
 */
export async function startWorkerRunner(): Promise<{ run: (workload: Workload) => Promise<void>; close: () => Promise<void> }> {
  const pool = new WorkerPool({
    size: 1,
    runtime: DEFAULT_CACHE,
    heartbeatMs: 500,
    heartbeatTimeoutMs: 5_000,
    maxRssBytes: 1536 * 1024 * 1024,
    maxIdleCpuShare: 0.5,
  });
  await pool.ready();
  const tools = Object.keys(TOOL_ANSWERS).map((name) => ({ name, parseOutputAsJson: true }));
  let programs = 0;
  return {
    run: async (workload) => {
      const id = `bench-${++programs}`;
      const spec: ProgramSpec = { code: workload.program, tools, seed: 1, clock: 1_700_000_000_000, limits: DEFAULT_LIMITS };
      const recorded: RecordedCall[] = [];
      let event: ProgramEvent = await pool.start(id, spec);
      while (event.type === 'paused') {
        for (const call of event.calls) {
          const output = JSON.stringify(TOOL_ANSWERS[call.tool]!(JSON.parse(call.argumentsJson) as { sku: string }));
          recorded[call.seq] = { tool: call.tool, argumentsJson: call.argumentsJson, output };
        }
        ({ event } = await pool.resume(id, spec, recorded));
      }
      pool.dispose(id);
      expectResult(workload, 'worker process', event.type === 'completed' ? event.result : JSON.stringify(event));
    },
    close: () => pool.close(),
  };
}

/**
 * A replay of the whole workload from its record: the calls and outputs of one live run are
 * recorded first (untimed), then each `run` resumes a program id never seen by this runtime
 * with all of them, so it re-runs the program in a fresh isolate feeding it its record to the
 * end. Fails unless that is a replay that completes with the workload's answer.
 */
export async function startReplayRunner(workload: Workload): Promise<{ run: () => Promise<void>; calls: number; close: () => Promise<void> }> {
  const runtime = new ProgramRuntime(DEFAULT_CACHE);
  const tools = Object.keys(TOOL_ANSWERS).map((name) => ({ name, parseOutputAsJson: true }));
  const spec: ProgramSpec = { code: workload.program, tools, seed: 1, clock: 1_700_000_000_000, limits: DEFAULT_LIMITS };
  const recorded: RecordedCall[] = [];
  let event: ProgramEvent = await runtime.start('record', spec);
  while (event.type === 'paused') {
    for (const call of event.calls) {
      recorded[call.seq] = {
        tool: call.tool,
        argumentsJson: call.argumentsJson,
        output: JSON.stringify(TOOL_ANSWERS[call.tool]!(JSON.parse(call.argumentsJson) as { sku: string })),
      };
    }
    ({ event } = await runtime.resume('record', spec, recorded));
  }
  runtime.dispose('record');
  expectResult(workload, 'recording', event.type === 'completed' ? event.result : JSON.stringify(event));
  let replays = 0;
  return {
    calls: recorded.length,
    run: async () => {
      const id = `replay-${++replays}`;
      const { event: replayed, path } = await runtime.resume(id, spec, recorded);
      if (path !== 'replay') throw new Error(`${workload.id} replay: served by ${path}`);
      runtime.dispose(id);
      expectResult(workload, 'replay', replayed.type === 'completed' ? replayed.result : JSON.stringify(replayed));
    },
    close: () => runtime.close(),
  };
}
