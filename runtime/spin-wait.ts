import { performance } from 'node:perf_hooks';
import { confinedToOneCpu } from './one-cpu.ts';

/**
 * How long, by default, a step keeps this thread's event loop turning after it hands its
 * isolate over (spinWhileStepRuns). Most steps of a light program take 0.1 to 0.5 ms.
 */
export const DEFAULT_SPIN_WAIT_MS = 1;
/** The most a step may be given: beyond, the step is no light one, and its wait is not worth a CPU. */
export const MAX_SPIN_WAIT_MS = 100;

/** Throws a RangeError naming `spinWaitMs` unless it is a number of milliseconds from 0 to MAX_SPIN_WAIT_MS. */
export function assertSpinWaitMs(spinWaitMs: number): void {
  if (!(spinWaitMs >= 0 && spinWaitMs <= MAX_SPIN_WAIT_MS)) {
    throw new RangeError(`spinWaitMs must be a number of milliseconds from 0 to ${MAX_SPIN_WAIT_MS}, got ${String(spinWaitMs)}`);
  }
}

/** The steps of this process running now. */
let running = 0;
/** The immediate that keeps the event loop turning, while one does. */
let turning: NodeJS.Immediate | undefined;
/** When the loop stops turning, whatever still runs (performance.now()). */
let turnUntil = 0;

/** How many steps of programs this process runs now. */
export function stepsRunning(): number {
  return running;
}

function turn(): void {
  turning = running === 1 && performance.now() < turnUntil ? setImmediate(turn) : undefined;
}

function stopTurning(): void {
  if (turning === undefined) return;
  clearImmediate(turning);
  turning = undefined;
}

/** A running step, as spinWhileStepRuns marks it. */
export interface SpinningStep {
  /** The step hands its isolate to isolated-vm's thread: the loop turns for `spinMs` from now. */
  handOver(): void;
  /** The step has ended (once; again changes nothing). */
  end(): void;
}

/**
 * Marks a step of a program as running in this process until its `end`, and while it is the only
 * one, keeps this thread's event loop turning (one immediate after another, every I/O event still
 * served at each turn) for up to `spinMs` from its start and from each `handOver`, instead of
 * letting it sleep in the kernel.
 *
 * A step hands its isolate to isolated-vm's thread and waits for it to hand it back. When this
 * thread sleeps meanwhile, its CPU goes idle, and the hand-back must wake it: on a virtual machine
 * without halt polling that goes through the hypervisor, and cost a light program here 60-90 µs
 * a step (README, "Waiting awake for a step"). Kept turning, the thread sees the hand-back at its
 * next turn. What it costs is this thread's CPU while it waits, up to `spinMs` each time: so never
 * while another step of the process runs (their threads need the CPUs), nor where this thread is
 * confined to one CPU, which isolated-vm's thread would have to share with it. The limit counts
 * again from each hand-over, so that a step that first made its isolate on this thread (1-2 ms)
 * still waits awake for the isolate's thread.
 */
export function spinWhileStepRuns(spinMs: number): SpinningStep {
  running += 1;
  stopTurning();
  let ended = false;
  const handOver = (): void => {
    if (ended || running !== 1 || !(spinMs > 0) || confinedToOneCpu()) return;
    turnUntil = performance.now() + spinMs;
    turning ??= setImmediate(turn);
  };
  handOver();
  return {
    handOver,
    end: () => {
      if (ended) return;
      ended = true;
      running -= 1;
      stopTurning();
    },
  };
}
