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
/** Since when the process awaits its next step (spinUntilNextStep), until one begins (performance.now()). */
let awaitingSince: number | undefined;
/** Whether the step last awaited began within the time it was awaited awake: only then is the next awaited so. */
let nextStepCamePromptly = true;

/** How many steps of programs this process runs now. */
export function stepsRunning(): number {
  return running;
}

/** Whether this module keeps the event loop turning now (for tests, which cannot tell its immediates from others). */
export function keepsLoopTurning(): boolean {
  return turning !== undefined;
}

function turn(): void {
  // One step running (spinWhileStepRuns), or none while the process awaits its next (spinUntilNextStep).
  turning = running <= 1 && performance.now() < turnUntil ? setImmediate(turn) : undefined;
}

/** Keeps the loop turning until `until` (performance.now()), from now on if it does not turn yet. */
function keepTurningUntil(until: number): void {
  turnUntil = until;
  turning ??= setImmediate(turn);
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
  if (awaitingSince !== undefined) {
    nextStepCamePromptly = performance.now() - awaitingSince <= spinMs;
    awaitingSince = undefined;
  }
  running += 1;
  stopTurning();
  const step = new RunningStep(spinMs);
  step.handOver();
  return step;
}

/**
 * A step as spinWhileStepRuns marks it. A class rather than closures made per step: run through
 * tsx (`npm start`, the benches), each closure named by its binding is renamed as it is made (tsx
 * keeps names): these two and the two of IsolateProgram's runaway watch were 3 % of a light
 * program's samples in its profile.
 */
class RunningStep implements SpinningStep {
  readonly #spinMs: number;
  #ended = false;

  constructor(spinMs: number) {
    this.#spinMs = spinMs;
  }

  handOver(): void {
    if (this.#ended || running !== 1 || !(this.#spinMs > 0) || confinedToOneCpu()) return;
    keepTurningUntil(performance.now() + this.#spinMs);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    running -= 1;
    stopTurning();
  }
}

/**
 * Keeps this thread's event loop turning for up to `spinMs` while no step runs, for a process that
 * has just handed a paused program back and may get its resume at once: a worker process, whose
 * server sends a program's answers as soon as it has them (a client whose tools answer at once, a
 * caller driving the engine in a loop). Sleeping meanwhile, the worker's CPU goes idle, and the
 * server's next message has to wake it, as a hand-back from isolated-vm's thread would
 * (spinWhileStepRuns). The first step to begin ends it (spinWhileStepRuns).
 *
 * Only while the steps awaited so come within `spinMs`: once one comes later (a client over HTTP
 * that thinks between its calls), the next is awaited asleep, and so on until one comes within it
 * again; the wait costs no CPU where it would buy nothing. Never with a step running, nor where
 * this thread is confined to one CPU (a pinned worker), which the server's own work may need.
 */
export function spinUntilNextStep(spinMs: number): void {
  awaitingSince = performance.now();
  if (!nextStepCamePromptly || running !== 0 || !(spinMs > 0) || confinedToOneCpu()) return;
  keepTurningUntil(awaitingSince + spinMs);
}
