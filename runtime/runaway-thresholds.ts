import type { RunawayLimit } from './errors.ts';

/**
 * What is done about a step past a limit without ending (see IsolateProgram.runaway), by how long
 * it is past it. In process, the step ends at `freeze` (IsolateProgram's #watchForRunaway): its
 * isolate is disposed, and what still runs of it is left to isolated-vm's thread. In a worker,
 * the supervisor does it. The worker reports every such step (so that whatever kills the
 * worker, that step is known for the cause); at `freeze` the supervisor freezes the worker
 * (WorkerProcess.frozen); past `kill` it kills the worker for it, rather than at the step's
 * hard deadline or for its memory, and only that step ends for it. The step's answer comes
 * with the kill: a client sending runaways one after another gets one answer per runaway every
 * `kill` or so, so the others pay a worker's start (about a third of a core-second) that often,
 * not every few hundred milliseconds.
 * - `wall_time`: isolated-vm's timeout stops a step at its limit within milliseconds, unless a
 *   native loop ignores it (an ICU call, `indexOf` over a huge array-like), which goes on for good.
 * - `memory`: a call into an isolate disposed at its heap limit ends once the native operation
 *   it was in returns (flattening a 2 ** 24-character rope takes 1.3 s after the disposal here;
 *   an ICU call may never return). The step's outcome is settled at the disposal: a call that
 *   returns within 250 ms keeps its worker.
 */
export const RUNAWAY_THRESHOLDS_MS: Readonly<Record<RunawayLimit, { readonly freeze: number; readonly kill: number }>> = {
  // A step its timeout stops is over its limit for a few milliseconds before it ends: a report
  // of it is no reason to freeze its worker.
  wall_time: { freeze: 200, kill: 1_000 },
  memory: { freeze: 250, kill: 6_000 },
};
