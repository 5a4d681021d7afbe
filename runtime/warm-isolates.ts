import { DEFAULT_LIMITS } from './limits.ts';
import { prepareIsolate, warmUp, type PreparedIsolate } from './prepared-isolate.ts';

/** How many isolates a runtime keeps made ahead when not told (PTC_WARM_ISOLATES's default). */
export const DEFAULT_WARM_ISOLATES = 2;

/** An isolate made ahead and not taken within this long is disposed: it would only hold memory. */
export const WARM_ISOLATE_IDLE_MS = 30_000;

/**
 * Isolates are made ahead on their own only once no step has run for this long. A program's steps
 * come in bursts a pause apart (a worker's pause is an IPC round trip, well under a millisecond
 * when the tools answer at once): made in such a gap, an isolate makes the resume that arrives
 * wait behind it (2 ms of every 30 in a worker running 50 sequential calls, before this rule).
 */
const FILL_AFTER_IDLE_MS = 2;

const MIB = 1024 * 1024;

export interface WarmIsolatesOptions {
  /**
   * The memory limit (MiB) isolates are made for until a program asks for another: the limit
   * programs are expected to run with. Default DEFAULT_LIMITS.memoryMb.
   */
  readonly memoryMb?: number;
  /** The memory this process may still take, in bytes (default process.availableMemory()): see WarmIsolates. */
  readonly availableBytes?: () => number;
}

/** What a pool has done, for tests and metrics. */
export interface WarmIsolatesStats {
  /** Waiting now. */
  readonly ready: number;
  /** Made ahead so far. */
  readonly made: number;
  /** Handed to a program so far (each once). */
  readonly taken: number;
}

/**
 * Isolates made ahead of demand, so that starting a program does not wait for an isolate, its
 * context and the prelude (most of a light program's cost). Each is fresh: made for one
 * program, handed out once, never given back; nothing of a request is in it before it is
 * taken. At most `size` wait at any time, for one memory limit (the last a program asked for,
 * or `memoryMb` before any did), and no more than the memory this process may still take would
 * hold at that limit: each is made for a program that may grow to it. One not taken within
 * WARM_ISOLATE_IDLE_MS is disposed.
 *
 * On their own they are made only while no program step runs here (each step is bracketed by
 * stepBegan and stepEnded), once none has for FILL_AFTER_IDLE_MS: making one takes the thread for
 * a millisecond or two, and a step's replies, or the next step of a program between two pauses,
 * would wait behind it. Under a steady stream of steps none are made and each program makes its
 * own, which costs what it costs without the pool. A caller that knows it is between programs
 * asks for them at once with `whenFull`.
 */
export class WarmIsolates {
  readonly #size: number;
  readonly #idleMs: number;
  readonly #availableBytes: () => number;
  #memoryMb: number;
  /** Each with its warmUp, which a program's first step waits behind if it takes the isolate first. */
  #ready: { readonly prepared: PreparedIsolate; readonly madeAt: number; readonly bound: Promise<void> }[] = [];
  #running = 0;
  /** Steps begun so far: a fill on its own goes on only if none began since it was scheduled. */
  #begun = 0;
  #scheduled = false;
  #filling = false;
  /** whenFull callers: each resolved once the pool is full, or once as many were made as were missing when it asked. */
  #waiters: { missing: number; readonly resolve: () => void }[] = [];
  #closed = false;
  #expiry: NodeJS.Timeout | undefined;
  #made = 0;
  #taken = 0;

  constructor(size: number = DEFAULT_WARM_ISOLATES, idleMs: number = WARM_ISOLATE_IDLE_MS, options: WarmIsolatesOptions = {}) {
    this.#size = size;
    this.#idleMs = idleMs;
    this.#memoryMb = options.memoryMb ?? DEFAULT_LIMITS.memoryMb;
    this.#availableBytes = options.availableBytes ?? (() => process.availableMemory());
  }

  /** A prepared isolate of `memoryMb`, if one is waiting. */
  take(memoryMb: number): PreparedIsolate | undefined {
    if (this.#closed || this.#size === 0) return undefined;
    if (memoryMb !== this.#memoryMb) {
      // Programs now ask for another memory limit: those made for the old one would go unused.
      this.#memoryMb = memoryMb;
      this.#disposeReady();
    }
    const taken = this.#ready.shift()?.prepared;
    if (taken) this.#taken += 1;
    return taken;
  }

  /** A program step starts running in this process. */
  stepBegan(): void {
    this.#running += 1;
    this.#begun += 1;
  }

  /** A program step has ended: once none runs, the pool makes up what was taken. */
  stepEnded(): void {
    this.#running -= 1;
    this.#scheduleIdleFill();
  }

  /**
   * Makes what the pool is short of now, steps running or not, and resolves once it is full:
   * for a caller between programs (isolatesReady). Resolves at once when the pool is full or
   * keeps none; never waits on what cannot be made (a failure, the memory bound, close), nor for
   * more than were missing when it was called, however many programs take meanwhile.
   */
  whenFull(): Promise<void> {
    const missing = this.#size - this.#ready.length;
    if (this.#closed || missing <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#waiters.push({ missing, resolve });
      void this.#fill();
    });
  }

  /** How many wait now (for tests and metrics). */
  get ready(): number {
    return this.#ready.length;
  }

  stats(): WarmIsolatesStats {
    return { ready: this.#ready.length, made: this.#made, taken: this.#taken };
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#expiry);
    this.#disposeReady();
    this.#releaseWaiters();
  }

  /**
   * Whether the memory this process may still take holds `count` programs at their limit: read
   * once per isolate about to be made (reading it costs 15 µs or more, too much to ask on every
   * whenFull).
   */
  #memoryHolds(count: number): boolean {
    return this.#availableBytes() >= count * this.#memoryMb * MIB;
  }

  /** A fill on its own, FILL_AFTER_IDLE_MS after the last step, if none began meanwhile. */
  #scheduleIdleFill(): void {
    if (this.#scheduled || this.#filling || this.#closed || this.#ready.length >= this.#size) return;
    this.#scheduled = true;
    const begun = this.#begun;
    setTimeout(() => {
      this.#scheduled = false;
      if (this.#running > 0) return;
      // A step began and ended meanwhile: the quiet time counts from its end.
      if (this.#begun !== begun) return this.#scheduleIdleFill();
      void this.#fill();
    }, FILL_AFTER_IDLE_MS).unref();
  }

  /**
   * Makes isolates one per turn of the event loop while the pool is short: for as long as a
   * whenFull caller waits, else only while no step begins (a message that arrived while one was
   * made has started its step by the time the next turn comes). Each is warmed up on an
   * isolated-vm thread (warmUp) while the next is made on this one.
   */
  async #fill(): Promise<void> {
    if (this.#filling) return;
    this.#filling = true;
    let waitForQuiet = false;
    try {
      let begun = this.#begun;
      while (!this.#closed && this.#ready.length < this.#size && this.#memoryHolds(this.#ready.length + 1)) {
        if (this.#waiters.length === 0 && (this.#running > 0 || this.#begun !== begun)) {
          // Left to itself, the pool waits for the next quiet time (a step that ends later schedules it).
          waitForQuiet = this.#running === 0;
          break;
        }
        begun = this.#begun;
        const memoryMb = this.#memoryMb;
        let prepared: PreparedIsolate;
        try {
          prepared = prepareIsolate(memoryMb);
        } catch {
          // A failure to make one ahead (out of memory, say) costs nothing: the next program makes its own.
          break;
        }
        // An isolate disposed meanwhile (taken and ended, expired, closed) fails its binding: nothing lost.
        const bound = warmUp(prepared).catch(() => {});
        this.#ready.push({ prepared, madeAt: performance.now(), bound });
        this.#made += 1;
        this.#armExpiry();
        for (const waiter of this.#waiters) waiter.missing -= 1;
        this.#releaseWaiters(this.#ready.length >= this.#size);
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#filling = false;
      // Whatever stopped the fill, no caller waits on it any longer.
      this.#releaseWaiters(true);
    }
    if (waitForQuiet) this.#scheduleIdleFill();
  }

  /** Resolves the waiters that have what they asked for (all of them when `all`), once what waits is bound to its thread. */
  #releaseWaiters(all = true): void {
    const waiting = this.#waiters;
    this.#waiters = all ? [] : waiting.filter((waiter) => waiter.missing > 0);
    const released = waiting.filter((waiter) => all || waiter.missing <= 0);
    if (released.length === 0) return;
    void Promise.all(this.#ready.map((entry) => entry.bound)).then(() => {
      for (const waiter of released) waiter.resolve();
    });
  }

  /** Disposes the isolates waiting longer than the idle time, checking again while some wait. */
  #armExpiry(): void {
    if (this.#expiry !== undefined) return;
    this.#expiry = setTimeout(() => {
      this.#expiry = undefined;
      const now = performance.now();
      while (this.#ready.length > 0 && now - this.#ready[0]!.madeAt >= this.#idleMs) this.#ready.shift()!.prepared.isolate.dispose();
      if (this.#ready.length > 0) this.#armExpiry();
    }, this.#idleMs / 2);
    this.#expiry.unref();
  }

  #disposeReady(): void {
    for (const { prepared } of this.#ready.splice(0)) if (!prepared.isolate.isDisposed) prepared.isolate.dispose();
  }
}

let shared: WarmIsolates | undefined;

/** The isolates `runProgram` takes from, made on first use and shared by every call in the process. */
export function sharedWarmIsolates(): WarmIsolates {
  shared ??= new WarmIsolates();
  return shared;
}
