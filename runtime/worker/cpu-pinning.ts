import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * Why workers are pinned, each to one CPU: a program's steps run on isolated-vm's threads and
 * its replies are read on the worker's main thread, so every step hands the isolate from one
 * thread to the other and back. When those threads sit on different CPUs, each hand-over wakes
 * a CPU that went idle; on a virtual machine that is a trip through the hypervisor (an
 * asynchronous call into an isolate took 91 µs on this project's idle 2-core KVM guest, 14 µs
 * with all its threads on one CPU). On one CPU the hand-over is a switch between two threads.
 */

/** How long taskset may take before the worker is left unpinned. */
const TASKSET_TIMEOUT_MS = 5_000;

/**
 * The CPUs this process may run on (`Cpus_allowed_list` of /proc/self/status: a container's
 * cpuset, or a taskset the server was started under), in order; [] where that cannot be read
 * (not Linux).
 */
export function allowedCpus(): number[] {
  let status: string;
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    return [];
  }
  const list = /^Cpus_allowed_list:\s*(\S+)\s*$/m.exec(status)?.[1];
  if (!list) return [];
  const cpus: number[] = [];
  for (const range of list.split(',')) {
    const [from, to = from] = range.split('-').map(Number);
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to)) return [];
    for (let cpu = from!; cpu <= to!; cpu++) cpus.push(cpu);
  }
  return cpus;
}

/**
 * Pins every thread of process `pid` to `cpu` with taskset(1) (util-linux); the threads it
 * starts later inherit that. Resolves false, and changes nothing, where taskset is missing or
 * refuses (not Linux, a CPU outside the cpuset): the worker then runs where the kernel puts it.
 */
export function pinToCpu(pid: number, cpu: number): Promise<boolean> {
  return new Promise((resolve) => {
    execFile('taskset', ['--all-tasks', '--cpu-list', '--pid', String(cpu), String(pid)], { timeout: TASKSET_TIMEOUT_MS }, (error) => resolve(!error));
  });
}
