import { availableParallelism } from 'node:os';
import type { ProgramSpec } from '../isolate-program.ts';
import type { ProgramEvent, RecordedCall } from '../program-events.ts';
import { ProgramBusyError, WorkerDeathError, type RunawayLimit } from '../errors.ts';
import type { ProgramLimits } from '../limits.ts';
import { emptyRuntimeStats, type ProgramEngine, type ProgramRuntimeOptions, type ProgramRuntimeStats, type ResumePath } from '../program-runtime.ts';
import type { WorkerDeath } from '../errors.ts';
import { assertSpinWaitMs } from '../spin-wait.ts';
import { cpusToPinTo } from './cpu-pinning.ts';
import { RecordDigest } from '../record-digest.ts';
import { continueMessage, eventFromWire } from './wire-codec.ts';
import { WorkerProcess, type ContinueRequest, type StepRequest, type WorkerLimits } from './worker-process.ts';

export interface WorkerPoolOptions extends WorkerLimits {
  /** How many worker processes run isolates. */
  readonly size: number;
  /** The options of each worker's runtime (its cache of paused isolates). */
  readonly runtime: ProgramRuntimeOptions;
  /** Told when a worker dies and is replaced, for the log. */
  readonly onWorkerDeath?: (pid: number | undefined, reason: WorkerDeath, detail: string) => void;
  /** The worker script (default: worker-main.ts); tests give one that misbehaves. */
  readonly entry?: string;
  /**
   * Whether each worker is pinned to one CPU of those this process may use, in turn, where the
   * pool fills them evenly (default true; see cpusToPinTo). The spare is never pinned.
   */
  readonly pinCpus?: boolean;
  /** Told, once, that a worker could not be pinned (no taskset, say), for the log. */
  readonly onPinFailed?: (pid: number | undefined, detail: string) => void;
}

interface Placement {
  readonly worker: WorkerProcess;
  lastUsed: number;
  /** Where its last step left it paused there: calls made, and how many of them it waits on. */
  readonly pausedAt?: { readonly calls: number; readonly pending: number };
  /** The digest of its record's answers as far as its last warm resume hashed them, carried from placement to placement. */
  readonly digest: RecordDigest;
}

type Reply = Awaited<ReturnType<WorkerProcess['request']>>;

/** How one attempt at a step ended: an event, the worker's death, or (a brief resume) a program not paused there. */
type Attempted =
  | { readonly event: ProgramEvent; readonly path: ResumePath }
  | { readonly death: WorkerDeathError; readonly overran: boolean; readonly deadlineMs: number; readonly ranMs: number }
  | { readonly notPaused: true };

/**
 * How long a step may take before its worker is killed: well past the program's own limits
 * (which end a normal runaway first), with room for a replay's recorded batches.
 */
function hardDeadline(message: StepRequest): number {
  const { stepWallTimeMs, cpuTimeMs } = message.spec.limits;
  const batches = message.kind === 'resume' ? message.recorded.length : 0;
  return 2 * Math.max(stepWallTimeMs, cpuTimeMs) + 2_000 + 5 * batches;
}

/** A step that could not go on: the worker running it died, and why. */
function crashed(code: 'runtime_crashed' | 'wall_time_exceeded' | 'memory_limit_exceeded', message: string): { event: ProgramEvent; path: ResumePath } {
  return { event: { type: 'incomplete', error: { code, message }, stats: { cpuTimeMs: 0, steps: 0, calls: 0 } }, path: 'replay' };
}

/** The step that ran past its own hard deadline: its worker was stopped for it. */
function pastHardDeadline(deadlineMs: number): { event: ProgramEvent; path: ResumePath } {
  return crashed('wall_time_exceeded', `One execution step ran past its hard deadline of ${deadlineMs} ms; the worker running it was stopped`);
}

/** The step its worker reported past a limit without ending when the worker died: the cause. */
function ranAway(limits: ProgramLimits, limit: RunawayLimit, death: WorkerDeathError): { event: ProgramEvent; path: ResumePath } {
  // Killed by the supervisor for the runaway, or for the memory it grew meanwhile: either way stopped.
  const how = death.reason === 'deadline' || death.reason === 'rss' ? 'was stopped' : `died (${death.message})`;
  return limit === 'memory'
    ? crashed(
        'memory_limit_exceeded',
        `The program's heap reached its limit of ${limits.memoryMb} MiB in a native call that did not stop with its isolate; the worker running it ${how}`,
      )
    : crashed(
        'wall_time_exceeded',
        `One execution step ran past its wall-clock limit of ${limits.stepWallTimeMs} ms and its isolate could not stop it; the worker running it ${how}`,
      );
}

/** A worker killed at once for a runaway (see WorkerPool.#frozen) is frozen, and still in the pool until it dies. */
const takesSteps = (worker: WorkerProcess): boolean => worker.alive && !worker.frozen;

/** A fast crash loop must not spin: replacements wait this long after a death, at most. */
const RESPAWN_DELAY_MS = 100;

/**
 * Programs run in a pool of supervised worker processes; this server process keeps HTTP and
 * conversation state only. A paused program's isolate stays in the worker that ran it, and its
 * resume goes there while that worker lives (where it is warm, or replays); otherwise any
 * worker replays it. A worker that dies is replaced; the programs it held paused resume
 * elsewhere by replay, and the steps it was running are run again (see #run).
 */
export class WorkerPool implements ProgramEngine {
  readonly #options: WorkerPoolOptions;
  readonly #workers: WorkerProcess[] = [];
  readonly #placement = new Map<string, Placement>();
  readonly #sweeper: NodeJS.Timeout;
  readonly #deaths: Record<WorkerDeath, number> = { exit: 0, heartbeat: 0, rss: 0, cpu: 0, deadline: 0 };
  #closing = false;
  #turn = 0;
  /** Steps run again after their worker died under them, or was frozen under them (see #run). */
  #retried = 0;
  /** The worker such steps run on, one at a time, while any waits (see #alone). */
  #spare: WorkerProcess | undefined;
  /** Steps waiting for the spare, shortest run first (see #alone). */
  readonly #spareQueue: { readonly death: WorkerDeathError; readonly ranMs: number; readonly start: () => void }[] = [];
  /** Whether a step runs on the spare, or one is about to be taken. */
  #spareBusy = false;
  /** Frozen workers that left the pool, until they are killed (see #frozen). */
  readonly #leaving = new Set<WorkerProcess>();
  /** Workers stopped on purpose (an idle spare, a retired worker): their exit is no death. */
  readonly #stopped = new WeakSet<WorkerProcess>();
  /** Whether a worker that could not be pinned was reported (onPinFailed tells once). */
  #pinFailureTold = false;

  constructor(options: WorkerPoolOptions) {
    // Refused here, not by each worker as it starts (which would die, and be replaced, for it).
    if (options.runtime.spinWaitMs !== undefined) assertSpinWaitMs(options.runtime.spinWaitMs);
    this.#options = options;
    for (let i = 0; i < options.size; i++) this.#workers.push(this.#spawn(i));
    // Placements of programs never resumed would pile up: forget them once their TTL has run.
    this.#sweeper = setInterval(() => this.#forgetStale(), Math.max(1000, Math.min(options.runtime.pausedTtlMs, 60_000)));
    this.#sweeper.unref();
  }

  /**
   * Resolves once every slot has a started worker (a worker that died starting counts by its
   * replacement) that has made the isolates it keeps ahead of programs (WorkerProcess.prepareIsolates):
   * a program started then takes one, rather than waiting for its own. For a caller between
   * programs, as the server at its start.
   */
  async ready(): Promise<void> {
    while (!this.#closing) {
      const starting = this.#workers.filter((worker) => !(worker.alive && worker.isReady));
      if (starting.length === 0) {
        const workers = [...this.#workers];
        await Promise.all(workers.map((worker) => worker.prepareIsolates()));
        // A worker that died or was frozen meanwhile has left its slot: its replacement is waited for in turn.
        if (workers.every((worker, slot) => this.#workers[slot] === worker && takesSteps(worker))) return;
        continue;
      }
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
      ...emptyRuntimeStats(),
      workers: { alive: this.#workers.filter((worker) => worker.alive).length, deaths: { ...this.#deaths }, retried: this.#retried },
    };
    for (const worker of [...this.#workers, ...this.#leaving]) {
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
      total.warmIsolates = {
        ready: total.warmIsolates.ready + stats.warmIsolates.ready,
        made: total.warmIsolates.made + stats.warmIsolates.made,
        taken: total.warmIsolates.taken + stats.warmIsolates.taken,
      };
    }
    return total;
  }

  async start(programId: string, spec: ProgramSpec): Promise<ProgramEvent> {
    const worker = this.#leastLoaded();
    return (await this.#run(programId, worker, { kind: 'start', programId, spec })).event;
  }

  async resume(programId: string, spec: ProgramSpec, recorded: readonly RecordedCall[]): Promise<{ event: ProgramEvent; path: ResumePath }> {
    const placed = this.#placement.get(programId);
    const worker = placed?.worker.alive && !placed.worker.frozen ? placed.worker : this.#leastLoaded();
    // The caller's spec and record as they are: the channel copies them as it sends them.
    const full: StepRequest = { kind: 'resume', programId, spec, recorded };
    const pausedAt = worker === placed?.worker ? placed.pausedAt : undefined;
    if (!pausedAt || pausedAt.calls !== recorded.length) return this.#run(programId, worker, full);
    // Paused there where the record leaves it, as far as this process knows: the worker gets the
    // pending batch's answers and a digest of the earlier ones, not the whole record (which
    // grows with every pause), and checks the digest against what the program received.
    const brief: ContinueRequest = continueMessage(programId, recorded, pausedAt.pending, placed!.digest);
    const first = await this.#firstAttempt(programId, worker, full, brief);
    // Not paused there after all (evicted, say): the whole record, to the same worker.
    if ('notPaused' in first) return this.#run(programId, worker, full);
    return this.#run(programId, worker, full, first);
  }

  dispose(programId: string): void {
    this.#placement.get(programId)?.worker.dispose(programId);
    this.#placement.delete(programId);
  }

  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#sweeper);
    await Promise.all([...this.#workers, ...this.#leaving, ...(this.#spare ? [this.#spare] : [])].map((worker) => worker.stop()));
  }

  /**
   * Runs a step. A step whose worker died under it, killed for something it did not do itself
   * (another step's crash, memory or silence), is run once more, by itself, on a worker of its
   * own (see #alone): programs are deterministic, so it replays to where it was and goes on.
   * Only a step that kills that worker too ends `runtime_crashed`. When the supervisor killed
   * the worker for a runaway it reported, the cause is known: the others run again on the pool.
   * A step whose worker is frozen under it runs again on the pool at once (see #firstAttempt).
   */
  async #run(programId: string, worker: WorkerProcess, message: StepRequest, firstAttempt?: Attempted): Promise<{ event: ProgramEvent; path: ResumePath }> {
    const first = firstAttempt ?? (await this.#firstAttempt(programId, worker, message));
    if ('notPaused' in first) throw new Error(`The worker answered a full resume of program ${programId} as if it were brief`);
    if (!('death' in first)) return first;
    if (first.overran) return pastHardDeadline(first.deadlineMs);
    const firstRunaway = first.death.runaways.get(programId);
    if (firstRunaway) return ranAway(message.spec.limits, firstRunaway, first.death);
    // A pool closing stops its workers under their steps: nothing is run again then.
    if (this.#closing) return crashed('runtime_crashed', `The worker process running the program died: ${first.death.message}`);
    this.#retried += 1;
    // A worker the supervisor killed for a runaway (not this step) needs no spare to find its
    // killer: the step runs again on the pool, as any step does.
    const alone = !first.death.forRunaway || !this.#workers.some((worker) => worker.alive);
    const second = alone
      ? await this.#alone(first.death, first.ranMs, (spare) => this.#attempt(programId, spare, message, false))
      : await this.#attempt(programId, this.#leastLoaded(), message, true);
    if (second === undefined) return crashed('runtime_crashed', `The worker process running the program died: ${first.death.message}`);
    if ('notPaused' in second) throw new Error(`The worker answered a full resume of program ${programId} as if it were brief`);
    if (!('death' in second)) return second;
    if (second.overran) return pastHardDeadline(second.deadlineMs);
    const secondRunaway = second.death.runaways.get(programId);
    if (secondRunaway) return ranAway(message.spec.limits, secondRunaway, second.death);
    return crashed(
      'runtime_crashed',
      `The worker process running the program died: ${first.death.message}; run again${alone ? ' by itself' : ''}, it died again: ${second.death.message}`,
    );
  }

  /**
   * A step's first attempt. When its worker is frozen under it for another step's runaway, the
   * step can go no further there: it is run again on the pool at once (programs are
   * deterministic), and that run's answer stands. The frozen copy ends with its worker's kill,
   * unread (a frozen worker takes no new step, so it holds the program busy for no one).
   */
  async #firstAttempt(programId: string, worker: WorkerProcess, message: StepRequest, brief?: ContinueRequest): Promise<Attempted> {
    const there = this.#attempt(programId, worker, message, true, brief);
    let stopListening = (): void => {};
    const frozen = new Promise<boolean>((resolve) => {
      stopListening = worker.onFreeze(() => resolve(true));
    });
    let frozenFirst: boolean;
    try {
      frozenFirst = await Promise.race([there.then(() => false), frozen]);
    } finally {
      stopListening();
    }
    // The pool has replaced a frozen worker by then (#frozen), unless it killed it at once: then
    // with no other worker the step dies with it and runs again as any such step does (#run).
    if (!frozenFirst || this.#closing || worker.reportedRunaway(programId) || !this.#workers.some(takesSteps)) return there;
    this.#retried += 1;
    return this.#attempt(programId, this.#leastLoaded(), message, true);
  }

  /** `brief`: what to send in place of `message` (a warm resume as its pending answers); the deadline is `message`'s. */
  async #attempt(programId: string, worker: WorkerProcess, message: StepRequest, place: boolean, brief?: ContinueRequest): Promise<Attempted> {
    // Some builtins loop in native code that isolated-vm's timeout cannot interrupt, and the
    // worker still answers heartbeats meanwhile: a step past its hard deadline kills the worker.
    const deadlineMs = hardDeadline(message);
    let overran = false;
    // Both start when the step goes out: a worker still starting (a replacement, the spare) may take seconds.
    let sentAt: number | undefined;
    let deadline: NodeJS.Timeout | undefined;
    const sent = (): void => {
      sentAt = Date.now();
      deadline = setTimeout(() => {
        overran = true;
        worker.kill('deadline', `a step of program ${programId} ran past its hard deadline of ${deadlineMs} ms`);
      }, deadlineMs);
    };
    let reply: Reply;
    try {
      reply = await worker.request(brief ?? message, sent);
    } catch (error) {
      if (!(error instanceof WorkerDeathError)) throw error;
      if (this.#placement.get(programId)?.worker === worker) this.#placement.delete(programId);
      return { death: error, overran, deadlineMs, ranMs: sentAt === undefined ? 0 : Date.now() - sentAt };
    } finally {
      clearTimeout(deadline);
      this.#retireIfDone(worker);
    }
    if (reply.kind === 'busy') throw new ProgramBusyError(programId);
    if (reply.kind === 'not_paused') return { notPaused: true };
    if (reply.kind === 'failed') throw new Error(`The worker could not run program ${programId}: ${reply.message}`);
    const event = eventFromWire(reply.event);
    if (event.type === 'paused' && place && !worker.frozen) {
      const last = event.calls.at(-1);
      const digest = this.#placement.get(programId)?.digest ?? new RecordDigest();
      this.#placement.set(programId, {
        worker,
        lastUsed: Date.now(),
        digest,
        ...(last ? { pausedAt: { calls: last.seq + 1, pending: event.calls.length } } : {}),
      });
    }
    // Only its own placement: a step run again elsewhere (see #firstAttempt) may have placed it there since.
    else if (this.#placement.get(programId)?.worker === worker) this.#placement.delete(programId);
    return { event, path: reply.path ?? 'replay' };
  }

  /**
   * Runs `step` on the spare worker, one step at a time, so that a step that dies there died of
   * itself. Of the steps waiting, the one that had run the shortest on the worker that died goes
   * first: a worker's killer is most often the step that ran long (a runaway), and the steps it
   * took down with it should not wait behind it. The spare is started for the first step queued
   * and stopped after the last: what it holds paused resumes elsewhere by replay. Undefined
   * when the pool closed before the step's turn came.
   */
  async #alone<T>(death: WorkerDeathError, ranMs: number, step: (spare: WorkerProcess) => Promise<T>): Promise<T | undefined> {
    // The steps a worker took down with it all come here in the same turn of the loop (with the
    // same `death`): they are ordered among themselves before the first of them is taken
    // (setImmediate below); the steps of an earlier death stay ahead of them, so none waits forever.
    await new Promise<void>((start) => {
      const queue = this.#spareQueue;
      const after = queue.findIndex((waiting) => waiting.death === death && waiting.ranMs > ranMs);
      queue.splice(after < 0 ? queue.length : after, 0, { death, ranMs, start });
      if (!this.#spareBusy) {
        this.#spareBusy = true;
        setImmediate(() => this.#nextAlone());
      }
    });
    try {
      if (this.#closing) return undefined;
      // A worker takes requests while it starts (they wait in its channel), as the others do.
      if (this.#spare?.alive && this.#spare.frozen) this.#stopOnPurpose(this.#spare);
      if (!this.#spare?.alive || this.#spare.frozen) this.#spare = this.#spawn(this.#options.size);
      return await step(this.#spare);
    } finally {
      this.#nextAlone();
    }
  }

  /** Starts the next step waiting for the spare, or stops the spare when none waits. */
  #nextAlone(): void {
    const next = this.#spareQueue.shift();
    if (next) {
      next.start();
      return;
    }
    this.#spareBusy = false;
    if (this.#spare) this.#stopOnPurpose(this.#spare);
    this.#spare = undefined;
  }

  #stopOnPurpose(worker: WorkerProcess): void {
    this.#stopped.add(worker);
    if (this.#leaving.delete(worker)) this.#tellFrozen();
    for (const [programId, placed] of this.#placement) {
      if (placed.worker === worker) this.#placement.delete(programId);
    }
    void worker.stop();
  }

  /**
   * A worker frozen for a runaway (see WorkerProcess.frozen) leaves the pool at once: a new one
   * takes its place and its new steps, and the steps it had run again (#firstAttempt), its
   * runaway's excepted, which ends when the worker is killed for it. The spare is replaced
   * before its next step (#alone).
   */
  #frozen(worker: WorkerProcess): void {
    const index = this.#workers.indexOf(worker);
    // The spare leaves no place: it is replaced before its next step (#alone).
    if (worker === this.#spare) this.#tellFrozen();
    if (this.#closing || index < 0) return;
    // As many frozen as the pool has: runaways keep coming, and each frozen worker holds its
    // memory until its kill. This one is killed at once instead, replaced as a death is.
    if (this.#leaving.size >= this.#workers.length) {
      worker.kill('deadline', 'a runaway was reported while as many frozen workers as the pool has were waiting to be killed', true);
      return;
    }
    this.#leaving.add(worker);
    this.#workers[index] = this.#spawn(index);
    this.#tellFrozen();
  }

  /** Every worker that may see the server go away learns which are frozen (WorkerProcess.tellFrozenSiblings). */
  #tellFrozen(): void {
    const pids = this.#frozenPids();
    for (const worker of [...this.#workers, ...(this.#spare ? [this.#spare] : [])]) worker.tellFrozenSiblings(pids);
  }

  #frozenPids(): number[] {
    const spare = this.#spare?.frozen ? [this.#spare] : [];
    return [...this.#leaving, ...spare].flatMap((worker) => (worker.alive && worker.frozen && worker.pid !== undefined ? [worker.pid] : []));
  }

  /** A frozen worker whose steps all answered (their replies on their way as it was frozen) has nothing left to be killed for. */
  #retireIfDone(worker: WorkerProcess): void {
    if (this.#leaving.has(worker) && worker.alive && worker.load === 0) this.#stopOnPurpose(worker);
  }

  #leastLoaded(): WorkerProcess {
    // A worker killed at once for a runaway is frozen until it dies: taken only if no other is there.
    const usable = this.#workers.filter(takesSteps);
    const living = usable.length > 0 ? usable : this.#workers.filter((worker) => worker.alive);
    if (living.length === 0) throw new Error('No worker process is running');
    // A worker still starting (a replacement) takes steps only when none is ready.
    const ready = living.filter((worker) => worker.isReady);
    const alive = ready.length > 0 ? ready : living;
    // Among equally loaded workers, take turns: an idle pool spreads its programs.
    this.#turn = (this.#turn + 1) % alive.length;
    const rotated = [...alive.slice(this.#turn), ...alive.slice(0, this.#turn)];
    return rotated.reduce((best, worker) => (worker.load < best.load ? worker : best));
  }

  /**
   * A worker for slot `slot` (the spare's slot is the pool's size). The CPUs are read again for
   * each: the server may have been moved to others since it started. The spare is not pinned:
   * it runs steps that killed a worker, and pinned beside a busy worker one burning its CPU
   * would show only its share of it, too little for the supervisor's idle-CPU check.
   */
  #spawn(slot: number): WorkerProcess {
    const spare = slot === this.#options.size;
    const cpus = this.#options.pinCpus === false || spare ? [] : cpusToPinTo(this.#options.size);
    const cpu = cpus.length > 0 ? cpus[slot % cpus.length] : undefined;
    return new WorkerProcess(
      // With a worker per CPU or more, its siblings keep the other CPUs busy (see makesContextsBeside).
      { ...this.#options.runtime, makesContextsBeside: this.#options.size < availableParallelism() },
      this.#options,
      {
        onDeath: (dead, reason, detail) => this.#replace(dead, reason, detail, spare),
        onFrozen: (frozen) => this.#frozen(frozen),
        onPinFailed: (worker, detail) => {
          if (this.#pinFailureTold) return;
          this.#pinFailureTold = true;
          this.#options.onPinFailed?.(worker.pid, detail);
        },
      },
      {
        ...(this.#options.entry === undefined ? {} : { entry: this.#options.entry }),
        frozenSiblings: this.#frozenPids(),
        ...(cpu === undefined ? {} : { cpu }),
      },
    );
  }

  #replace(dead: WorkerProcess, reason: WorkerDeath, detail: string, spare: boolean): void {
    // A spare stopped because no step waits for it did not die.
    if (this.#leaving.delete(dead)) this.#tellFrozen();
    if (this.#closing || this.#stopped.has(dead)) return;
    this.#deaths[reason] += 1;
    this.#options.onWorkerDeath?.(dead.pid, reason, detail);
    // The spare is started again only for the next step that needs it.
    if (spare) return;
    for (const [programId, placed] of this.#placement) {
      if (placed.worker === dead) this.#placement.delete(programId);
    }
    const index = this.#workers.indexOf(dead);
    // Spawn the replacement at once so requests always find a worker; pause only a crash loop.
    const spawn = (): void => {
      if (!this.#closing && index >= 0) this.#workers[index] = this.#spawn(index);
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
