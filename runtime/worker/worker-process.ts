import { fork, type ChildProcess, type ForkOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ProgramSpec } from '../isolate-program.ts';
import type { RecordedCall } from '../program-events.ts';
import type { ProgramRuntimeOptions, ProgramRuntimeStats } from '../program-runtime.ts';
import { WorkerDeathError, type RunawayLimit, type WorkerDeath } from '../errors.ts';
import { cpuMsFromStat } from '../proc-stat.ts';
import { pinToCpu } from './cpu-pinning.ts';
import { PROTOCOL_VERSION, WorkerMessage, type HostMessage } from './protocol.ts';
import { RUNAWAY_THRESHOLDS_MS } from '../runaway-thresholds.ts';
import { DEFAULT_SPIN_WAIT_MS } from '../spin-wait.ts';

/**
 * Whether this module runs from the TypeScript sources (a clone, under tsx) rather than from
 * the built JavaScript of the package: a worker starts from the same kind of file.
 */
const FROM_SOURCES = import.meta.url.endsWith('.ts');

/** The script a worker runs; tests give a misbehaving one to exercise the supervisor. */
export const WORKER_ENTRY = fileURLToPath(new URL(FROM_SOURCES ? './worker-main.ts' : './worker-main.js', import.meta.url));

/**
 * V8 CPU profiling flags (`--cpu-prof`, `--cpu-prof-dir=…`, `--cpu-prof-interval=…`) the server
 * runs under, from its own flags or NODE_OPTIONS: a server profiled (as `npm run bench:profile`
 * runs it) profiles its workers too, which write theirs as they exit. A worker's environment is
 * not inherited, so NODE_OPTIONS would not reach it. Only the `=` forms are read; a
 * `--cpu-prof-name` is not passed on, since every worker would write its profile over the last.
 */
function inheritedProfilingFlags(): string[] {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  return flags.filter((flag) => /^--cpu-prof(-(dir|interval)=\S+)?$/.test(flag));
}

/**
 * Node flags of a worker. A TypeScript entry (the sources, or a test's misbehaving worker) is
 * loaded through tsx, resolved from here so that the worker finds it whatever the current
 * directory; the package's built workers need no loader, and tsx is not installed with it.
 */
function workerExecArgv(entry: string): string[] {
  const loader = entry.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : [];
  return ['--no-node-snapshot', ...inheritedProfilingFlags(), ...loader];
}

/**
 * How a worker process is forked: its Node flags, its environment (only what it is given; the
 * server's own is not inherited), its channel. Also how the bench's bare channel is forked, so
 * that what it times is a worker's channel.
 */
export function workerForkOptions(entry: string, env: Readonly<Record<string, string>>): ForkOptions {
  return {
    execArgv: workerExecArgv(entry),
    env: { PATH: process.env.PATH ?? '', TZ: process.env.TZ ?? '', ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Structured clone: see protocol.ts.
    serialization: 'advanced',
  };
}
const PAGE_BYTES = 4096;
/**
 * Idle CPU is judged over at least this long: a garbage collection after a step may take a
 * core for a moment, a runaway isolate takes it for good.
 */
const IDLE_CPU_WINDOW_MS = 1_000;
/**
 * How long a worker has to load (Node, isolated-vm, the runtime) and say it is ready. Its
 * heartbeat is judged only from then: beside two CPU burners a worker loaded through tsx took
 * seconds to start, past a short heartbeat timeout, and every replacement was killed starting.
 */
const START_TIMEOUT_MS = 30_000;
/** How long a worker whose channel broke has to exit by itself before it is killed. */
const BROKEN_CHANNEL_GRACE_MS = 250;

/** What a worker tells its pool. */
export interface WorkerEvents {
  /** It died (or was stopped), and why. */
  onDeath(worker: WorkerProcess, reason: WorkerDeath, detail: string): void;
  /** It was frozen for a runaway (see WorkerProcess.frozen): it takes no new step. */
  onFrozen(worker: WorkerProcess): void;
  /** It could not be pinned to the CPU it was given, and why: it runs where the kernel puts it. */
  onPinFailed(worker: WorkerProcess, detail: string): void;
}

export interface WorkerLimits {
  /** How often the supervisor checks the worker. */
  readonly heartbeatMs: number;
  /** A worker that answers no ping for this long is killed. */
  readonly heartbeatTimeoutMs: number;
  /** A worker whose resident memory passes this is killed. */
  readonly maxRssBytes: number;
  /**
   * A worker with no step running should use next to no CPU: beyond this share of one core
   * between two checks (an isolate that kept running after its step ended) it is killed.
   */
  readonly maxIdleCpuShare: number;
}

/** How a worker is started: its script, the frozen workers it must kill should the server go, its CPU. */
export interface WorkerStart {
  /** The worker script (default WORKER_ENTRY); tests give one that misbehaves. */
  readonly entry?: string;
  /** The pids of the workers frozen when it starts (see worker-main.ts). */
  readonly frozenSiblings?: readonly number[];
  /** The CPU to pin it to once it is ready, before its first step (cpu-pinning.ts); none when undefined. */
  readonly cpu?: number;
}

type Reply = Exclude<WorkerMessage, { kind: 'ready' | 'pong' | 'runaways' | 'prepared' }>;

/**
 * A step to run: a start or a resume message, before the channel adds its version and id. Its
 * spec and record are the caller's own, read only: the channel copies them as it sends them.
 */
export type StepRequest =
  | { readonly kind: 'start'; readonly programId: string; readonly spec: ProgramSpec }
  | { readonly kind: 'resume'; readonly programId: string; readonly spec: ProgramSpec; readonly recorded: readonly RecordedCall[] };
/** A warm resume sent as its pending answers only (see the `continue` message). */
export type ContinueRequest = Omit<Extract<HostMessage, { kind: 'continue' }>, 'v' | 'id'>;

interface Waiting {
  readonly programId: string;
  readonly resolve: (reply: Reply) => void;
  readonly reject: (death: WorkerDeathError) => void;
}

const RUNAWAY_DETAIL: Readonly<Record<RunawayLimit, (programId: string, overMs: number) => string>> = {
  wall_time: (programId, overMs) => `a step of program ${programId} ran ${overMs} ms past its wall-clock limit, and its isolate did not stop it`,
  memory: (programId, overMs) => `a step of program ${programId} was still running ${overMs} ms after its isolate was disposed at its heap limit`,
};

/** CPU seconds a process has used, and its resident memory, from /proc (Linux). */
function processUsage(pid: number): { cpuSeconds: number; rssBytes: number } | undefined {
  const cpuMs = cpuMsFromStat(`/proc/${pid}/stat`);
  if (cpuMs === undefined) return undefined;
  try {
    const rssPages = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    return { cpuSeconds: cpuMs / 1000, rssBytes: rssPages * PAGE_BYTES };
  } catch {
    return undefined;
  }
}

/**
 * One supervised worker process. The supervisor never trusts the worker to report on itself:
 * it reads the process's memory and CPU from the kernel, and kills it with SIGKILL on a
 * missed heartbeat, an RSS ceiling or CPU burnt while idle (isolate.dispose() alone does not
 * stop every runaway allocation or loop).
 */
export class WorkerProcess {
  readonly #child: ChildProcess;
  readonly #limits: WorkerLimits;
  readonly #waiting = new Map<number, Waiting>();
  readonly #events: WorkerEvents;
  #nextId = 0;
  #alive = true;
  #ready: Promise<void>;
  readonly #spawnedAt = Date.now();
  #lastPong = Date.now();
  /** When the supervisor last checked: a long gap since is the supervisor's own stall. */
  #lastCheck = Date.now();
  #isReady = false;
  /** When the worker last became idle (ready, no step waiting), and its CPU then. */
  #idleSince: { at: number; cpuSeconds: number } | undefined;
  /** How long the worker may keep its loop turning after a step's answer (spinUntilNextStep): no idle CPU is judged meanwhile. */
  readonly #awakeAfterStepMs: number;
  /** Until when the worker may still be awake after its last step's answer (Date.now()). */
  #awakeUntil = 0;
  #killedFor: { reason: WorkerDeath; detail: string } | undefined;
  #supervisor: NodeJS.Timeout;
  /** The runtime's counters as of the last heartbeat. */
  stats: ProgramRuntimeStats | undefined;
  /** The programs whose steps the worker last reported past a limit without ending, and which limit. */
  #runaways = new Map<string, RunawayLimit>();
  /** Every program the worker ever reported as a runaway. */
  readonly #ranAway = new Set<string>();
  /** prepareIsolates calls waiting for the worker's answer, by request id. */
  readonly #preparing = new Map<number, () => void>();

  constructor(runtimeOptions: ProgramRuntimeOptions, limits: WorkerLimits, events: WorkerEvents, start: WorkerStart = {}) {
    const { entry = WORKER_ENTRY, frozenSiblings = [], cpu } = start;
    this.#limits = limits;
    this.#awakeAfterStepMs = runtimeOptions.spinWaitMs ?? DEFAULT_SPIN_WAIT_MS;
    this.#events = events;
    this.#child = fork(
      entry,
      [],
      workerForkOptions(entry, { PTC_WORKER_OPTIONS: JSON.stringify(runtimeOptions), PTC_WORKER_FROZEN_SIBLINGS: frozenSiblings.join(',') }),
    );
    let markReady: () => void = () => {};
    this.#ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    this.#child.on('message', (raw: unknown) => {
      const parsed = WorkerMessage.safeParse(raw);
      if (!parsed.success) {
        this.kill('exit', `the worker sent a message outside the protocol: ${parsed.error.message}`);
        return;
      }
      const message = parsed.data;
      if (message.kind === 'ready') {
        const ready = (): void => {
          this.#isReady = true;
          this.#lastPong = Date.now();
          if (this.#frozenSiblings) this.#send({ v: PROTOCOL_VERSION, kind: 'frozen_siblings', pids: [...this.#frozenSiblings] });
          markReady();
        };
        // Pinned once its threads have started (those it starts later inherit the pinning),
        // before it is given any step.
        const pid = this.#child.pid;
        if (cpu === undefined || pid === undefined) ready();
        else
          void pinToCpu(pid, cpu).then((failure) => {
            // Dead meanwhile: its replacement is started and made ready instead.
            if (!this.#alive) return;
            if (failure !== undefined) this.#events.onPinFailed(this, failure);
            ready();
          });
      } else if (message.kind === 'prepared') {
        this.stats = message.stats;
        this.#preparing.get(message.id)?.();
        this.#preparing.delete(message.id);
      } else if (message.kind === 'pong' || message.kind === 'runaways') {
        if (message.kind === 'pong') {
          this.#lastPong = Date.now();
          this.stats = message.stats;
        }
        this.#runaways = new Map(message.runaways.map((step) => [step.programId, step.limit]));
        for (const step of message.runaways) this.#ranAway.add(step.programId);
        const runaway = message.runaways.find((step) => step.overMs > RUNAWAY_THRESHOLDS_MS[step.limit].kill);
        const freezing = message.runaways.find((step) => step.overMs >= RUNAWAY_THRESHOLDS_MS[step.limit].freeze);
        if (runaway) this.kill('deadline', RUNAWAY_DETAIL[runaway.limit](runaway.programId, runaway.overMs), true);
        else if (freezing) this.#freeze(freezing);
      } else {
        const waiting = this.#waiting.get(message.id);
        this.#waiting.delete(message.id);
        // A worker that answered a step may wait for the next awake, for up to its spinWaitMs:
        // that is no CPU burnt idle, and the idle window starts only after it. Only for a request
        // of ours: an answer to none would put the window off for nothing.
        if (waiting) this.#awakeUntil = Date.now() + this.#awakeAfterStepMs;
        // A step that answered is no runaway, whatever the last report said (its program
        // may run its next step here before the next heartbeat).
        if (waiting) this.#runaways.delete(waiting.programId);
        waiting?.resolve(message);
      }
    });
    this.#child.on('exit', (code, signal) => this.#died(code, signal));
    this.#child.on('error', () => {});
    this.#supervisor = setInterval(() => this.#check(), limits.heartbeatMs);
    this.#supervisor.unref();
  }

  /**
   * Whether the worker was frozen for a runaway (SIGSTOP: every thread of it stopped). Nothing it
   * runs is waited for then: the runaway's outcome is settled (its time limit passed, or its
   * isolate was disposed at its heap limit), and the other steps on it run again on the pool
   * (see WorkerPool). So it gets no CPU at all until it is killed for the runaway, at the same
   * point as it would be if it ran on (RUNAWAY_THRESHOLDS_MS), which bounds how long it holds its
   * memory; the runaway's answer comes with that kill. A lower priority was not enough: at
   * nice 19 a runaway still takes a slice of a core whenever it is runnable (docs/SANDBOX.md).
   */
  get frozen(): boolean {
    return this.#frozen;
  }

  #frozen = false;
  #killAfterFreeze: NodeJS.Timeout | undefined;
  #killedForRunaway = false;
  readonly #freezeListeners = new Set<() => void>();

  /**
   * Calls `listener` when the worker is frozen (at once if it was), for a step running on it
   * (see WorkerPool); the function returned stops listening, so that a worker never frozen
   * holds no listener per step it ran.
   */
  onFreeze(listener: () => void): () => void {
    if (this.#frozen) {
      listener();
      return () => {};
    }
    this.#freezeListeners.add(listener);
    return () => this.#freezeListeners.delete(listener);
  }

  /** Whether the worker reported this program's step as a runaway (so its limits were its own doing). */
  reportedRunaway(programId: string): boolean {
    return this.#ranAway.has(programId);
  }

  #freeze(runaway: { readonly programId: string; readonly limit: RunawayLimit; readonly overMs: number }): void {
    if (this.#frozen || !this.#alive) return;
    this.#frozen = true;
    this.#releasePreparing();
    // The pool takes the worker out first (it may kill it instead), then its steps run again.
    this.#events.onFrozen(this);
    for (const listener of this.#freezeListeners) listener();
    this.#freezeListeners.clear();
    if (!this.#alive || this.#killedFor) return;
    const { kill } = RUNAWAY_THRESHOLDS_MS[runaway.limit];
    const killForRunaway = (): void => this.kill('deadline', RUNAWAY_DETAIL[runaway.limit](runaway.programId, kill), true);
    let stopped = false;
    try {
      stopped = this.#child.kill('SIGSTOP');
    } catch {
      // No SIGSTOP here (Windows): killed at once below.
    }
    if (!stopped) return killForRunaway();
    this.#killAfterFreeze = setTimeout(killForRunaway, Math.max(0, kill - runaway.overMs));
    // Frozen, the worker cannot see this process go away (its channel close): it goes with it.
    process.once('exit', this.#killWithServer);
  }

  readonly #killWithServer = (): void => {
    this.#child.kill('SIGKILL');
  };

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get alive(): boolean {
    return this.#alive;
  }

  /** Steps waiting on this worker: the pool sends new work to the least loaded. */
  get load(): number {
    return this.#waiting.size;
  }

  ready(): Promise<void> {
    return this.#ready;
  }

  get isReady(): boolean {
    return this.#isReady;
  }

  /**
   * Sends a request and waits for its reply; rejects with WorkerDeathError if the worker dies
   * first. `onSent` is called when the request goes out (at once, or once a starting worker is
   * ready): a step's clock starts then, not while its worker loads.
   */
  request(message: StepRequest | ContinueRequest, onSent: () => void = () => {}): Promise<Reply> {
    if (!this.#alive) return Promise.reject(new WorkerDeathError(this.#killedFor?.reason ?? 'exit', 'the worker process is gone'));
    const id = this.#nextId++;
    this.#idleSince = undefined;
    return new Promise<Reply>((resolve, reject) => {
      this.#waiting.set(id, { programId: message.programId, resolve, reject });
      // Only once the worker listens: a message that reaches a starting worker before its
      // handler is dropped, and the step would wait forever (a replacement, or a spare started
      // for a step, gets its first request at once). A worker that dies first rejects it.
      const send = (): void => {
        if (!this.#alive || !this.#waiting.has(id)) return;
        onSent();
        this.#send({ ...message, v: PROTOCOL_VERSION, id } as HostMessage);
      };
      if (this.#isReady) send();
      else void this.#ready.then(send);
    });
  }

  /**
   * Has the worker make the isolates it keeps ahead of programs now (WarmIsolates.whenFull), and
   * resolves once they are made, `stats` then up to date. Also resolves, with nothing made, once
   * the worker dies or is frozen: it takes no program then, and the pool waits on its replacement.
   */
  prepareIsolates(): Promise<void> {
    if (!this.#alive || this.#frozen) return Promise.resolve();
    const id = this.#nextId++;
    this.#idleSince = undefined;
    return new Promise<void>((resolve) => {
      this.#preparing.set(id, resolve);
      const send = (): void => {
        if (this.#alive && this.#preparing.has(id)) this.#send({ v: PROTOCOL_VERSION, kind: 'prepare', id });
      };
      if (this.#isReady) send();
      else void this.#ready.then(send);
    });
  }

  #releasePreparing(): void {
    for (const resolve of this.#preparing.values()) resolve();
    this.#preparing.clear();
  }

  /**
   * Tells the worker which other workers are frozen: it kills them if it sees the server go away
   * (worker-main.ts). A worker still starting has the list it was started with, and this one once it listens.
   */
  tellFrozenSiblings(pids: readonly number[]): void {
    if (!this.#alive) return;
    if (this.#isReady) this.#send({ v: PROTOCOL_VERSION, kind: 'frozen_siblings', pids: [...pids] });
    else this.#frozenSiblings = pids;
  }

  #frozenSiblings: readonly number[] | undefined;

  dispose(programId: string): void {
    if (this.#alive) this.#send({ v: PROTOCOL_VERSION, kind: 'dispose', programId });
  }

  /** `forRunaway`: killed for a step it reported as a runaway (see WorkerDeathError.forRunaway). */
  kill(reason: WorkerDeath, detail: string, forRunaway = false): void {
    if (!this.#alive) return;
    if (!this.#killedFor) this.#killedForRunaway = forRunaway;
    this.#killedFor ??= { reason, detail };
    this.#child.kill('SIGKILL');
  }

  /** Ends the worker: it closes its isolates when its channel closes; SIGKILL if it lingers. */
  async stop(): Promise<void> {
    clearInterval(this.#supervisor);
    if (!this.#alive) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    // A frozen worker reads nothing: it could not see its channel close.
    if (this.#frozen) this.#child.kill('SIGKILL');
    else if (this.#child.connected) {
      // Stopped on purpose, it must not take the server for gone and kill the frozen workers.
      this.#send({ v: PROTOCOL_VERSION, kind: 'frozen_siblings', pids: [] });
      this.#child.disconnect();
    }
    const lingering = setTimeout(() => this.#child.kill('SIGKILL'), 2_000);
    await exited;
    clearTimeout(lingering);
  }

  #send(message: HostMessage): void {
    // With a callback, a channel that closed under the message (a worker dying) is an error
    // passed here, not an unhandled 'error' event.
    // A worker that exits closes its channel first: wait a moment for its exit, whose code says
    // more than the broken channel, and kill it only if it is somehow still there.
    const broken = (error: Error | null): void => {
      if (!error) return;
      setTimeout(() => {
        if (this.#alive) this.kill('exit', 'the IPC channel to the worker broke');
      }, BROKEN_CHANNEL_GRACE_MS).unref();
    };
    try {
      this.#child.send(message, broken);
    } catch (error) {
      broken(error as Error);
    }
  }

  #check(): void {
    // A frozen worker answers no heartbeat: its kill is timed (see #freeze).
    if (!this.#alive || this.#frozen) return;
    const now = Date.now();
    // A check that comes far too late means this process's loop was blocked: the worker's pongs
    // are waiting unread in the channel, and the time they waited is not the worker's silence.
    // Only a stall of half the timeout or more is forgiven: a busy machine's ordinary lateness
    // must not slow the detection of a worker that is really silent.
    const stalled = now - this.#lastCheck - this.#limits.heartbeatMs;
    this.#lastCheck = now;
    if (stalled >= this.#limits.heartbeatTimeoutMs / 2) this.#lastPong = Math.min(now, this.#lastPong + stalled);
    if (!this.#isReady) {
      const allowed = Math.max(START_TIMEOUT_MS, this.#limits.heartbeatTimeoutMs);
      if (now - this.#spawnedAt > allowed) this.kill('heartbeat', `the worker was not ready ${allowed} ms after it was started`);
      return;
    }
    if (now - this.#lastPong > this.#limits.heartbeatTimeoutMs) {
      this.kill('heartbeat', `the worker answered no heartbeat for ${now - this.#lastPong} ms`);
      return;
    }
    const usage = this.pid === undefined ? undefined : processUsage(this.pid);
    if (usage) {
      if (usage.rssBytes > this.#limits.maxRssBytes) {
        this.kill(
          'rss',
          `the worker's resident memory reached ${Math.round(usage.rssBytes / 2 ** 20)} MiB, over its ceiling of ${Math.round(this.#limits.maxRssBytes / 2 ** 20)} MiB`,
        );
        return;
      }
      // CPU after settle: a ready worker with no step running, making no isolate it was asked for, should be near silent.
      if (!this.#isReady || this.#waiting.size > 0 || this.#preparing.size > 0 || now < this.#awakeUntil) {
        this.#idleSince = undefined;
      } else if (!this.#idleSince) {
        this.#idleSince = { at: now, cpuSeconds: usage.cpuSeconds };
      } else if (now - this.#idleSince.at >= IDLE_CPU_WINDOW_MS) {
        const share = (usage.cpuSeconds - this.#idleSince.cpuSeconds) / ((now - this.#idleSince.at) / 1000);
        if (share > this.#limits.maxIdleCpuShare) {
          this.kill('cpu', `the worker burnt ${Math.round(share * 100)}% of a core for ${now - this.#idleSince.at} ms with no step running`);
          return;
        }
        this.#idleSince = { at: now, cpuSeconds: usage.cpuSeconds };
      }
    }
    this.#send({ v: PROTOCOL_VERSION, kind: 'ping', id: this.#nextId++ });
  }

  #died(code: number | null, signal: NodeJS.Signals | null): void {
    this.#alive = false;
    clearInterval(this.#supervisor);
    clearTimeout(this.#killAfterFreeze);
    process.off('exit', this.#killWithServer);
    const { reason, detail } = this.#killedFor ?? { reason: 'exit' as const, detail: `the worker process exited (${signal ?? `code ${code}`})` };
    const runaways = new Map(this.#runaways);
    const memoryRunaway = [...runaways.values()].includes('memory');
    const forRunaway = (reason === 'deadline' && this.#killedForRunaway) || (reason === 'rss' && memoryRunaway);
    const death = new WorkerDeathError(reason, detail, runaways, forRunaway);
    for (const waiting of this.#waiting.values()) waiting.reject(death);
    this.#waiting.clear();
    this.#releasePreparing();
    this.#events.onDeath(this, reason, detail);
  }
}
