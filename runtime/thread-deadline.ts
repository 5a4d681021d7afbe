import { cpuMsFromStat } from './proc-stat.ts';

/**
 * The deadline of a job a thread runs beside the loop (a schema compiled, an autopilot plan):
 * counted in the thread's own CPU time from when it starts the job (Linux), so that on a busy
 * machine, or at the thread's lower priority (thread-priority.ts), honest work waiting for a core
 * is not failed for the wait; in wall time where that cannot be read. WALL_TIME_FACTOR times the
 * deadline in wall time ends a job however starved its thread is.
 */

/** A job also ends after this many times its deadline in wall time, however little CPU it got. */
export const WALL_TIME_FACTOR = 10;

/** CPU milliseconds a thread of this process has used (Linux); undefined if unreadable. */
const threadCpuMs = (threadId: number): number | undefined => cpuMsFromStat(`/proc/self/task/${threadId}/stat`);

/** How often a running job's CPU time is read: often enough that a deadline is kept to ~10%. */
function pollMs(deadlineMs: number): number {
  return Math.max(10, Math.min(100, Math.round(deadlineMs / 10)));
}

/**
 * Watches a job that thread `threadId` starts now; `expire` is called once, with how the deadline
 * was measured (`2000 ms of CPU time`), if the job runs past it. Returns what stops watching.
 */
export function watchThreadDeadline(threadId: number | undefined, deadlineMs: number, expire: (measure: string) => void): () => void {
  const startedAt = Date.now();
  const cpuAtStart = threadId === undefined ? undefined : threadCpuMs(threadId);
  const timer = setInterval(() => {
    const wallMs = Date.now() - startedAt;
    const cpuNow = cpuAtStart === undefined ? undefined : threadCpuMs(threadId!);
    if (cpuNow === undefined ? wallMs >= deadlineMs : cpuNow - cpuAtStart! >= deadlineMs) {
      clearInterval(timer);
      expire(cpuNow === undefined ? `${deadlineMs} ms` : `${deadlineMs} ms of CPU time`);
    } else if (wallMs >= WALL_TIME_FACTOR * deadlineMs) {
      clearInterval(timer);
      expire(`${wallMs} ms (its thread was starved of CPU)`);
    }
  }, pollMs(deadlineMs));
  return () => clearInterval(timer);
}
