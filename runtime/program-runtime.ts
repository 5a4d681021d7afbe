import { IsolateProgram, type ProgramSpec } from './isolate-program.ts';
import { WarmIsolates, type WarmIsolatesStats } from './warm-isolates.ts';
import { assertCanMakeIsolates } from './node-flags.ts';
import { assertSpinWaitMs } from './spin-wait.ts';
import type { ProgramEvent, RecordedCall, ToolCallOutput } from './program-events.ts';
import { RecordDigest } from './record-digest.ts';
import { ProgramBusyError, type RunawayLimit } from './errors.ts';

export interface ProgramRuntimeOptions {
  /** How long a paused program's isolate is kept without being resumed. */
  readonly pausedTtlMs: number;
  /** How many paused isolates are kept at most; the least recently used go first. */
  readonly maxPausedPrograms: number;
  /** Heap of all paused isolates together, in bytes, beyond which the least recently used go. */
  readonly maxPausedHeapBytes: number;
  /** Isolates kept made ahead of demand (WarmIsolates; default DEFAULT_WARM_ISOLATES); 0 makes each when its program starts. */
  readonly warmIsolates?: number;
  /** The memory limit (MiB) programs are expected to ask for, which isolates are made ahead for until one asks for another (default DEFAULT_LIMITS.memoryMb). */
  readonly warmMemoryMb?: number;
  /**
   * Whether a step that runs on past its limits where isolated-vm cannot stop it ends for its
   * caller, its isolate disposed (at RUNAWAY_THRESHOLDS_MS' `freeze`; default true). False in a
   * worker, whose supervisor freezes and kills it for such a step (its runaways()).
   */
  readonly stopsRunaways?: boolean;
  /**
   * How long, at most, each step keeps this process's event loop turning while it is the only
   * step running, instead of letting it sleep (spinWhileStepRuns; default DEFAULT_SPIN_WAIT_MS); 0 never.
   */
  readonly spinWaitMs?: number;
  /**
   * Whether an isolate made for a step while other steps run (none made ahead) has its context
   * made on isolated-vm's thread, beside this one (prepareIsolateBeside; default true). A pool
   * gives its workers false when it has one per CPU or more: the other workers keep the other
   * CPUs busy, and the hand-overs then cost more than they spare (`bench:load` with unpinned
   * workers: 4 % fewer conversations).
   */
  readonly makesContextsBeside?: boolean;
}

/** How a resume was served: from the paused isolate, or by replaying the program from the start. */
export type ResumePath = 'warm' | 'replay';

export interface ProgramRuntimeStats {
  started: number;
  resumes: Record<ResumePath, number>;
  evictions: Record<'ttl' | 'count' | 'memory', number>;
  paused: number;
  pausedHeapBytes: number;
  /** The isolates made ahead of programs (WarmIsolates): waiting now, made and taken so far. */
  warmIsolates: WarmIsolatesStats;
  /** With worker processes: how many run, and how many died, by cause. */
  workers?: { alive: number; deaths: Record<'exit' | 'heartbeat' | 'rss' | 'cpu' | 'deadline', number>; retried: number };
}

/** The counters of a runtime that has run nothing yet: the start of a sum over workers, or a worker that runs none. */
export function emptyRuntimeStats(): ProgramRuntimeStats {
  return {
    started: 0,
    resumes: { warm: 0, replay: 0 },
    evictions: { ttl: 0, count: 0, memory: 0 },
    paused: 0,
    pausedHeapBytes: 0,
    warmIsolates: { ready: 0, made: 0, taken: 0 },
  };
}

/**
 * Where programs run: in this process (ProgramRuntime) or in supervised worker processes
 * (WorkerPool). Plain data in and out, so callers do not care which.
 */
export interface ProgramEngine {
  start(programId: string, spec: ProgramSpec): Promise<ProgramEvent>;
  /**
   * `recorded`: every call the program made, in order, with its answer. A caller resuming a
   * program again with the same array has only appended to it: an engine may take its earlier
   * entries as it read them before (a record that changed otherwise is a new array).
   * Throws ProgramBusyError while another caller runs a step of the same program.
   */
  resume(programId: string, spec: ProgramSpec, recorded: readonly RecordedCall[]): Promise<{ event: ProgramEvent; path: ResumePath }>;
  dispose(programId: string): void;
  stats(): ProgramRuntimeStats;
  close(): Promise<void>;
}

interface LiveProgram {
  readonly program: IsolateProgram;
  busy: boolean;
  lastUsed: number;
  heapBytes: number;
  /** The digest of the answers its caller's record holds, hashed as far as its last resume (see #pausedAt). */
  readonly digest: RecordDigest;
}

/**
 * Runs programs and resumes them, keyed by the program's id (its `call_id`).
 *
 * Replay is the ground truth of a resume: given the program and every call it made with its
 * output, a fresh isolate re-runs it to where it paused. A paused isolate kept alive is only a
 * cache in front of that (bounded by TTL, count and heap), used when it is paused exactly where
 * the history leaves it. Both paths yield the same events. The interface passes only plain data,
 * so the isolates can move into worker processes without changing callers.
 */
export class ProgramRuntime implements ProgramEngine {
  readonly #options: ProgramRuntimeOptions;
  readonly #live = new Map<string, LiveProgram>();
  readonly #sweeper: NodeJS.Timeout;
  #started = 0;
  readonly #resumes = { warm: 0, replay: 0 };
  readonly #evictions = { ttl: 0, count: 0, memory: 0 };
  readonly #warm: WarmIsolates;
  readonly #programOptions: { readonly stopsRunaways: boolean; readonly spinWaitMs?: number; readonly makesContextsBeside?: boolean };

  constructor(options: ProgramRuntimeOptions) {
    // Refused here rather than at the first program: a server built without the flag says so at once.
    assertCanMakeIsolates();
    if (options.spinWaitMs !== undefined) assertSpinWaitMs(options.spinWaitMs);
    this.#options = options;
    this.#programOptions = {
      stopsRunaways: options.stopsRunaways ?? true,
      ...(options.spinWaitMs === undefined ? {} : { spinWaitMs: options.spinWaitMs }),
      ...(options.makesContextsBeside === undefined ? {} : { makesContextsBeside: options.makesContextsBeside }),
    };
    this.#warm = new WarmIsolates(options.warmIsolates, undefined, options.warmMemoryMb === undefined ? {} : { memoryMb: options.warmMemoryMb });
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(1000, Math.min(options.pausedTtlMs, 60_000)));
    this.#sweeper.unref();
  }

  /** Resolves once this runtime's isolates made ahead are made (WarmIsolates.whenFull): for a caller between programs. */
  isolatesReady(): Promise<void> {
    return this.#warm.whenFull();
  }

  /** The steps running past a limit without ending (see IsolateProgram.runaway), which limit, and for how long. */
  runaways(): { programId: string; limit: RunawayLimit; overMs: number }[] {
    const runaways: { programId: string; limit: RunawayLimit; overMs: number }[] = [];
    for (const [programId, entry] of this.#live) {
      const runaway = entry.busy ? entry.program.runaway : undefined;
      if (runaway) runaways.push({ programId, limit: runaway.limit, overMs: Math.round(runaway.overMs) });
    }
    return runaways;
  }

  stats(): ProgramRuntimeStats {
    let pausedHeapBytes = 0;
    for (const entry of this.#live.values()) pausedHeapBytes += entry.heapBytes;
    return {
      started: this.#started,
      resumes: { ...this.#resumes },
      evictions: { ...this.#evictions },
      paused: this.#live.size,
      pausedHeapBytes,
      warmIsolates: this.#warm.stats(),
    };
  }

  async start(programId: string, spec: ProgramSpec): Promise<ProgramEvent> {
    if (this.#live.has(programId)) throw new Error(`Program ${programId} already exists`);
    this.#started += 1;
    return this.#run(programId, new IsolateProgram(spec, this.#warm, this.#programOptions), (program) => program.start());
  }

  /**
   * Resumes a program from its history: every call it made, in order, each with its output.
   * Throws ProgramBusyError while another caller runs a step of the same program.
   */
  async resume(programId: string, spec: ProgramSpec, recorded: readonly RecordedCall[]): Promise<{ event: ProgramEvent; path: ResumePath }> {
    const entry = this.#get(programId);
    if (entry?.busy) throw new ProgramBusyError(programId);
    if (entry && this.#pausedAt(entry, recorded)) {
      const outputs = entry.program.pendingCalls.map((call) => {
        const { output, error } = recorded[call.seq]!;
        return error === undefined ? { seq: call.seq, output } : { seq: call.seq, output, error };
      });
      return { event: await this.#resumeWarm(programId, entry, outputs), path: 'warm' };
    }
    if (entry) this.dispose(programId);
    this.#resumes.replay += 1;
    return {
      event: await this.#run(programId, new IsolateProgram(spec, this.#warm, this.#programOptions), (program) => program.start(recorded)),
      path: 'replay',
    };
  }

  /**
   * Whether the program in `entry` is paused exactly where `recorded` leaves it (isPausedWith). The
   * answers before its pending batch are hashed as a worker's pool hashes them (RecordDigest): only
   * those added since the last resume with the same array, not the whole record again at every
   * pause (0.5 to 1.2 ms of a program of 1,000 calls in 20 resumes, here).
   */
  #pausedAt(entry: LiveProgram, recorded: readonly RecordedCall[]): boolean {
    const pending = entry.program.pendingCalls;
    // Not paused on the record's last calls: nothing to hash.
    if (pending.at(-1)?.seq !== recorded.length - 1) return false;
    return entry.program.isPausedWith(recorded.length, entry.digest.of(recorded, recorded.length - pending.length));
  }

  /**
   * A warm resume given only the pending batch's answers: runs the program on when it is
   * paused here after `calls` calls, having received answers of `answeredDigest` before them;
   * undefined when it is not (the caller resumes with the whole record instead). Throws
   * ProgramBusyError while another caller runs a step of it.
   */
  async continueWarm(programId: string, calls: number, answeredDigest: string, outputs: readonly ToolCallOutput[]): Promise<ProgramEvent | undefined> {
    const entry = this.#get(programId);
    if (entry?.busy) throw new ProgramBusyError(programId);
    if (!entry?.program.isPausedWith(calls, answeredDigest)) return undefined;
    return this.#resumeWarm(programId, entry, outputs);
  }

  /** Delivers the pending batch's answers to the isolate paused in `entry` and runs it on. */
  #resumeWarm(programId: string, entry: LiveProgram, outputs: readonly ToolCallOutput[]): Promise<ProgramEvent> {
    this.#resumes.warm += 1;
    entry.busy = true;
    return this.#settle(programId, entry, entry.program.resume(outputs));
  }

  dispose(programId: string): void {
    const entry = this.#live.get(programId);
    if (!entry) return;
    this.#live.delete(programId);
    entry.program.dispose();
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#warm.close();
    for (const programId of [...this.#live.keys()]) this.dispose(programId);
  }

  #run(programId: string, program: IsolateProgram, step: (program: IsolateProgram) => Promise<ProgramEvent>): Promise<ProgramEvent> {
    const entry: LiveProgram = { program, busy: true, lastUsed: Date.now(), heapBytes: 0, digest: new RecordDigest() };
    this.#live.set(programId, entry);
    return this.#settle(programId, entry, step(program));
  }

  /** A live program, unless its TTL ran out: expiry is exact, the sweeper only frees memory sooner. */
  #get(programId: string): LiveProgram | undefined {
    const entry = this.#live.get(programId);
    if (entry && !entry.busy && this.#expired(entry)) {
      this.#evictions.ttl += 1;
      this.dispose(programId);
      return undefined;
    }
    return entry;
  }

  #expired(entry: LiveProgram): boolean {
    return Date.now() - entry.lastUsed > this.#options.pausedTtlMs;
  }

  async #settle(programId: string, entry: LiveProgram, step: Promise<ProgramEvent>): Promise<ProgramEvent> {
    try {
      const event = await step;
      if (event.type === 'paused') {
        entry.busy = false;
        entry.lastUsed = Date.now();
        // Measured once the event is on its way: reading an isolate's heap takes its lock (4 µs
        // here back to back, 16 µs after a millisecond idle), and the caller (a worker's reply)
        // need not wait for it.
        setImmediate(() => this.#measure(programId, entry));
      } else if (this.#live.get(programId) === entry) {
        this.#live.delete(programId);
      }
      return event;
    } catch (error) {
      if (this.#live.get(programId) === entry) this.dispose(programId);
      throw error;
    }
  }

  /** Takes the heap of a program paused in `entry`, then keeps the bounds; a program resumed or gone meanwhile is measured at its next pause. */
  #measure(programId: string, entry: LiveProgram): void {
    if (entry.busy || this.#live.get(programId) !== entry) return;
    entry.heapBytes = entry.program.heapBytes();
    this.#evictBeyondBounds();
  }

  /** Drops the least recently used paused isolates while over the count or heap bound. */
  #evictBeyondBounds(): void {
    const idle = [...this.#live.entries()].filter(([, entry]) => !entry.busy).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    let heap = [...this.#live.values()].reduce((sum, entry) => sum + entry.heapBytes, 0);
    for (const [programId, entry] of idle) {
      const overCount = this.#live.size > this.#options.maxPausedPrograms;
      const overHeap = heap > this.#options.maxPausedHeapBytes;
      if (!overCount && !overHeap) break;
      this.#evictions[overCount ? 'count' : 'memory'] += 1;
      heap -= entry.heapBytes;
      this.dispose(programId);
    }
  }

  #sweep(): void {
    for (const [programId, entry] of this.#live) {
      if (!entry.busy && this.#expired(entry)) {
        this.#evictions.ttl += 1;
        this.dispose(programId);
      }
    }
  }
}
