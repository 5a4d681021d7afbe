import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * Why workers are pinned, each to one CPU: a program's steps run on isolated-vm's threads and
 * its replies are read on the worker's main thread, so every step hands the isolate from one
 * thread to the other and back. When those threads sit on different CPUs, each hand-over wakes
 * a CPU that went idle; on a virtual machine that is a trip through the hypervisor (an
 * asynchronous call into an isolate took 91 µs on this project's idle 2-core KVM guest, 14 µs
 * with all its threads on one CPU). On one CPU the hand-over is a switch between two threads.
 *
 * Pinning takes a worker's isolates off every other CPU, so it is done only where the pool
 * fills the CPUs evenly (see cpusToPinTo); anywhere else the kernel places the workers.
 */

/** How long taskset may take before the worker is left unpinned. */
const TASKSET_TIMEOUT_MS = 5_000;

/** The CPUs of a kernel CPU list ("0-3,8,10-11"), in order; undefined when it is not one. */
export function parseCpuList(list: string): number[] | undefined {
  const cpus: number[] = [];
  for (const range of list.trim().split(',')) {
    const match = /^(\d+)(?:-(\d+))?$/.exec(range);
    if (!match) return undefined;
    const from = Number(match[1]);
    const to = match[2] === undefined ? from : Number(match[2]);
    if (to < from) return undefined;
    for (let cpu = from; cpu <= to; cpu++) cpus.push(cpu);
  }
  return cpus;
}

/**
 * The CPUs this process may run on (`Cpus_allowed_list` of /proc/self/status: a container's
 * cpuset, or a taskset the server was started under), in order; [] where that cannot be read
 * (not Linux).
 */
export function allowedCpus(): number[] {
  try {
    const list = /^Cpus_allowed_list:\s*(\S+)\s*$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return (list && parseCpuList(list)) || [];
  } catch {
    return [];
  }
}

/**
 * The CPUs a pool of `workers` is pinned to, the worker in slot i to the i-th in turn; [] when it
 * should not be pinned. Only where that fills them evenly: workers a multiple of the CPUs (2 on
 * 2, 4 on 2), and those CPUs all this process has. Fewer workers than CPUs pinned would leave
 * CPUs no isolate may use (isolated-vm runs one worker's isolates on several threads); more, not
 * a multiple, would load some CPUs more than others with no kernel to even them out; and where
 * Node counts fewer CPUs than the affinity mask lists (a CPU quota, as `docker run --cpus`
 * sets, or CPUs offline), the mask's first CPUs are no more this server's than any other's.
 */
export function cpusToPinTo(workers: number, cpus: readonly number[] = allowedCpus(), parallelism: number = availableParallelism()): number[] {
  if (cpus.length < 2 || cpus.length !== parallelism || workers % cpus.length !== 0) return [];
  return [...cpus];
}

/**
 * Pins every thread of process `pid` to `cpu` with taskset(1) (util-linux); the threads it
 * starts later inherit that. Resolves undefined once done, else why not (no taskset, not Linux,
 * a CPU outside the cpuset): the worker then runs where the kernel puts it, though threads
 * taskset reached before it failed may stay pinned.
 */
export function pinToCpu(pid: number, cpu: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('taskset', ['-a', '-c', '-p', String(cpu), String(pid)], { timeout: TASKSET_TIMEOUT_MS }, (error, _stdout, stderr) =>
      resolve(error ? `taskset -a -c -p ${cpu} ${pid} failed: ${String(stderr).trim() || error.message}` : undefined),
    );
  });
}
