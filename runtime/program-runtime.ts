import { IsolateProgram, type ProgramSpec } from './isolate-program.ts';
import type { ProgramEvent, ToolCallOutput, ToolCallRequest } from './program-events.ts';

export interface ProgramRuntimeOptions {
  /** How long a paused program is kept alive without being resumed. */
  readonly pausedTtlMs: number;
  /** How many paused programs are kept at most; the least recently used go first. */
  readonly maxPausedPrograms: number;
}

export class ProgramNotFoundError extends Error {
  constructor(readonly programId: string) {
    super(`No live program ${programId}`);
  }
}

export class ProgramBusyError extends Error {
  constructor(readonly programId: string) {
    super(`Program ${programId} is already running a step`);
  }
}

interface LiveProgram {
  readonly program: IsolateProgram;
  busy: boolean;
  lastUsed: number;
}

/**
 * Runs programs and keeps paused ones alive between requests, keyed by the program's id (its
 * `call_id`). The interface is asynchronous and passes only plain data, so the isolates can
 * move into worker processes without changing callers.
 */
export class ProgramRuntime {
  readonly #options: ProgramRuntimeOptions;
  readonly #live = new Map<string, LiveProgram>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(options: ProgramRuntimeOptions) {
    this.#options = options;
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(1000, Math.min(options.pausedTtlMs, 60_000)));
    this.#sweeper.unref();
  }

  /** Number of paused programs held alive. */
  get pausedCount(): number {
    return this.#live.size;
  }

  async start(programId: string, spec: ProgramSpec): Promise<ProgramEvent> {
    if (this.#live.has(programId)) throw new Error(`Program ${programId} already exists`);
    const program = new IsolateProgram(spec);
    const entry: LiveProgram = { program, busy: true, lastUsed: Date.now() };
    this.#live.set(programId, entry);
    return this.#settle(programId, entry, program.start());
  }

  /**
   * The calls a live program is paused on, or undefined if it is not held here. Throws
   * ProgramBusyError while another caller is running one of its steps.
   */
  pendingCalls(programId: string): readonly ToolCallRequest[] | undefined {
    const entry = this.#get(programId);
    if (entry?.busy) throw new ProgramBusyError(programId);
    return entry?.program.pendingCalls;
  }

  async resume(programId: string, outputs: readonly ToolCallOutput[]): Promise<ProgramEvent> {
    const entry = this.#get(programId);
    if (!entry) throw new ProgramNotFoundError(programId);
    if (entry.busy) throw new ProgramBusyError(programId);
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
    for (const programId of [...this.#live.keys()]) this.dispose(programId);
  }

  /** A live program, unless its TTL ran out: expiry is exact, the sweeper only frees memory sooner. */
  #get(programId: string): LiveProgram | undefined {
    const entry = this.#live.get(programId);
    if (entry && !entry.busy && this.#expired(entry)) {
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
        this.#evictBeyondBound();
      } else {
        this.#live.delete(programId);
      }
      return event;
    } catch (error) {
      this.dispose(programId);
      throw error;
    }
  }

  #evictBeyondBound(): void {
    if (this.#live.size <= this.#options.maxPausedPrograms) return;
    const idle = [...this.#live.entries()].filter(([, entry]) => !entry.busy).sort((a, b) => a[1].lastUsed - b[1].lastUsed);
    for (const [programId] of idle.slice(0, this.#live.size - this.#options.maxPausedPrograms)) this.dispose(programId);
  }

  #sweep(): void {
    for (const [programId, entry] of this.#live) {
      if (!entry.busy && this.#expired(entry)) this.dispose(programId);
    }
  }
}
