import { readFileSync } from 'node:fs';

/**
 * Whether a process is stopped by a signal (state `T` in `/proc/<pid>/stat`, Linux). False when
 * it cannot be read: not Linux, or the process is gone.
 */
export function isStopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] === 'T';
  } catch {
    return false;
  }
}

/** The kernel's clock ticks per second (USER_HZ), in which /proc reports CPU time. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU milliseconds (user + system) from a /proc `stat` file: `/proc/<pid>/stat` for a process,
 * `/proc/self/task/<tid>/stat` for one of this process's threads (Linux). Undefined when it
 * cannot be read: not Linux, or the process or thread is gone.
 */
export function cpuMsFromStat(path: string): number | undefined {
  try {
    const stat = readFileSync(path, 'utf8');
    // Fields after the command name (which may hold spaces) start after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
