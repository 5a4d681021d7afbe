import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';

const PRELUDE_SOURCE = readFileSync(new URL('./guest-prelude.js', import.meta.url), 'utf8');

/** An isolate with its context and the prelude compiled and run: ready for one program's config. */
export interface PreparedIsolate {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  /** The prelude, compiled in this isolate (a strict-parameters checker runs it once more). */
  readonly script: ivm.Script;
  /** The prelude's installer: takes the program's config (JSON) and returns its dispatcher. */
  readonly install: ivm.Reference<(configJson: string) => unknown>;
}

/** How many isolates a runtime keeps made ahead when not told (PTC_WARM_ISOLATES's default). */
export const DEFAULT_WARM_ISOLATES = 2;

/**
 * Bounds the prelude's own run when an isolate is made ahead of a program (no step's clock is
 * running then). The prelude is ours and defines functions only: it takes a few milliseconds.
 */
const PRELUDE_TIMEOUT_MS = 5_000;

const PRELUDE_FILENAME = 'ptc:prelude';

let preludeCache: ivm.ExternalCopy<ArrayBuffer> | undefined;

/**
 * V8's code cache for the prelude, made once per process in a scratch isolate: compiling with it
 * takes a seventh of the time (about 0.1 ms instead of 0.6 here). Only ever made from our own
 * source, never from anything a request holds; a cache V8 rejects costs a normal compile.
 */
function preludeCachedData(): ivm.ExternalCopy<ArrayBuffer> | undefined {
  if (preludeCache) return preludeCache;
  const scratch = new ivm.Isolate({ memoryLimit: 16 });
  try {
    // isolated-vm's types leave out what compileScriptSync returns with produceCachedData.
    const script = scratch.compileScriptSync(PRELUDE_SOURCE, { filename: PRELUDE_FILENAME, produceCachedData: true }) as ivm.Script & ivm.CachedDataResult;
    preludeCache = script.cachedData;
  } finally {
    scratch.dispose();
  }
  return preludeCache;
}

/**
 * A new isolate of `memoryMb` with the prelude run in it; `timeoutMs` bounds that run.
 * Synchronous, on this thread: none of it is a request's code, it takes about as long as the
 * `new Isolate` that must be synchronous anyway, and each asynchronous step would add two
 * thread hand-overs (to the isolate's thread and back), which cost more than the step itself.
 */
export function prepareIsolate(memoryMb: number, timeoutMs: number = PRELUDE_TIMEOUT_MS): PreparedIsolate {
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb });
  try {
    const context = isolate.createContextSync();
    const script = isolate.compileScriptSync(PRELUDE_SOURCE, { filename: PRELUDE_FILENAME, cachedData: preludeCachedData() });
    const install = script.runSync(context, { reference: true, timeout: timeoutMs }) as ivm.Reference<(configJson: string) => unknown>;
    return { isolate, context, script, install };
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
}

/** An isolate made ahead and not taken within this long is disposed: it would only hold memory. */
export const WARM_ISOLATE_IDLE_MS = 30_000;

/**
 * Isolates are made ahead only once no step has run for this long. A program's steps come in
 * bursts a pause apart (a worker's pause is an IPC round trip, well under a millisecond when
 * the tools answer at once): made in such a gap, an isolate makes the resume that arrives wait
 * behind it (2 ms of every 30 in a worker running 50 sequential calls, before this rule).
 */
const FILL_AFTER_IDLE_MS = 2;

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
 * taken. At most `size` wait at any time, for the memory limit last asked for; one not taken
 * within WARM_ISOLATE_IDLE_MS is disposed.
 *
 * They are made only while no program step runs here (each step is bracketed by stepBegan and
 * stepEnded), once none has for FILL_AFTER_IDLE_MS: making one takes the thread for a millisecond
 * or two, and a step's replies, or the next step of a program between two pauses, would wait
 * behind it. Under a steady stream of steps none are made and each program makes its own, which
 * costs what it costs without the pool. A caller that knows it is between programs asks for them
 * at once with `whenFull`.
 */
export class WarmIsolates {
  readonly #size: number;
  readonly #idleMs: number;
  #memoryMb: number | undefined;
  #ready: { readonly prepared: PreparedIsolate; readonly madeAt: number }[] = [];
  #running = 0;
  /** Steps begun so far: a fill goes ahead only if none began since it was scheduled. */
  #begun = 0;
  #scheduled = false;
  #closed = false;
  #expiry: NodeJS.Timeout | undefined;
  #made = 0;
  #taken = 0;

  constructor(size: number = DEFAULT_WARM_ISOLATES, idleMs: number = WARM_ISOLATE_IDLE_MS) {
    this.#size = size;
    this.#idleMs = idleMs;
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

  /**
   * Makes what the pool is short of now, without waiting for a quiet time, and resolves once it
   * is full: for a caller between programs. One isolate per turn of the event loop, so that a
   * message arriving meanwhile is not held for all of them. Resolves at once when no program has
   * asked for a memory limit yet (none would be made for the right one); never waits on what
   * cannot be made (a failure, close).
   */
  async whenFull(): Promise<void> {
    while (!this.#closed && this.#memoryMb !== undefined && this.#ready.length < this.#size) {
      if (!this.#makeOne(this.#memoryMb)) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  stats(): WarmIsolatesStats {
    return { ready: this.#ready.length, made: this.#made, taken: this.#taken };
  }

  /** A program step starts running in this process. */
  stepBegan(): void {
    this.#running += 1;
    this.#begun += 1;
  }

  /** A program step has ended: once none runs, the pool makes up what was taken. */
  stepEnded(): void {
    this.#running -= 1;
    this.#schedule();
  }

  /** How many wait now (for tests and metrics). */
  get ready(): number {
    return this.#ready.length;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#expiry);
    this.#disposeReady();
  }

  /**
   * The first isolate FILL_AFTER_IDLE_MS after the last step, the next ones one per turn of the
   * event loop; each only if no step began in between and the pool is still short.
   */
  #schedule(quiet = false): void {
    if (this.#scheduled || this.#closed || this.#memoryMb === undefined || this.#ready.length >= this.#size) return;
    this.#scheduled = true;
    const begun = this.#begun;
    const fill = (): void => {
      this.#scheduled = false;
      const memoryMb = this.#memoryMb;
      if (this.#running > 0 || this.#closed || memoryMb === undefined || this.#ready.length >= this.#size) return;
      // A step began and ended meanwhile: the quiet time counts from its end.
      if (this.#begun !== begun) return this.#schedule();
      if (this.#makeOne(memoryMb)) this.#schedule(true);
    };
    // A message that arrived while one was made has started its step by the time setImmediate's turn comes.
    if (quiet) setImmediate(fill);
    else setTimeout(fill, FILL_AFTER_IDLE_MS).unref();
  }

  /** Makes one isolate ahead; false if it could not be made. */
  #makeOne(memoryMb: number): boolean {
    try {
      this.#ready.push({ prepared: prepareIsolate(memoryMb), madeAt: performance.now() });
    } catch {
      // A failure to make one ahead (out of memory, say) costs nothing: the next program makes its own.
      return false;
    }
    this.#made += 1;
    this.#armExpiry();
    return true;
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
