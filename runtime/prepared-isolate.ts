import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { disposeEnded } from './isolate-disposal.ts';
import { dispatchArguments, guestLimitMessages, parseGuestReply, type SandboxConfig, type SandboxSetup } from './guest-protocol.ts';

const PRELUDE_SOURCE = readFileSync(new URL('./guest-prelude.js', import.meta.url), 'utf8');
const PRELUDE_FILENAME = 'ptc:prelude';

/** What `dispatch` is, seen from the host: an op's name and its payload as JSON in, a reply as JSON out. */
export type Dispatch = (op: string, payloadJson: string) => string;

/**
 * An isolate with its context, the prelude run and installed: ready for one program's `start`
 * (its configuration and code). Nothing of any request is in it.
 */
export interface PreparedIsolate {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  /** The prelude's `dispatch` in the program's context. */
  readonly dispatch: ivm.Reference<Dispatch>;
}

/**
 * Bounds the one asynchronous call made into an isolate while it is made ahead of a program (no
 * step's clock is running then): a `warm` of our own (warmUp).
 */
const PREPARE_TIMEOUT_MS = 5_000;

/** installSandbox's argument: our own constants only, the same for every context. */
const SETUP_JSON = JSON.stringify({ limitMessages: guestLimitMessages() } satisfies SandboxSetup);

/**
 * Where the snapshot's scripts leave the prelude, on the global object of every context made from
 * it; the host takes `dispatch` from there and deletes it before any program's code is in the
 * context, so no program ever sees either.
 */
const INSTALL_KEY = '__ptcInstallSandbox';
const DISPATCH_KEY = '__ptcDispatch';

/**
 * The snapshot's scripts. guest-prelude.js is one expression statement (the parenthesized
 * `installSandbox`), so the assignment on its first line takes that function without moving any
 * line of the prelude (its stack frames keep their places). The second script installs it, as
 * every program's context needs it.
 */
const SNAPSHOT_SCRIPTS = [
  { code: `globalThis.${INSTALL_KEY} = ${PRELUDE_SOURCE}`, filename: PRELUDE_FILENAME },
  { code: `globalThis.${DISPATCH_KEY} = globalThis.${INSTALL_KEY}(${JSON.stringify(SETUP_JSON)}); delete globalThis.${INSTALL_KEY};`, filename: 'ptc:install' },
];

/**
 * A program of ours (never a request's), run through the prelude in a scratch context as the
 * snapshot is made: V8 compiles a function when it is first called, and the snapshot keeps what
 * was compiled, so a program's first steps do not compile `start`, `report`, `deliver` and the
 * rest again in each isolate. The scratch context itself is not in the snapshot.
 */
const EXERCISE = {
  config: {
    seed: 1,
    clock: 0,
    tools: [{ id: 'probe', keys: ['probe'], text: false, parseJson: true }],
    limits: { maxCalls: 10, maxCallsInFlight: 10, maxArgumentBytes: 1024, maxOutputBytes: 1024, maxResumes: 10 },
  },
  code: 'const [a, b] = await Promise.all([tools.probe({ n: 1 }), tools.probe({ n: 2 })]); text(JSON.stringify([a, b]));',
  answers: [
    { seq: 0, output: '{"v":1}' },
    { seq: 1, output: '{"v":2}' },
  ],
} as const satisfies { config: SandboxConfig; code: string; answers: readonly { seq: number; output: string }[] };

/**
 * The warm-up script: `start`, `report` and `deliver` in one script; the program's continuation
 * runs in the microtasks after it, and a `report` queued there collects its end.
 */
const WARMUP_SCRIPT = `{
  const dispatch = globalThis.${DISPATCH_KEY};
  dispatch('start', ${JSON.stringify(JSON.stringify({ config: EXERCISE.config, code: EXERCISE.code }))});
  dispatch('report', 'null');
  dispatch('deliver', ${JSON.stringify(JSON.stringify(EXERCISE.answers))});
  Promise.resolve().then(() => Promise.resolve()).then(() => Promise.resolve()).then(() => dispatch('report', 'null'));
}`;

let preludeSnapshot: ivm.ExternalCopy<ArrayBuffer> | undefined;

/**
 * A V8 heap snapshot holding a context with the prelude run and installed, made once per process
 * from our own scripts (never from a request's content). An isolate made from it has every
 * context start where the prelude's install left one: the install (capturing the built-ins,
 * replacing Date, Math.random, ArrayBuffer and the rest, 0.6 ms an isolate here) and the
 * prelude's compile are paid once per process instead of once per program.
 */
function snapshot(): ivm.ExternalCopy<ArrayBuffer> {
  preludeSnapshot ??= ivm.Isolate.createSnapshot(SNAPSHOT_SCRIPTS, WARMUP_SCRIPT);
  return preludeSnapshot;
}

/**
 * The prelude's `dispatch` in `context` (one made from the snapshot), taken off its global object.
 * Synchronous and on this thread: no script runs (the property is a plain data property of ours).
 */
function takeDispatch(context: ivm.Context): ivm.Reference<Dispatch> {
  const dispatch = context.global.getSync(DISPATCH_KEY, { reference: true }) as ivm.Reference<Dispatch>;
  context.global.deleteSync(DISPATCH_KEY);
  if (dispatch.typeof !== 'function') throw new Error('The prelude is not installed in this context');
  return dispatch;
}

/**
 * A new isolate of `memoryMb`, made from the prelude's snapshot: its context has the prelude run
 * and installed. Synchronous, on this thread: none of it is a request's code, it takes about as
 * long as the `new Isolate` that must be synchronous anyway, and each asynchronous step would
 * add two thread hand-overs (to the isolate's thread and back), which cost more than the step.
 */
export function prepareIsolate(memoryMb: number): PreparedIsolate {
  disposeEnded();
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb, snapshot: snapshot() });
  try {
    const context = isolate.createContextSync();
    return { isolate, context, dispatch: takeDispatch(context) };
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
}

/**
 * prepareIsolate with its context made on isolated-vm's thread, for a process whose host thread is
 * what bounds it: with other steps running on more than one CPU, that thread makes every isolate
 * they need, and the context (about a quarter of the work) then runs beside it, on another CPU.
 * Alone, the two hand-overs to that thread and back cost more than they spare.
 */
export async function prepareIsolateBeside(memoryMb: number): Promise<PreparedIsolate> {
  disposeEnded();
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb, snapshot: snapshot() });
  try {
    const context = await isolate.createContext();
    return { isolate, context, dispatch: takeDispatch(context) };
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
}

/**
 * Another context in a prepared isolate, for the strict-arguments checker: the prelude installed
 * as in every context made from the snapshot, no program ever run in it. Synchronous, on this
 * thread, as prepareIsolate: only our own snapshot is deserialized.
 */
export function checkerContext(isolate: ivm.Isolate): ivm.Reference<Dispatch> {
  return takeDispatch(isolate.createContextSync());
}

/**
 * One asynchronous call into a prepared isolate, made while it waits for its program: the `warm`
 * op, with a configuration of our own (EXERCISE's). The first asynchronous call into an isolate
 * sets up V8's state for the isolated-vm thread it lands on (0.1 to 0.3 ms here against 0.03 for
 * the next ones), and `warm` has V8 set up in the program's context what `start` first uses, so
 * that a program's `start` does not pay for it (README, "Waiting awake for a step"). Throws what
 * the call throws (the isolate disposed meanwhile), and on a reply other than `done`.
 */
export async function warmUp(prepared: PreparedIsolate): Promise<void> {
  const reply = await prepared.dispatch.apply(undefined, dispatchArguments({ op: 'warm', payload: { config: EXERCISE.config } }), {
    timeout: PREPARE_TIMEOUT_MS,
  });
  if (parseGuestReply('warm', reply).state !== 'done') throw new Error('The prelude could not warm its context');
}
