import { randomInt } from 'node:crypto';
import { IsolateProgram } from './isolate-program.ts';
import { resolveLimits, type ProgramLimits } from './limits.ts';
import type { ProgramEvent, ProgramFailure, ProgramStats, ToolCallRequest } from './program-events.ts';
import { sharedWarmIsolates } from './warm-isolates.ts';

/**
 * A host tool for `runProgram`: `json` tools hand the program parsed JSON (as `output_schema`
 * does); `text` tools take one string, and `run` receives it as it is.
 */
export interface HostTool {
  readonly json?: boolean;
  readonly text?: boolean;
  readonly run: (args: unknown) => unknown;
}

export interface RunProgramOptions {
  readonly tools?: Readonly<Record<string, HostTool>>;
  readonly limits?: Partial<ProgramLimits>;
  readonly seed?: number;
  readonly clock?: number;
  /** How long, at most, each step keeps the event loop turning while it runs alone (ProgramRuntimeOptions.spinWaitMs). */
  readonly spinWaitMs?: number;
}

export interface RunProgramResult {
  readonly status: 'completed' | 'incomplete';
  readonly result?: string;
  readonly error?: ProgramFailure;
  readonly calls: readonly ToolCallRequest[];
  readonly stats: ProgramStats;
}

/**
 * Resolves once the isolates `runProgram` takes from (made ahead, shared by the process) are
 * made: for a caller between programs, so that the next ones start without making their own.
 * Resolves at once when they are, and never waits on what cannot be made (see WarmIsolates.whenFull).
 */
export function isolatesReady(): Promise<void> {
  return sharedWarmIsolates().whenFull();
}

/**
 * Runs a program to the end in a fresh isolate, answering its calls with host functions.
 * The library entry point for sandbox experiments; the server drives `ProgramRuntime` instead,
 * because there the answers come from the client in later requests.
 */
export async function runProgram(code: string, options: RunProgramOptions = {}): Promise<RunProgramResult> {
  const tools = options.tools ?? {};
  const program = new IsolateProgram(
    {
      code,
      tools: Object.entries(tools).map(([name, tool]) => ({
        name,
        ...(tool.text === true ? { input: 'text' as const } : {}),
        parseOutputAsJson: tool.json === true,
      })),
      seed: options.seed ?? randomInt(2 ** 32),
      clock: options.clock ?? Date.now(),
      limits: resolveLimits(options.limits),
      // Isolates made ahead and shared by every runProgram of the process: each is still fresh,
      // taken by one program only.
    },
    sharedWarmIsolates(),
    options.spinWaitMs === undefined ? {} : { spinWaitMs: options.spinWaitMs },
  );
  const calls: ToolCallRequest[] = [];
  let event: ProgramEvent = await program.start();
  try {
    while (event.type === 'paused') {
      calls.push(...event.calls);
      const outputs = await Promise.all(
        event.calls.map(async (call) => {
          const tool = tools[call.tool]!;
          try {
            const value = await tool.run(tool.text === true ? call.argumentsJson : JSON.parse(call.argumentsJson));
            return { seq: call.seq, output: typeof value === 'string' ? value : JSON.stringify(value) };
          } catch (error) {
            // A host tool that throws fails the program's call: it rejects with an Error of this message.
            return { seq: call.seq, output: '', error: error instanceof Error ? error.message : String(error) };
          }
        }),
      );
      event = await program.resume(outputs);
    }
  } finally {
    program.dispose();
  }
  return event.type === 'completed'
    ? { status: 'completed', result: event.result, calls, stats: event.stats }
    : { status: 'incomplete', error: event.error, calls, stats: event.stats };
}
