/**
 * A worker process: runs programs in its isolates for the server, over Node's IPC channel.
 * Started by WorkerPool with `--no-node-snapshot`. Holds no HTTP and no conversation state,
 * only its paused isolates; if it dies, the server replays those programs elsewhere.
 */
import { ProgramBusyError } from '../errors.ts';
import { isStopped } from '../proc-stat.ts';
import type { ProgramEvent } from '../program-events.ts';
import { ProgramRuntime, type ProgramRuntimeOptions, type ResumePath } from '../program-runtime.ts';
import { HostMessage, PROTOCOL_VERSION, type WorkerMessage } from './protocol.ts';
import { RUNAWAY_THRESHOLDS_MS } from '../runaway-thresholds.ts';
import { DEFAULT_SPIN_WAIT_MS, spinUntilNextStep } from '../spin-wait.ts';
import { answersFromWire, eventToWire } from './wire-codec.ts';

const options = JSON.parse(process.env.PTC_WORKER_OPTIONS ?? '{}') as ProgramRuntimeOptions;
// A step that runs away is the supervisor's to stop: it freezes and kills this worker for it, from
// the runaways reported below, which an isolate disposed here would report as a memory runaway.
const runtime = new ProgramRuntime({ ...options, stopsRunaways: false });
/** The workers the server froze, as it last said (at this worker's start, then by message). */
let frozenSiblings = (process.env.PTC_WORKER_FROZEN_SIBLINGS ?? '').split(',').filter(Boolean).map(Number);

function send(message: WorkerMessage): void {
  // The server may be gone (closing, or dead): a reply with nowhere to go is dropped.
  if (process.connected) process.send?.(message, () => {});
}

/** A step's outcome to the server; a program paused on calls may be resumed at once: its resume is awaited awake. */
function sendStep(id: number, event: ProgramEvent, path?: ResumePath): void {
  send({ v: PROTOCOL_VERSION, kind: 'step', id, event: eventToWire(event), ...(path ? { path } : {}) });
  if (event.type === 'paused') spinUntilNextStep(options.spinWaitMs ?? DEFAULT_SPIN_WAIT_MS);
}

async function handle(message: HostMessage): Promise<void> {
  switch (message.kind) {
    case 'ping':
      send({ v: PROTOCOL_VERSION, kind: 'pong', id: message.id, runaways: runtime.runaways(), stats: runtime.stats() });
      return;
    case 'dispose':
      runtime.dispose(message.programId);
      return;
    case 'frozen_siblings':
      frozenSiblings = message.pids;
      return;
    case 'prepare':
      await runtime.isolatesReady();
      send({ v: PROTOCOL_VERSION, kind: 'prepared', id: message.id, stats: runtime.stats() });
      return;
    case 'start':
    case 'resume':
    case 'continue':
      try {
        if (message.kind === 'continue') {
          const outputs = answersFromWire(message.calls, message.answers, message.failed);
          const event = await runtime.continueWarm(message.programId, message.calls, message.answeredDigest, outputs);
          if (event) sendStep(message.id, event, 'warm');
          else send({ v: PROTOCOL_VERSION, kind: 'not_paused', id: message.id });
        } else if (message.kind === 'start') {
          sendStep(message.id, await runtime.start(message.programId, message.spec));
        } else {
          const { event, path } = await runtime.resume(message.programId, message.spec, message.recorded);
          sendStep(message.id, event, path);
        }
      } catch (error) {
        if (error instanceof ProgramBusyError) send({ v: PROTOCOL_VERSION, kind: 'busy', id: message.id, programId: message.programId });
        else send({ v: PROTOCOL_VERSION, kind: 'failed', id: message.id, message: error instanceof Error ? error.message : String(error) });
      }
  }
}

process.on('message', (raw: unknown) => {
  const parsed = HostMessage.safeParse(raw);
  // A message this worker cannot read means a server of another version: refuse it loudly.
  if (!parsed.success) {
    process.stderr.write(`ptc-emulator worker: unreadable message from the server: ${parsed.error.message}\n`);
    process.exit(3);
  }
  void handle(parsed.data);
});

// The server going away (its IPC channel closing) ends the worker: no orphan isolates. A frozen
// sibling cannot see it go (a server killed with SIGKILL kills nothing), so this worker kills
// it: only while it is still stopped, since a pid freed since may have been given to another.
function serverGone(): void {
  for (const pid of frozenSiblings) {
    try {
      if (isStopped(pid)) process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
  void runtime.close().finally(() => process.exit(0));
}
process.on('disconnect', serverGone);
// Gone while this worker loaded its modules: the event came before anyone listened.
if (!process.connected) serverGone();

/**
 * How often the worker looks for runaways between heartbeats. One is reported when it appears,
 * and again when it is due to be frozen (the supervisor stops this worker for it, so that it
 * costs the machine nothing: see WorkerProcess.frozen) and to be killed for it.
 */
const RUNAWAY_POLL_MS = 50;
/** What was last reported of each runaway: 0 when it appeared, 1 once due to be frozen, 2 to be killed. */
let reported = new Map<string, number>();
setInterval(() => {
  const runaways = runtime.runaways();
  const now = new Map(
    runaways.map(({ programId, limit, overMs }) => {
      const { freeze, kill } = RUNAWAY_THRESHOLDS_MS[limit];
      return [programId, overMs > kill ? 2 : overMs >= freeze ? 1 : 0];
    }),
  );
  const news = [...now].some(([programId, stage]) => reported.get(programId) !== stage);
  reported = now;
  if (news) send({ v: PROTOCOL_VERSION, kind: 'runaways', runaways });
}, RUNAWAY_POLL_MS).unref();

send({ v: PROTOCOL_VERSION, kind: 'ready', pid: process.pid });
