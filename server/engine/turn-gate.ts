import { ApiError } from '../platform/api-error.ts';

export interface TurnGateOptions {
  /** Turns running at once. */
  readonly maxConcurrent: number;
  /** Turns waiting for a place; one more is answered 429 (new work is refused at half). */
  readonly maxQueued: number;
  /** What `retry-after-ms` tells a client turned away. */
  readonly retryAfterMs: number;
}

/**
 * Work already under way: a continuation (a program or calls waiting on its outputs) or a
 * retry of a request turned away. It may use the whole queue and is served first; new work
 * may use half of it, so that under overload new conversations are refused before those in
 * progress starve.
 */
export type TurnPriority = 'in_progress' | 'new';

/**
 * Backpressure: a bound on turns running at once and on turns waiting, so that load beyond
 * what the workers can run is answered at once with a 429 and `retry-after` (which the SDK
 * honours when it retries) instead of an unbounded queue or a crash.
 */
export class TurnGate {
  readonly #options: TurnGateOptions;
  readonly #waiting: Record<TurnPriority, (() => void)[]> = { in_progress: [], new: [] };
  #running = 0;
  #turnedAway = 0;

  constructor(options: TurnGateOptions) {
    this.#options = options;
  }

  get stats(): { running: number; waiting: number; turnedAway: number } {
    return { running: this.#running, waiting: this.#queued(), turnedAway: this.#turnedAway };
  }

  #queued(): number {
    return this.#waiting.in_progress.length + this.#waiting.new.length;
  }

  /**
   * A place to run a turn: the promise resolves with its release once there is one. Throws the
   * 429 at once (not through the promise) when the queue is full, so a background request is
   * turned away before it is accepted.
   */
  enter(priority: TurnPriority): Promise<() => void> {
    let waiting: Promise<void> = Promise.resolve();
    if (this.#running >= this.#options.maxConcurrent) {
      const room = priority === 'in_progress' ? this.#options.maxQueued : Math.floor(this.#options.maxQueued / 2);
      if (this.#queued() >= room) {
        this.#turnedAway += 1;
        const { retryAfterMs } = this.#options;
        throw new ApiError(
          'server_busy',
          `The emulator is running ${this.#running} turns with ${this.#queued()} waiting (PTC_MAX_CONCURRENT_TURNS, PTC_MAX_QUEUED_TURNS); retry after ${retryAfterMs} ms.`,
          null,
          { 'retry-after-ms': String(retryAfterMs), 'retry-after': String(Math.ceil(retryAfterMs / 1000)) },
        );
      }
      waiting = new Promise<void>((resolve) => this.#waiting[priority].push(resolve));
    } else {
      this.#running += 1;
    }
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      // The place passes to the next waiter, work in progress first, or is freed.
      const next = this.#waiting.in_progress.shift() ?? this.#waiting.new.shift();
      if (next) next();
      else this.#running -= 1;
    };
    return waiting.then(() => release);
  }
}
