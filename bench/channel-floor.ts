import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ProgramSpec } from '../runtime/isolate-program.ts';
import type { ProgramEvent, RecordedCall } from '../runtime/program-events.ts';
import type { ProgramEngine, ResumePath } from '../runtime/program-runtime.ts';
import { PROTOCOL_VERSION, type WireEvent } from '../runtime/worker/protocol.ts';
import { RecordDigest } from '../runtime/worker/record-digest.ts';
import { answersToWire, eventFromWire, eventToWire } from '../runtime/worker/wire-codec.ts';
import { workerExecArgv, type ContinueRequest, type StepRequest } from '../runtime/worker/worker-process.ts';

const ECHO_ENTRY = fileURLToPath(new URL('./channel-echo.ts', import.meta.url));

/** What the bench drives: a program's start and resumes, as a server does. */
export type StepEngine = Pick<ProgramEngine, 'start' | 'resume'>;

/** A worker's reply to a step, as it crosses the channel. */
interface StepReply {
  readonly event: WireEvent;
  readonly path?: ResumePath;
}

/**
 * Wraps an engine so that the replies a worker would send for its steps are kept, in order: the
 * script a ChannelFloor answers with.
 */
export function recordingReplies(engine: StepEngine): { readonly engine: StepEngine; readonly replies: StepReply[] } {
  const replies: StepReply[] = [];
  return {
    replies,
    engine: {
      start: async (programId, spec) => {
        const event = await engine.start(programId, spec);
        replies.push({ event: eventToWire(event) });
        return event;
      },
      resume: async (programId, spec, recorded) => {
        const resumed = await engine.resume(programId, spec, recorded);
        replies.push({ event: eventToWire(resumed.event), path: resumed.path });
        return resumed;
      },
    },
  };
}

/**
 * The channel to a worker with no worker behind it: the floor under any step run in another
 * process. A child forked as a worker is (its Node flags, `advanced` serialization) answers each
 * message with the reply a real worker gave to it (recordingReplies), without running anything;
 * this side sends what a WorkerPool sends (a `start`, then each warm resume as a `continue` with
 * the pending answers and the digest of the rest) and reads the event out of the reply. Neither
 * side checks a message, keeps a deadline or supervises: what is left is Node's channel, both
 * processes waking for every message, and the copies.
 */
export class ChannelFloor implements StepEngine {
  readonly #child: ChildProcess;
  readonly #waiting = new Map<number, (reply: StepReply) => void>();
  readonly #failing = new Map<number, (error: Error) => void>();
  readonly #programs = new Map<string, { readonly digest: RecordDigest; pending: number }>();
  #nextId = 0;

  private constructor(child: ChildProcess) {
    this.#child = child;
    // An echo gone under a step would leave it waiting for ever: the bench fails instead.
    child.once('exit', (code, signal) => {
      const gone = new Error(`the channel's echo exited (${signal ?? `code ${code}`}) under a step`);
      for (const reject of this.#failing.values()) reject(gone);
      this.#waiting.clear();
      this.#failing.clear();
    });
    child.on('message', (message: StepReply & { readonly id: number }) => {
      const resolve = this.#waiting.get(message.id);
      this.#waiting.delete(message.id);
      this.#failing.delete(message.id);
      resolve?.(message);
    });
  }

  /** Forks the echo and hands it the replies of one iteration, in the order the iteration asks for them. */
  static async open(replies: readonly StepReply[]): Promise<ChannelFloor> {
    const child = fork(ECHO_ENTRY, [], {
      execArgv: workerExecArgv(ECHO_ENTRY),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    const scripted = new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code, signal) => reject(new Error(`the channel's echo exited (${signal ?? `code ${code}`}) before it was ready`)));
    });
    child.send({ script: replies.map((reply) => ({ v: PROTOCOL_VERSION, kind: 'step', ...reply })) });
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
    const answered = recorded.length - program.pending;
    const brief: ContinueRequest = {
      kind: 'continue',
      programId,
      calls: recorded.length,
      answeredDigest: program.digest.of(recorded, answered),
      ...answersToWire(recorded, answered),
    };
    return this.#step(programId, brief);
  }

  close(): void {
    this.#child.disconnect();
  }

  async #step(programId: string, message: StepRequest | ContinueRequest): Promise<{ event: ProgramEvent; path: ResumePath }> {
    const id = this.#nextId++;
    const reply = await new Promise<StepReply>((resolve, reject) => {
      this.#waiting.set(id, resolve);
      this.#failing.set(id, reject);
      this.#child.send({ ...message, v: PROTOCOL_VERSION, id });
    });
    const event = eventFromWire(reply.event);
    if (event.type === 'paused') this.#programs.get(programId)!.pending = event.calls.length;
    else this.#programs.delete(programId);
    return { event, path: reply.path ?? 'replay' };
  }
}
