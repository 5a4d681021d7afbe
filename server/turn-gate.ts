import { ApiError } from './api-error.ts';

export interface TurnGateOptions {
  /** Turns running at once. */
  readonly maxConcurrent: number;
  /** Turns waiting for a place; one more is answered 429. */
  readonly maxQueued: number;
  /** What `retry-after-ms` tells a client turned away. */
  readonly retryAfterMs: number;
}

/**
 * Backpressure: a bound on turns running at once and on turns waiting, so that load beyond
 * what the workers can run is answered at once with a 429 and `retry-after` (which the SDK
 * honours when it retries) instead of an unbounded queue or a crash.
 */
export class TurnGate {
  readonly #options: TurnGateOptions;
  readonly #waiting: (() => void)[] = [];
  #running = 0;
  #turnedAway = 0;

  constructor(options: TurnGateOptions) {
    this.#options = options;
  }

  get stats(): { running: number; waiting: number; turnedAway: number } {
    return { running: this.#running, waiting: this.#waiting.length, turnedAway: this.#turnedAway };
  }

  /**
   * A place to run a turn: the promise resolves with its release once there is one. Throws the
   * 429 at once (not through the promise) when the queue is full, so a background request is
   * turned away before it is accepted.
   */
  enter(): Promise<() => void> {
    let waiting: Promise<void> = Promise.resolve();
    if (this.#running >= this.#options.maxConcurrent) {
      if (this.#waiting.length >= this.#options.maxQueued) {
        this.#turnedAway += 1;
        const { retryAfterMs } = this.#options;
        throw new ApiError(
          'server_busy',
          `The emulator is running ${this.#running} turns with ${this.#waiting.length} waiting (PTC_MAX_CONCURRENT_TURNS, PTC_MAX_QUEUED_TURNS); retry after ${retryAfterMs} ms.`,
          null,
          { 'retry-after-ms': String(retryAfterMs), 'retry-after': String(Math.ceil(retryAfterMs / 1000)) },
        );
      }
      waiting = new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running += 1;
    }
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      // The place passes to the next waiter, or is freed.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running -= 1;
    };
    return waiting.then(() => release);
  }
}
