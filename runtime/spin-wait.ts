import { performance } from 'node:perf_hooks';
import { confinedToOneCpu } from './one-cpu.ts';

/**
 * How long, by default, a step keeps this thread's event loop turning while it waits for
 * isolated-vm's thread (spinWhileStepRuns). Most steps of a light program take 0.1 to 0.5 ms.
 */
export const DEFAULT_SPIN_WAIT_MS = 1;
/** The most a step may be given: beyond, the step is no light one, and its wait is not worth a CPU. */
export const MAX_SPIN_WAIT_MS = 100;

/** The steps of this process running now. */
let running = 0;
/** The immediate that keeps the event loop turning, while one does. */
let turning: NodeJS.Immediate | undefined;
/** When the loop stops turning, whatever still runs (performance.now()). */
let turnUntil = 0;

function turn(): void {
  turning = running === 1 && performance.now() < turnUntil ? setImmediate(turn) : undefined;
}

function stopTurning(): void {
  if (turning === undefined) return;
  clearImmediate(turning);
  turning = undefined;
}

/**
 * Marks a step of a program as running in this process until the returned function is called,
 * and while it is the only one, keeps this thread's event loop turning (one immediate after
 * another, every I/O event still served at each turn) for up to `spinMs` instead of letting it
 * sleep in the kernel.
 *
 * A step hands its isolate to isolated-vm's thread and waits for it to hand it back. When this
 * thread sleeps meanwhile, its CPU goes idle, and the hand-back must wake it: on a virtual machine
 * without halt polling that goes through the hypervisor, and cost a light program here 60-90 µs
 * a step (README, "Waiting awake for a step"). Kept turning, the thread sees the hand-back at its
 * next turn. What it costs is this thread's CPU for as long as the step runs, up to `spinMs`:
 * so never while another step of the process runs (their threads need the CPUs), nor where this
 * thread is confined to one CPU, which isolated-vm's thread would have to share with it.
 */
export function spinWhileStepRuns(spinMs: number): () => void {
  running += 1;
  stopTurning();
  if (running === 1 && spinMs > 0 && !confinedToOneCpu()) {
    turnUntil = performance.now() + spinMs;
    turning = setImmediate(turn);
  }
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    running -= 1;
    stopTurning();
  };
}
