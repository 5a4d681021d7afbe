import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ProgramSpec } from '../runtime/isolate-program.ts';
import type { ProgramEvent, RecordedCall } from '../runtime/program-events.ts';
import type { ProgramEngine, ResumePath } from '../runtime/program-runtime.ts';
import { RecordDigest } from '../runtime/record-digest.ts';
import { PROTOCOL_VERSION, type WireEvent } from '../runtime/worker/protocol.ts';
import { continueMessage, eventFromWire, eventToWire } from '../runtime/worker/wire-codec.ts';
import { workerForkOptions, type ContinueRequest, type StepRequest } from '../runtime/worker/worker-process.ts';

const ECHO_ENTRY = fileURLToPath(new URL('./channel-echo.ts', import.meta.url));

/** What the bench drives: a program's start and resumes, as a server does. */
export type StepEngine = Pick<ProgramEngine, 'start' | 'resume'>;

/**
 * One step of a script: the request a pool sends for it, in the few fields the echo checks (its
 * kind, and a `continue`'s calls and answers), and the reply a worker gave to it.
 */
export interface ScriptedStep {
  readonly request: { readonly kind: 'start' | 'continue'; readonly calls?: number; readonly answers?: number };
  readonly reply: { readonly event: WireEvent; readonly path?: ResumePath };
}

/**
 * Wraps an engine so that each step's request, as a WorkerPool would send it, and the reply a
 * worker would give are kept, in order: the script a ChannelFloor plays.
 */
export function recordingSteps(engine: StepEngine): { readonly engine: StepEngine; readonly steps: ScriptedStep[] } {
  const steps: ScriptedStep[] = [];
  // The calls each program is paused on: a warm resume sends that many answers.
  const pending = new Map<string, number>();
  const paused = (programId: string, event: ProgramEvent): void => {
    if (event.type === 'paused') pending.set(programId, event.calls.length);
    else pending.delete(programId);
  };
  return {
    steps,
    engine: {
      start: async (programId, spec) => {
        const event = await engine.start(programId, spec);
        steps.push({ request: { kind: 'start' }, reply: { event: eventToWire(event) } });
        paused(programId, event);
        return event;
      },
      resume: async (programId, spec, recorded) => {
        const answers = pending.get(programId) ?? 0;
        const resumed = await engine.resume(programId, spec, recorded);
        steps.push({ request: { kind: 'continue', calls: recorded.length, answers }, reply: { event: eventToWire(resumed.event), path: resumed.path } });
        paused(programId, resumed.event);
        return resumed;
      },
    },
  };
}

/**
 * The channel to a worker with no worker behind it. A child forked as a worker is
 * (workerForkOptions: its Node flags, its environment, `advanced` serialization) plays a script of
 * one iteration's steps (recordingSteps): it answers each request with the reply a worker gave to
 * it, after checking that it is that step's request, and runs nothing. This side sends what a
 * WorkerPool sends (a `start` with the spec; a warm resume as a `continue`, continueMessage) and
 * reads the event out of each reply. Neither side checks a message against the protocol's
 * schemas, keeps a deadline or supervises: what is left is Node's channel, both processes woken
 * for every message, the copies, and the digest of each resume's earlier answers.
 */
export class ChannelFloor implements StepEngine {
  readonly #child: ChildProcess;
  /** Steps waiting for their reply, by request id. */
  readonly #waiting = new Map<number, { readonly resolve: (reply: ScriptedStep['reply']) => void; readonly reject: (error: Error) => void }>();
  /** Each program's digest of its record, and the calls it is paused on (a `continue` answers them). */
  readonly #programs = new Map<string, { readonly digest: RecordDigest; pending: number }>();
  /** Set once the echo has exited: every step fails with it from then on. */
  #gone: Error | undefined;
  #nextId = 0;

  private constructor(child: ChildProcess) {
    this.#child = child;
    // A send on a channel closed meanwhile is an error passed to its callback (see #step), not an event that ends the bench.
    child.on('error', () => {});
    child.once('exit', (code, signal) => {
      this.#gone = new Error(`the channel's echo exited (${signal ?? `code ${code}`})`);
      for (const { reject } of this.#waiting.values()) reject(this.#gone);
      this.#waiting.clear();
    });
    child.on('message', (message: ScriptedStep['reply'] & { readonly id: number }) => {
      const waiting = this.#waiting.get(message.id);
      this.#waiting.delete(message.id);
      waiting?.resolve(message);
    });
  }

  /** Forks the echo and hands it the script of one iteration, in the order the iteration takes its steps. */
  static async open(steps: readonly ScriptedStep[]): Promise<ChannelFloor> {
    const child = fork(ECHO_ENTRY, [], workerForkOptions(ECHO_ENTRY, {}));
    const scripted = new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code, signal) => reject(new Error(`the channel's echo exited (${signal ?? `code ${code}`}) before it was ready`)));
    });
    child.send({ script: steps.map(({ request, reply }) => ({ request, reply: { v: PROTOCOL_VERSION, kind: 'step', ...reply } })) });
    await scripted;
    return new ChannelFloor(child);
  }

  async start(programId: string, spec: ProgramSpec): Promise<ProgramEvent> {
    this.#programs.set(programId, { digest: new RecordDigest(), pending: 0 });
    return (await this.#step(programId, { kind: 'start', programId, spec })).event;
  }

  async resume(programId: string, _spec: ProgramSpec, recorded: readonly RecordedCall[]): Promise<{ event: ProgramEvent; path: ResumePath }> {
    const program = this.#programs.get(programId);
    if (!program) throw new Error(`ChannelFloor: program ${programId} was not started here`);
    return this.#step(programId, continueMessage(programId, recorded, program.pending, program.digest));
  }

  /** Ends the echo (it exits when its channel closes). */
  close(): void {
    if (this.#child.connected) this.#child.disconnect();
  }

  async #step(programId: string, message: StepRequest | ContinueRequest): Promise<{ event: ProgramEvent; path: ResumePath }> {
    const id = this.#nextId++;
    const reply = await new Promise<ScriptedStep['reply']>((resolve, reject) => {
      if (this.#gone) return reject(this.#gone);
      this.#waiting.set(id, { resolve, reject });
      this.#child.send({ ...message, v: PROTOCOL_VERSION, id }, (error) => {
        if (!error) return;
        this.#waiting.delete(id);
        reject(this.#gone ?? error);
      });
    });
    const event = eventFromWire(reply.event);
    if (event.type === 'paused') this.#programs.get(programId)!.pending = event.calls.length;
    else this.#programs.delete(programId);
    return { event, path: reply.path ?? 'replay' };
  }
}
