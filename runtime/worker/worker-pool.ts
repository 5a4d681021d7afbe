import type { ProgramSpec } from '../isolate-program.ts';
import type { ProgramEvent, RecordedCall } from '../program-events.ts';
import { ProgramBusyError, type ProgramEngine, type ProgramRuntimeOptions, type ProgramRuntimeStats, type ResumePath } from '../program-runtime.ts';
import { WorkerDeathError, WorkerProcess, type StepRequest, type WorkerDeath, type WorkerLimits } from './worker-process.ts';

export interface WorkerPoolOptions extends WorkerLimits {
  /** How many worker processes run isolates. */
  readonly size: number;
  /** The options of each worker's runtime (its cache of paused isolates). */
  readonly runtime: ProgramRuntimeOptions;
  /** Told when a worker dies and is replaced, for the log. */
  readonly onWorkerDeath?: (pid: number | undefined, reason: WorkerDeath, detail: string) => void;
  /** The worker script (default: worker-main.ts); tests give one that misbehaves. */
  readonly entry?: string;
}

interface Placement {
  readonly worker: WorkerProcess;
  lastUsed: number;
}

type Reply = Awaited<ReturnType<WorkerProcess['request']>>;

/**
 * How long a step may take before its worker is killed: well past the program's own limits
 * (which end a normal runaway first), with room for a replay's recorded batches.
 */
function hardDeadline(message: StepRequest): number {
  const { stepWallTimeMs, cpuTimeMs } = message.spec.limits;
  const batches = message.kind === 'resume' ? message.recorded.length : 0;
  return 2 * Math.max(stepWallTimeMs, cpuTimeMs) + 2_000 + 5 * batches;
}

/** A fast crash loop must not spin: replacements wait this long after a death, at most. */
const RESPAWN_DELAY_MS = 100;

/**
 * Programs run in a pool of supervised worker processes; this server process keeps HTTP and
 * conversation state only. A paused program's isolate stays in the worker that ran it, and its
 * resume goes there while that worker lives (where it is warm, or replays); otherwise any
 * worker replays it. A worker that dies fails only the steps it was running (`runtime_crashed`)
 * and is replaced; the programs it held paused resume elsewhere by replay.
 */
export class WorkerPool implements ProgramEngine {
  readonly #options: WorkerPoolOptions;
  readonly #workers: WorkerProcess[] = [];
  readonly #placement = new Map<string, Placement>();
  readonly #sweeper: NodeJS.Timeout;
  readonly #deaths: Record<WorkerDeath, number> = { exit: 0, heartbeat: 0, rss: 0, cpu: 0, deadline: 0 };
  #closing = false;
  #turn = 0;

  constructor(options: WorkerPoolOptions) {
    this.#options = options;
    for (let i = 0; i < options.size; i++) this.#workers.push(this.#spawn());
    // Placements of programs never resumed would pile up: forget them once their TTL has run.
    this.#sweeper = setInterval(() => this.#forgetStale(), Math.max(1000, Math.min(options.runtime.pausedTtlMs, 60_000)));
    this.#sweeper.unref();
  }

  /** Resolves once every slot has a started worker (a worker that died starting counts by its replacement). */
  async ready(): Promise<void> {
    for (;;) {
      const starting = this.#workers.filter((worker) => !(worker.alive && worker.isReady));
      if (starting.length === 0) return;
      // Only the workers still starting: a resolved ready() would spin this loop without yielding.
      await Promise.race([...starting.map((worker) => worker.ready()), new Promise<void>((resolve) => setTimeout(resolve, 50))]);
    }
  }

  /** The pids of the live workers (tests, diagnostics). */
  get pids(): number[] {
    return this.#workers.filter((worker) => worker.alive && worker.pid !== undefined).map((worker) => worker.pid!);
  }

  stats(): ProgramRuntimeStats {
    const total: ProgramRuntimeStats = {
      started: 0,
      resumes: { warm: 0, replay: 0 },
      evictions: { ttl: 0, count: 0, memory: 0 },
      paused: 0,
      pausedHeapBytes: 0,
      workers: { alive: this.#workers.filter((worker) => worker.alive).length, deaths: { ...this.#deaths } },
    };
    for (const worker of this.#workers) {
      const stats = worker.stats;
      if (!stats) continue;
      total.started += stats.started;
      total.resumes.warm += stats.resumes.warm;
      total.resumes.replay += stats.resumes.replay;
      total.evictions.ttl += stats.evictions.ttl;
      total.evictions.count += stats.evictions.count;
      total.evictions.memory += stats.evictions.memory;
      total.paused += stats.paused;
      total.pausedHeapBytes += stats.pausedHeapBytes;
    }
    return total;
  }

  async start(programId: string, spec: ProgramSpec): Promise<ProgramEvent> {
    const worker = this.#leastLoaded();
    return (await this.#run(programId, worker, { kind: 'start', programId, spec: { ...spec, tools: [...spec.tools] } })).event;
  }

  async resume(programId: string, spec: ProgramSpec, recorded: readonly RecordedCall[]): Promise<{ event: ProgramEvent; path: ResumePath }> {
    const placed = this.#placement.get(programId);
    const worker = placed?.worker.alive ? placed.worker : this.#leastLoaded();
    return this.#run(programId, worker, { kind: 'resume', programId, spec: { ...spec, tools: [...spec.tools] }, recorded: [...recorded] });
  }

  dispose(programId: string): void {
    this.#placement.get(programId)?.worker.dispose(programId);
    this.#placement.delete(programId);
  }

  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#sweeper);
    await Promise.all(this.#workers.map((worker) => worker.stop()));
  }

  async #run(
    programId: string,
    worker: WorkerProcess,
    message: StepRequest,
  ): Promise<{ event: ProgramEvent; path: ResumePath }> {
    // Some builtins loop in native code that isolated-vm's timeout cannot interrupt, and the
    // worker still answers heartbeats meanwhile: a step past its hard deadline kills the worker.
    const deadlineMs = hardDeadline(message);
    let overran = false;
    const deadline = setTimeout(() => {
      overran = true;
      worker.kill('deadline', `a step of program ${programId} ran past its hard deadline of ${deadlineMs} ms`);
    }, deadlineMs);
    let reply: Reply;
    try {
      reply = await worker.request(message);
    } catch (error) {
      if (!(error instanceof WorkerDeathError)) throw error;
      this.#placement.delete(programId);
      const failure = overran
        ? { code: 'wall_time_exceeded' as const, message: `One execution step ran past its hard deadline of ${deadlineMs} ms; the worker running it was stopped` }
        : { code: 'runtime_crashed' as const, message: `The worker process running the program died: ${error.message}` };
      return { event: { type: 'incomplete', error: failure, stats: { cpuTimeMs: 0, steps: 0, calls: 0 } }, path: 'replay' };
    } finally {
      clearTimeout(deadline);
    }
    if (reply.kind === 'busy') throw new ProgramBusyError(programId);
    if (reply.kind === 'failed') throw new Error(`The worker could not run program ${programId}: ${reply.message}`);
    const { event } = reply;
    if (event.type === 'paused') this.#placement.set(programId, { worker, lastUsed: Date.now() });
    else this.#placement.delete(programId);
    return { event, path: reply.path ?? 'replay' };
  }

  #leastLoaded(): WorkerProcess {
    const alive = this.#workers.filter((worker) => worker.alive);
    if (alive.length === 0) throw new Error('No worker process is running');
    // Among equally loaded workers, take turns: an idle pool spreads its programs.
    this.#turn = (this.#turn + 1) % alive.length;
    const rotated = [...alive.slice(this.#turn), ...alive.slice(0, this.#turn)];
    return rotated.reduce((best, worker) => (worker.load < best.load ? worker : best));
  }

  #spawn(): WorkerProcess {
    return new WorkerProcess(this.#options.runtime, this.#options, (dead, reason, detail) => this.#replace(dead, reason, detail), this.#options.entry);
  }

  #replace(dead: WorkerProcess, reason: WorkerDeath, detail: string): void {
    if (this.#closing) return;
    this.#deaths[reason] += 1;
    this.#options.onWorkerDeath?.(dead.pid, reason, detail);
    for (const [programId, placed] of this.#placement) {
      if (placed.worker === dead) this.#placement.delete(programId);
    }
    const index = this.#workers.indexOf(dead);
    // Spawn the replacement at once so requests always find a worker; pause only a crash loop.
    const spawn = (): void => {
      if (!this.#closing && index >= 0) this.#workers[index] = this.#spawn();
    };
    if (this.#deaths[reason] > this.#workers.length * 3) setTimeout(spawn, RESPAWN_DELAY_MS).unref();
    else spawn();
  }

  #forgetStale(): void {
    const stale = Date.now() - this.#options.runtime.pausedTtlMs;
    for (const [programId, placed] of this.#placement) {
      if (placed.lastUsed < stale || !placed.worker.alive) this.#placement.delete(programId);
    }
  }
}
