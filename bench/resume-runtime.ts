import type { ProgramEvent, RecordedCall, ToolCallRequest } from '../runtime/program-events.ts';
import { ProgramRuntime, type ResumePath } from '../runtime/program-runtime.ts';
import { DEFAULT_CACHE, expectedArguments, loopSpec, toolOutput, TOOL, type ResumeSchedule } from './resume-program.ts';
import { measureStaged } from './staged-measure.ts';

export interface PathSamples {
  readonly warm: number[];
  readonly replay: number[];
}

type Progress = (message: string) => void;

/** Fails unless the program is paused on exactly one call: the loop's call `seq`. */
function expectPausedEvent(label: string, event: ProgramEvent, seq: number): ToolCallRequest {
  const call = event.type === 'paused' && event.calls.length === 1 ? event.calls[0] : undefined;
  if (!call || call.seq !== seq || call.tool !== TOOL || call.argumentsJson !== expectedArguments(seq)) {
    const got = event.type === 'paused' ? `paused on ${JSON.stringify(event.calls)}` : JSON.stringify(event);
    throw new Error(`${label}: expected the program paused on call ${seq} ${TOOL}(${expectedArguments(seq)}), got ${got}`);
  }
  return call;
}

/** Fails unless a resume was served by `path` and came back paused on the loop's call `seq`. */
function expectPausedOn(label: string, result: { event: ProgramEvent; path: ResumePath }, path: ResumePath, seq: number): void {
  if (result.path !== path) throw new Error(`${label}: expected a ${path} resume, got ${result.path}`);
  expectPausedEvent(label, result.event, seq);
}

/**
 * The loop program's history as a live run makes it: `count` calls, each with its output,
 * recorded by starting the program and resuming its paused isolate call after call (every one
 * of those resumes must be warm, which checks the warm path before anything is timed).
 */
async function recordHistory(runtime: ProgramRuntime, maxEarlierCalls: number, count: number): Promise<RecordedCall[]> {
  const id = 'record';
  const spec = loopSpec(maxEarlierCalls);
  const history: RecordedCall[] = [];
  let event = await runtime.start(id, spec);
  for (;;) {
    const call = expectPausedEvent('recording the history', event, history.length);
    history.push({ tool: call.tool, argumentsJson: call.argumentsJson, output: toolOutput(call.seq) });
    if (history.length === count) break;
    const result = await runtime.resume(id, spec, history);
    if (result.path !== 'warm') throw new Error(`recording the history: resume ${history.length} was ${result.path}, expected warm`);
    event = result.event;
  }
  runtime.dispose(id);
  return history;
}

/**
 * Table 1, in process: for each N, the timed `ProgramRuntime.resume` with a history of N+1 calls
 * (N earlier calls answered before, and the output of the call the program is paused on),
 * served warm (the isolate paused there, put there untimed by a replay of the first N calls)
 * and by replay (a fresh program id each iteration, so nothing is cached; disposed untimed).
 * Either way the program must come back paused on call N+1.
 */
export async function measureRuntimeResume(schedule: readonly ResumeSchedule[], progress: Progress): Promise<Map<number, PathSamples>> {
  const maxEarlierCalls = Math.max(...schedule.map((row) => row.earlierCalls));
  const spec = loopSpec(maxEarlierCalls);
  const runtime = new ProgramRuntime(DEFAULT_CACHE);
  const results = new Map<number, PathSamples>();
  try {
    progress(`runtime: recording a history of ${maxEarlierCalls + 1} calls`);
    const history = await recordHistory(runtime, maxEarlierCalls, maxEarlierCalls + 1);
    for (const { earlierCalls: n, warmup, iterations } of schedule) {
      const before = history.slice(0, n);
      const through = history.slice(0, n + 1);

      progress(`runtime: warm resume, N=${n}`);
      const warmId = `warm-${n}`;
      const warm = await measureStaged(
        async () => {
          runtime.dispose(warmId);
          expectPausedOn(`runtime warm set-up N=${n}`, await runtime.resume(warmId, spec, before), 'replay', n);
          return {
            timed: () => runtime.resume(warmId, spec, through),
            check: (result) => expectPausedOn(`runtime warm N=${n}`, result, 'warm', n + 1),
          };
        },
        { warmup, iterations },
      );
      runtime.dispose(warmId);

      progress(`runtime: replay resume, N=${n}`);
      let fresh = 0;
      const replay = await measureStaged(
        async () => {
          const replayId = `replay-${n}-${fresh++}`;
          return {
            timed: () => runtime.resume(replayId, spec, through),
            check: (result) => {
              runtime.dispose(replayId);
              expectPausedOn(`runtime replay N=${n}`, result, 'replay', n + 1);
            },
          };
        },
        { warmup, iterations },
      );

      results.set(n, { warm, replay });
    }
    // Every timed warm resume, every set-up replay and every timed replay, counted by the runtime itself.
    const stats = runtime.stats();
    const timed = schedule.reduce((sum, row) => sum + row.warmup + row.iterations, 0);
    if (
      stats.resumes.warm !== timed + maxEarlierCalls ||
      stats.resumes.replay !== 2 * timed ||
      stats.evictions.count + stats.evictions.memory + stats.evictions.ttl !== 0
    ) {
      throw new Error(`runtime: unexpected resume counts ${JSON.stringify(stats)} for ${timed} timed resumes per path`);
    }
    return results;
  } finally {
    await runtime.close();
  }
}
