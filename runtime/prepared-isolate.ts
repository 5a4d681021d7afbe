import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';
import { dispatchArguments, guestLimitMessages, type SandboxConfig, type SandboxSetup } from './guest-protocol.ts';

const PRELUDE_SOURCE = readFileSync(new URL('./guest-prelude.js', import.meta.url), 'utf8');
const PRELUDE_FILENAME = 'ptc:prelude';

/** What `dispatch` is, seen from the host: an op's name and its payload as JSON in, a reply as JSON out. */
export type Dispatch = (op: string, payloadJson: string) => string;
/** The prelude's completion value: takes a SandboxSetup (JSON) and returns `dispatch`. */
type InstallSandbox = (setupJson: string) => unknown;

/**
 * An isolate with its context, the prelude run and installed: ready for one program's `start`
 * (its configuration and code). Nothing of any request is in it.
 */
export interface PreparedIsolate {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  /** The prelude, compiled in this isolate (a strict-parameters checker runs it once more). */
  readonly script: ivm.Script;
  /** The prelude's `dispatch` in the program's context. */
  readonly dispatch: ivm.Reference<Dispatch>;
}

/**
 * Bounds the prelude's own run when an isolate is made ahead of a program (no step's clock is
 * running then). The prelude is ours and defines functions only: it takes a millisecond or so.
 */
const PRELUDE_TIMEOUT_MS = 5_000;

/** installSandbox's argument: the limits' message templates and, for a checker, its configuration. */
export function sandboxSetupJson(config?: SandboxConfig): string {
  const setup: SandboxSetup = config === undefined ? { limitMessages: guestLimitMessages() } : { limitMessages: guestLimitMessages(), config };
  return JSON.stringify(setup);
}

/** The same for every program context: made once. */
const PROGRAM_SETUP_JSON = sandboxSetupJson();

/**
 * What the prelude is run through once, in a scratch isolate, before its code cache is made:
 * a program of ours (never a request's) that starts, pauses on two calls, takes their answers
 * and ends, so that the functions a program's steps call are compiled and in the cache.
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
 * A new context in `isolate` with the prelude compiled (from `cachedData` when given), run and
 * installed in it for a program; `timeoutMs` bounds each of the two runs.
 */
function installPrelude(isolate: ivm.Isolate, cachedData: ivm.ExternalCopy<ArrayBuffer> | undefined, timeoutMs: number): Omit<PreparedIsolate, 'isolate'> {
  const context = isolate.createContextSync();
  const script = isolate.compileScriptSync(PRELUDE_SOURCE, { filename: PRELUDE_FILENAME, ...(cachedData ? { cachedData } : {}) });
  const install = script.runSync(context, { reference: true, timeout: timeoutMs }) as ivm.Reference<InstallSandbox>;
  const dispatch = install.applySync(undefined, [PROGRAM_SETUP_JSON], { result: { reference: true }, timeout: timeoutMs }) as ivm.Reference<Dispatch>;
  install.release();
  return { context, script, dispatch };
}

let preludeCache: ivm.ExternalCopy<ArrayBuffer> | undefined;

/**
 * V8's code cache for the prelude, made once per process. V8 compiles a function when it is
 * first called, and a cache made right after compiling holds only the top level: each isolate
 * then compiled `report`, `deliver` and the rest again on a program's first steps (about
 * 0.25 ms). So the prelude is first run in a scratch isolate through EXERCISE, and the cache is
 * made from that isolate's compiled script (compiling the same source again there returns it
 * from V8's compilation cache). Only ever made from our own source and our own program; a
 * cache V8 rejects costs a normal compile.
 */
function preludeCachedData(): ivm.ExternalCopy<ArrayBuffer> | undefined {
  if (preludeCache) return preludeCache;
  const scratch = new ivm.Isolate({ memoryLimit: 16 });
  try {
    const { dispatch } = installPrelude(scratch, undefined, PRELUDE_TIMEOUT_MS);
    const send = (op: string, payload: unknown): unknown => dispatch.applySync(undefined, [op, JSON.stringify(payload)], { timeout: PRELUDE_TIMEOUT_MS });
    send('start', { config: EXERCISE.config, code: EXERCISE.code });
    send('report', null);
    send('deliver', EXERCISE.answers);
    send('report', null);
    // isolated-vm's types leave out what compileScriptSync returns with produceCachedData.
    const compiled = scratch.compileScriptSync(PRELUDE_SOURCE, { filename: PRELUDE_FILENAME, produceCachedData: true }) as ivm.Script & ivm.CachedDataResult;
    preludeCache = compiled.cachedData;
  } catch {
    // Without a cache each isolate compiles the prelude itself: slower, no different.
    preludeCache = undefined;
  } finally {
    scratch.dispose();
  }
  return preludeCache;
}

/**
 * A new isolate of `memoryMb` with the prelude run and installed in it; `timeoutMs` bounds each
 * of the two runs. Synchronous, on this thread: none of it is a request's code, it takes about as
 * long as the `new Isolate` that must be synchronous anyway, and each asynchronous step would
 * add two thread hand-overs (to the isolate's thread and back), which cost more than the step.
 */
export function prepareIsolate(memoryMb: number, timeoutMs: number = PRELUDE_TIMEOUT_MS): PreparedIsolate {
  const cachedData = preludeCachedData();
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb });
  try {
    return { isolate, ...installPrelude(isolate, cachedData, timeoutMs) };
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
}

/**
 * One asynchronous call into a prepared isolate that changes nothing in it (`repeat` of a
 * `report`, before any was made). The first asynchronous call into an isolate sets up V8's
 * state for the isolated-vm thread it lands on, 0.1 to 0.3 ms here against 0.03 for the next
 * ones: made while the isolate is made ahead, that cost is off the program's first step.
 */
export async function bindToThread(prepared: PreparedIsolate): Promise<void> {
  await prepared.dispatch.apply(undefined, dispatchArguments({ op: 'repeat', payload: 'report' }), { timeout: PRELUDE_TIMEOUT_MS });
}
