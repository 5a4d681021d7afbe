import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';

/**
 * How long one reading of this process's CPUs is taken as current. They change when a worker is
 * pinned (runtime/worker/cpu-pinning.ts, once, before its first step) or when a user runs the
 * process under `taskset`: rarely. A reading is a system call (3 µs here), too much per step.
 */
const READ_EVERY_MS = 1_000;

let readAt = Number.NEGATIVE_INFINITY;
let one = false;

/**
 * Whether this thread may run on one CPU only (its affinity, as `taskset` sets it; read at most
 * once a second). isolated-vm's threads then take turns with it on that CPU, and what is cheap
 * across two CPUs (two calls queued together, one wake-up) costs a switch of threads per call.
 */
export function confinedToOneCpu(): boolean {
  const now = performance.now();
  if (now - readAt >= READ_EVERY_MS) {
    one = availableParallelism() === 1;
    readAt = now;
  }
  return one;
}
