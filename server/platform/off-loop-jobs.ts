import type { ResourceLimits, Worker } from 'node:worker_threads';
import { EmulatorError, startModuleThread, watchThreadDeadline } from '../../runtime/index.ts';

/**
 * Work whose cost a request sets (its tools' schemas, its message) done in threads of its own,
 * one job per thread at a time, so that the server's loop never waits on it: each job has a
 * deadline past which its thread is stopped (a new one starts for the next job), counted in the
 * thread's CPU time (runtime/thread-deadline.ts: on a busy machine, waiting for a core is not
 * the job's fault), and the queue is bounded. The threads' module answers with serveJobs
 * (off-loop-thread.ts).
 */

export class OffLoopQueueFullError extends EmulatorError {
  override readonly name = 'OffLoopQueueFullError';
  readonly code = 'PTC_ERR_OFF_LOOP_QUEUE_FULL';
}

export class OffLoopDeadlineError extends EmulatorError {
  override readonly name = 'OffLoopDeadlineError';
  readonly code = 'PTC_ERR_OFF_LOOP_DEADLINE';
}

export interface OffLoopJobsOptions {
  /** The threads' module (from the sources a `.ts` URL: startModuleThread registers tsx there). */
  readonly entry: URL;
  /** What the work is, for messages: "the autopilot". */
  readonly name: string;
  readonly deadlineMs: number;
  /** Jobs waiting at most; one more is refused (OffLoopQueueFullError). */
  readonly maxQueued: number;
  /** Threads at most (each started when a job needs it): a job past its deadline holds one of them, not all. */
  readonly threads?: number;
  readonly resourceLimits?: ResourceLimits;
}

interface Queued<Job, Result> {
  readonly id: number;
  readonly job: Job;
  readonly settle: (outcome: { result: Result } | { error: Error }) => void;
}

type Reply<Result> = { readonly ready: true; readonly threadId?: number } | { readonly id: number; readonly result?: Result; readonly error?: string };

/** One thread and the job it runs. */
interface Lane<Job, Result> {
  readonly worker: Worker;
  ready: boolean;
  /** The thread's Linux id, whose CPU time a job's deadline counts. */
  threadId: number | undefined;
  running: Queued<Job, Result> | undefined;
  stopWatching: (() => void) | undefined;
}

export class OffLoopJobs<Job, Result> {
  readonly #options: OffLoopJobsOptions;
  readonly #queue: Queued<Job, Result>[] = [];
  readonly #lanes = new Set<Lane<Job, Result>>();
  #nextId = 1;
  #closed = false;

  constructor(options: OffLoopJobsOptions) {
    this.#options = options;
  }

  /** Runs a job in a thread; rejects when the queue is full, past the deadline, or when the job throws. */
  run(job: Job): Promise<Result> {
    if (this.#closed) return Promise.reject(new Error(`${this.#options.name} is closed`));
    if (this.#queue.length >= this.#options.maxQueued) {
      return Promise.reject(new OffLoopQueueFullError(`${this.#options.name} has ${this.#options.maxQueued} jobs waiting already`));
    }
    return new Promise<Result>((resolve, reject) => {
      this.#queue.push({ id: this.#nextId++, job, settle: (outcome) => ('result' in outcome ? resolve(outcome.result) : reject(outcome.error)) });
      this.#dispatch();
    });
  }

  /** Stops the threads; jobs still waiting or running are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const queued of this.#queue.splice(0)) queued.settle({ error: new Error(`${this.#options.name} was closed`) });
    const lanes = [...this.#lanes];
    this.#lanes.clear();
    for (const lane of lanes) {
      lane.stopWatching?.();
      lane.running?.settle({ error: new Error(`${this.#options.name} was closed`) });
    }
    await Promise.all(lanes.map((lane) => lane.worker.terminate()));
  }

  /** Gives waiting jobs to idle threads, starting threads up to the bound. */
  #dispatch(): void {
    for (const lane of this.#lanes) if (lane.ready && !lane.running) this.#post(lane);
    while (this.#queue.length > 0 && this.#lanes.size < (this.#options.threads ?? 1) && !this.#closed) this.#start();
    for (const lane of this.#lanes) {
      // An idle thread does not keep the process alive.
      if (lane.running || !lane.ready) lane.worker.ref();
      else lane.worker.unref();
    }
  }

  #start(): void {
    const worker = startModuleThread(this.#options.entry, this.#options.resourceLimits);
    const lane: Lane<Job, Result> = { worker, ready: false, threadId: undefined, running: undefined, stopWatching: undefined };
    this.#lanes.add(lane);
    worker.on('message', (reply: Reply<Result>) => {
      if (!this.#lanes.has(lane)) return;
      if ('ready' in reply) {
        lane.ready = true;
        lane.threadId = reply.threadId;
        this.#dispatch();
        return;
      }
      const done = lane.running;
      if (done?.id !== reply.id) return;
      lane.stopWatching?.();
      lane.running = undefined;
      done.settle(reply.error === undefined ? { result: reply.result as Result } : { error: new Error(reply.error) });
      this.#dispatch();
    });
    worker.on('error', (error) => this.#stop(lane, error));
    worker.on('exit', (code) => this.#stop(lane, new Error(`${this.#options.name}'s thread exited (code ${code})`)));
  }

  #post(lane: Lane<Job, Result>): void {
    const head = this.#queue.shift();
    if (!head) return;
    lane.running = head;
    lane.stopWatching = watchThreadDeadline(lane.threadId, this.#options.deadlineMs, (measure) =>
      this.#stop(lane, new OffLoopDeadlineError(`${this.#options.name} took over ${measure}`)),
    );
    lane.worker.postMessage({ id: head.id, job: head.job });
  }

  /** Ends a thread that failed or ran past the deadline: its job fails, and the others go on. */
  #stop(lane: Lane<Job, Result>, reason: Error): void {
    if (!this.#lanes.delete(lane)) return;
    lane.stopWatching?.();
    lane.running?.settle({ error: reason });
    // A thread that ended before it was ready will not start better next time: the job it would
    // have run fails, rather than threads being started for ever.
    if (!lane.ready) this.#queue.shift()?.settle({ error: reason });
    void lane.worker.terminate();
    this.#dispatch();
  }
}
