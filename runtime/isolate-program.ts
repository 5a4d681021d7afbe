import { performance } from 'node:perf_hooks';
import type ivm from 'isolated-vm';
import { assertCanMakeIsolates } from './node-flags.ts';
import {
  dispatchArguments,
  parseCheckerReply,
  parseGuestReply,
  type CheckerOp,
  type GuestOp,
  type GuestReplyTo,
  type ProgramState,
  type ReplayEntry,
  type RepliedGuestOp,
  type SandboxConfig,
} from './guest-protocol.ts';
import { limitMessage, limitNamed, type PlainLimitCode, type ProgramLimits } from './limits.ts';
import type { RunawayLimit } from './errors.ts';
import { RUNAWAY_THRESHOLDS_MS } from './runaway-thresholds.ts';
import type { ProgramEvent, ProgramFailure, ProgramStats, RecordedCall, ToolCallOutput, ToolCallRequest } from './program-events.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../schemas/json-depth.ts';
import { ReceivedDigest } from './received-digest.ts';
import { takesText, toolId, type ProgramTool } from './program-tool.ts';
import { compileToolSchema } from './schema-compiler.ts';
import { GUEST_SCHEMA_MODULES } from './tool-schemas.ts';
import { toolKeys } from './tool-keys.ts';
import { disposeSoon } from './isolate-disposal.ts';
import { confinedToOneCpu } from './one-cpu.ts';
import { checkerContext, prepareIsolate, prepareIsolateBeside, type Dispatch } from './prepared-isolate.ts';
import type { WarmIsolates } from './warm-isolates.ts';
import { assertSpinWaitMs, DEFAULT_SPIN_WAIT_MS, spinWhileStepRuns, stepsRunning, type SpinningStep } from './spin-wait.ts';

/**
 * A replay's record, and a batch's arguments sent to the checker, enter the isolate in parts of
 * at most 1/PART_MEMORY_SHARE of its memory limit as JSON (and at least
 * PART_MIN_BYTES, or one call): a part's JSON and the strings parsed from it are in the
 * heap together, with the program's own data.
 */
const PART_MEMORY_SHARE = 8;
const PART_MIN_BYTES = 1024 * 1024;

/**
 * The first items that fit in `budget` bytes as JSON (one at least): what one part handed into
 * the isolate holds. Sized as they travel: JSON escapes can make a string several times its
 * UTF-8 length.
 */
function firstPart<T>(items: Iterable<T>, budget: number): T[] {
  const part: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = JSON.stringify(item).length;
    if (part.length > 0 && bytes + size > budget) break;
    part.push(item);
    bytes += size;
  }
  return part;
}

/** The op asking where the program stands. */
const REPORT = { op: 'report', payload: null } as const satisfies GuestOp;
/**
 * Each call throws at most one rejection the program left unhandled, and the report asked again
 * finds it idle; more in a row than this means the program makes a new one each time the last is
 * read (a getter of its message or stack): it ends `program_threw`, not in an endless exchange.
 */
const UNHANDLED_REJECTIONS_IN_A_ROW = 8;

/**
 * The index of the first answer, in the order given, larger than a program may receive
 * (`maxToolOutputBytes`), or -1. What counts is what the program would read: a call's output,
 * or, for a call answered with an error, that error's message (its `e.message`).
 * A warm resume checks the batch it delivers, a replay its whole record: one check, so both end
 * a program at the same call, with the same failure.
 */
function firstOversizedAnswer(answers: readonly { readonly output: string; readonly error?: string | undefined }[], maxBytes: number): number {
  return answers.findIndex((answer) => Buffer.byteLength(answer.error ?? answer.output, 'utf8') > maxBytes);
}

export interface ProgramSpec {
  readonly code: string;
  readonly tools: readonly ProgramTool[];
  /** Seeds `Math.random`; recorded in the fingerprint so a replay draws the same numbers. */
  readonly seed: number;
  /** Epoch milliseconds `Date` is frozen at. */
  readonly clock: number;
  readonly limits: ProgramLimits;
}

/**
 * The tools as the prelude installs them: each under its own key and, when its name is not an
 * identifier, an alias (see toolKeys); a namespace's tools inside the namespace's object.
 */
function sandboxTools(tools: readonly ProgramTool[], validators: readonly ToolValidators[] | undefined): SandboxConfig['tools'] {
  const topLevel = toolKeys([...new Set(tools.map((tool) => tool.namespace ?? tool.name))]);
  const inside = new Map<string, Map<string, string[]>>();
  for (const namespace of new Set(tools.flatMap((tool) => (tool.namespace === undefined ? [] : [tool.namespace])))) {
    inside.set(namespace, toolKeys(tools.filter((tool) => tool.namespace === namespace).map((tool) => tool.name)));
  }
  return tools.map((tool, index) => ({
    id: toolId(tool),
    keys: tool.namespace === undefined ? (topLevel.get(tool.name) ?? [tool.name]) : (inside.get(tool.namespace)?.get(tool.name) ?? [tool.name]),
    ...(tool.namespace === undefined ? {} : { namespaceKeys: topLevel.get(tool.namespace) ?? [tool.namespace] }),
    text: takesText(tool),
    ...(tool.nullDefaults ? { nullDefaults: tool.nullDefaults } : {}),
    parseJson: tool.parseOutputAsJson,
    ...validators?.[index],
  }));
}

/** A tool's schemas as standalone validators (CommonJS sources), for the prelude to evaluate. */
interface ToolValidators {
  readonly checkInput?: string;
  readonly checkOutput?: string;
}

/** Each tool's validators, in order: compiled in the schema thread (cached there by content). */
function compileValidators(tools: readonly ProgramTool[]): Promise<ToolValidators[]> {
  return Promise.all(
    tools.map(async (tool) => ({
      ...(tool.parameters ? { checkInput: (await compileToolSchema(tool.parameters)).source } : {}),
      ...(tool.outputSchema ? { checkOutput: (await compileToolSchema(tool.outputSchema)).source } : {}),
    })),
  );
}

/**
 * Checks on the host what the isolate already checked: arguments are a JSON object, and not
 * absurdly deep. Strict parameters are checked again by #checkArguments, out of the program's
 * reach.
 */
function argumentsProblem(argsJson: string, tool: ProgramTool): ProgramFailure | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(argsJson);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { code: 'runtime_error', message: 'The program reported arguments that are not a JSON object' };
  }
  if (jsonDepthExceeds(parsed, MAX_JSON_DEPTH)) {
    return { code: 'arguments_too_large', message: `Arguments of tools.${toolId(tool)} nest deeper than ${MAX_JSON_DEPTH} levels` };
  }
  return undefined;
}

/** A limit the host found crossed before or between calls into the isolate. */
class LimitReached extends Error {
  constructor(readonly code: PlainLimitCode) {
    super(code);
  }
}

/** The program left a rejection unhandled at every call, more than UNHANDLED_REJECTIONS_IN_A_ROW times in a row. */
class EndlessRejections extends Error {}

/**
 * How often a step that runs long is looked at for a runaway, where a program stops its own (in
 * this process; in a worker its supervisor freezes and kills the worker instead): a step still
 * running RUNAWAY_THRESHOLDS_MS' `freeze` past its wall-clock limit, by its isolate's own running
 * time, or that long after its isolate was disposed under it at its heap limit, ends then, with
 * that limit's code, and its isolate is disposed. What runs on: code outside isolated-vm's
 * timeout (getters of a rejection the program left unhandled, which isolated-vm reads as it
 * copies the rejection out after the call: the disposal stops the first one read), and native
 * code, which ignores both. Those hold isolated-vm's thread until they return (docs/SANDBOX.md);
 * the step's caller is not kept waiting for them.
 */
const RUNAWAY_POLL_MS = 100;

/**
 * The steps of this process being watched for a runaway (each its look), looked at together every
 * RUNAWAY_POLL_MS by one timer that runs while any is watched: a timer of each step's own would
 * cost every step its making and clearing (4-5 % of a light program, measured).
 */
const watchedSteps = new Set<() => void>();
let runawayPoller: NodeJS.Timeout | undefined;

function watchStep(look: () => void): () => void {
  watchedSteps.add(look);
  runawayPoller ??= setInterval(() => {
    for (const each of watchedSteps) {
      try {
        each();
      } catch {
        // Its isolate disposed at its heap limit while it was read: looked at again next time.
      }
    }
    if (watchedSteps.size === 0) {
      clearInterval(runawayPoller);
      runawayPoller = undefined;
    }
  }, RUNAWAY_POLL_MS);
  return () => watchedSteps.delete(look);
}

/**
 * One program in one fresh isolate. `start` runs it until it settles or pauses on tool calls;
 * `resume` delivers the outputs of the pending batch and runs it again. Every step ends with
 * one `ProgramEvent`; a program that completes or fails has its isolate disposed at once.
 *
 * The host never calls into the isolate per tool call: the program queues calls inside it and
 * the host collects the whole batch with one `report` once the program is idle (isolated-vm
 * drains the microtask queue before an `apply` returns), sent with the step's own op (see
 * #callThenReport). No host function, promise or reference is ever reachable from the program.
 */
export class IsolateProgram {
  readonly #spec: ProgramSpec;
  #isolate: ivm.Isolate | undefined;
  #dispatch: ivm.Reference<Dispatch> | undefined;
  /**
   * The prelude again, in a second context of the same isolate where no program runs: it checks
   * the arguments of calls to strict tools with built-ins the program cannot reach, under the
   * program's time limits. Present when the program has strict tools.
   */
  #checker: ivm.Reference<Dispatch> | undefined;
  /** The checker's `configure`, sent at the boot; its reply is read at the first check. */
  #checkerConfigured: Promise<unknown> | undefined;
  #pending: readonly ToolCallRequest[] = [];
  /** A running digest of every output the program has received, in seq order: a warm resume checks none changed. */
  readonly #received = new ReceivedDigest();
  #calls = 0;
  #steps = 0;
  #cpuTimeMs = 0;
  /** The isolate's running time (isolated-vm `wallTime`) as last read: what a step's wall clock counts. */
  #wallTimeMs = 0;
  /** When a running step was first seen on an isolate disposed under it (performance.now()). */
  #disposedSeenAt: number | undefined;
  /** While a step runs: the isolate's running time when it (or the replayed batch it is at) began. */
  #stepStartedAt: number | undefined;
  #finished = false;
  /**
   * During a replay whose record holds an answer too large to deliver: the failure the program
   * ends with once it reaches that answer's batch, as a warm resume delivering that batch would.
   */
  #withheld: ProgramFailure | undefined;
  /** During a replay: the calls it re-makes, handed in part by part (and dropped once it ends). */
  #record: readonly RecordedCall[] = [];
  /** During a replay: the seq of the first answer over the size limit, or -1. */
  #oversized = -1;

  /** `warm`: where to take an isolate made ahead of demand, if the runtime keeps some. */
  readonly #warm: WarmIsolates | undefined;
  /** Whether a step past its wall-clock limit by RUNAWAY_THRESHOLDS_MS' `freeze` is stopped here (false in a worker: its supervisor does it). */
  readonly #stopsRunaways: boolean;
  /** How long each step keeps this thread's event loop turning while it runs alone (spinWhileStepRuns). */
  readonly #spinWaitMs: number;
  /** Whether an isolate made for a step while others run has its context made beside this thread (ProgramRuntimeOptions). */
  readonly #makesContextsBeside: boolean;
  /** The running step, as spinWhileStepRuns marks it: told of each call into the isolate. */
  #spinning: SpinningStep | undefined;
  /** The step was stopped as a runaway (RUNAWAY_THRESHOLDS_MS): its outcome, whatever the call throws after. */
  #stoppedFor: 'wall_time_exceeded' | 'memory_limit_exceeded' | undefined;

  constructor(
    spec: ProgramSpec,
    warm?: WarmIsolates,
    options: { readonly stopsRunaways?: boolean; readonly spinWaitMs?: number; readonly makesContextsBeside?: boolean } = {},
  ) {
    assertCanMakeIsolates();
    this.#spec = spec;
    this.#warm = warm;
    this.#stopsRunaways = options.stopsRunaways ?? true;
    this.#spinWaitMs = options.spinWaitMs ?? DEFAULT_SPIN_WAIT_MS;
    assertSpinWaitMs(this.#spinWaitMs);
    this.#makesContextsBeside = options.makesContextsBeside ?? true;
  }

  /** Calls the program is paused on, in creation order. Empty unless paused. */
  get pendingCalls(): readonly ToolCallRequest[] {
    return this.#pending;
  }

  get finished(): boolean {
    return this.#finished;
  }

  /**
   * Whether the running step is past one of its limits without having ended, and for how long
   * (undefined when it is not, or when no step runs): a native call its isolate cannot stop.
   * isolated-vm's `wallTime` counts a call still running, so a step its timeout cannot stop (a
   * native loop that ignores it) shows past its wall-clock limit while it runs. An isolate that
   * reaches its heap limit is disposed and the call into it ends at once, unless native code
   * holds its thread: an ICU call goes on, growing the process outside any heap, while the
   * disposed isolate's clock stands still. That step shows here from the moment it is first seen.
   */
  get runaway(): { limit: RunawayLimit; overMs: number } | undefined {
    if (this.#stepStartedAt === undefined) return undefined;
    if (this.#isolate?.isDisposed) {
      this.#disposedSeenAt ??= performance.now();
      return { limit: 'memory', overMs: performance.now() - this.#disposedSeenAt };
    }
    const overMs = this.#readWallTime() - this.#stepStartedAt - this.#spec.limits.stepWallTimeMs;
    return overMs > 0 ? { limit: 'wall_time', overMs } : undefined;
  }

  /**
   * Runs the program from the start. Given the calls an earlier run made and their outputs,
   * replays them: each recorded batch is answered inside the isolate, and the program comes
   * back paused on its first batch that was not recorded (or ended), exactly as that earlier
   * run would have gone on.
   */
  async start(recorded: readonly RecordedCall[] = []): Promise<ProgramEvent> {
    if (this.#steps > 0) throw new Error('IsolateProgram.start called twice');
    const { code, limits } = this.#spec;
    if (Buffer.byteLength(code, 'utf8') > limits.maxCodeBytes) {
      this.#steps = 1;
      return this.#fail(this.#limitFailure('code_too_large'));
    }
    this.#received.add(recorded);
    // Recorded calls are made and answered inside the isolate; new calls are numbered after them.
    this.#calls = recorded.length;
    // A live run would have ended at the first answer over the size limit, when its batch was
    // delivered. The record is cut there: from it on, calls are handed in by tool and arguments
    // only (for the replay to check that the program makes them), so the oversized text never
    // enters the isolate, and the program stops on that batch undelivered (see #step).
    const oversized = firstOversizedAnswer(recorded, limits.maxToolOutputBytes);
    if (oversized >= 0) this.#withheld = this.#toolOutputTooLarge(recorded[oversized]!.tool, recorded[oversized]!);
    this.#record = recorded;
    this.#oversized = oversized;
    const event = await this.#step(async (started) => {
      const config = await this.#boot(started);
      // The configuration, the record's first part and the code enter the isolate in one call.
      const record = recorded.length > 0 ? { record: { count: recorded.length, entries: this.#entriesFrom(0) } } : {};
      return { op: 'start', payload: { config, ...record, code } };
    });
    // The record is needed only while replaying: a program kept paused must not hold it.
    this.#record = [];
    return event;
  }

  /**
   * The recorded calls from `seq` on, with their answers (none from a withheld one on), as many
   * as fit in a share of the program's memory as JSON (one at least): a replay holds only these
   * in the isolate at a time and asks for the next ones as it reaches them, so a long history of
   * large arguments and outputs the program let go fits as it did live.
   */
  #entriesFrom(seq: number): ReplayEntry[] {
    const record = this.#record;
    const oversized = this.#oversized;
    function* entries(): Generator<ReplayEntry> {
      for (let at = seq; at < record.length; at++) {
        const { tool, argumentsJson: args, output, error } = record[at]!;
        yield oversized >= 0 && at >= oversized
          ? { seq: at, tool, args, withheld: true }
          : error === undefined
            ? { seq: at, tool, args, output }
            : { seq: at, tool, args, output, error };
      }
    }
    return firstPart(entries(), this.#partBytes());
  }

  /**
   * True when this live program is paused where a record of `calls` calls leaves it: it made as
   * many, is waiting on the last of them, and received answers of `answeredDigest` (answersDigest)
   * for the earlier ones. Otherwise a resume must replay.
   */
  isPausedWith(calls: number, answeredDigest: string): boolean {
    if (this.#finished || this.#calls !== calls || this.#pending.length === 0) return false;
    if (this.#pending[0]!.seq !== calls - this.#pending.length) return false;
    return answeredDigest === this.#received.digest();
  }

  /** Delivers one output for every pending call (matched by `seq`) and runs the program on. */
  async resume(outputs: readonly ToolCallOutput[]): Promise<ProgramEvent> {
    if (this.#finished) throw new Error('The program has finished');
    const pending = new Set(this.#pending.map((call) => call.seq));
    const answered = new Set(outputs.map((output) => output.seq));
    if (answered.size !== outputs.length || answered.size !== pending.size || [...pending].some((seq) => !answered.has(seq))) {
      throw new TypeError(`resume needs exactly one output per pending call (seq ${[...pending].join(', ')})`);
    }
    // In seq order, as a replay meets them: with two oversized answers both name the same one.
    const sorted = [...outputs].sort((left, right) => left.seq - right.seq);
    const oversized = sorted[firstOversizedAnswer(sorted, this.#spec.limits.maxToolOutputBytes)];
    if (oversized) {
      const call = this.#pending.find((pendingCall) => pendingCall.seq === oversized.seq);
      return this.#fail(this.#toolOutputTooLarge(call?.tool ?? '?', oversized));
    }
    this.#received.add(sorted);
    this.#pending = [];
    if (this.#steps > this.#spec.limits.maxResumes) return this.#fail(this.#limitFailure('resume_limit_exceeded'));
    return this.#step(async () => ({ op: 'deliver', payload: sorted }));
  }

  /** The isolate's heap in bytes (0 once disposed): what keeping it paused costs. */
  heapBytes(): number {
    const isolate = this.#isolate;
    if (!isolate || isolate.isDisposed) return 0;
    const heap = isolate.getHeapStatisticsSync();
    return heap.total_heap_size + heap.externally_allocated_size;
  }

  /** Frees the isolate at once (a step running in it stops). Safe to call at any time, more than once. */
  dispose(): void {
    const isolate = this.#release();
    if (isolate && !isolate.isDisposed) isolate.dispose();
  }

  /** Drops everything of the isolate and returns it, for the caller to dispose. */
  #release(): ivm.Isolate | undefined {
    this.#finished = true;
    this.#pending = [];
    const isolate = this.#isolate;
    this.#isolate = undefined;
    this.#dispatch = undefined;
    this.#checker = undefined;
    this.#checkerConfigured = undefined;
    return isolate;
  }

  /**
   * Takes (or makes) the program's isolate, and returns the program's configuration for its
   * `start`. Nothing enters the isolate here.
   */
  async #boot(started: number): Promise<SandboxConfig> {
    const spec = this.#spec;
    // Validators first, compiled in the schema thread (cached there by content), so that no
    // isolate waits on them; most programs' tools have no schema and nothing waits.
    const tools = sandboxTools(
      spec.tools,
      spec.tools.some((tool) => tool.parameters !== undefined || tool.outputSchema !== undefined) ? await compileValidators(spec.tools) : undefined,
    );
    // One made ahead when the runtime keeps some; else one made now, its context beside this
    // thread when other steps keep it busy (prepareIsolateBeside).
    const prepared =
      this.#warm?.take(spec.limits.memoryMb) ??
      (this.#makesContextsBeside && stepsRunning() > 1 && !confinedToOneCpu()
        ? await prepareIsolateBeside(spec.limits.memoryMb)
        : prepareIsolate(spec.limits.memoryMb));
    const { isolate, dispatch } = prepared;
    if (this.#finished) {
      // Disposed while the isolate was being made: nothing may keep it.
      isolate.dispose();
      throw new Error('The program was disposed while it started');
    }
    this.#isolate = isolate;
    this.#dispatch = dispatch;
    const config: SandboxConfig = {
      seed: spec.seed,
      clock: spec.clock,
      tools,
      ...(tools.some((tool) => tool.checkInput !== undefined || tool.checkOutput !== undefined) ? { schemaModules: GUEST_SCHEMA_MODULES } : {}),
      limits: {
        maxCalls: spec.limits.maxCalls,
        maxCallsInFlight: spec.limits.maxCallsInFlight,
        maxArgumentBytes: spec.limits.maxArgumentBytes,
        maxOutputBytes: spec.limits.maxOutputBytes,
        maxResumes: spec.limits.maxResumes,
      },
    };
    if (tools.some((tool) => tool.checkInput !== undefined)) {
      // The checker needs only the strict tools' argument validators. Its context is made now, on
      // this thread, and its `configure` is queued ahead of the program's `start`: isolated-vm
      // runs both on the isolate's thread in one go, where made at the first call to a strict
      // tool they cost two more hand-overs to that thread and back. Its reply is read at the
      // first check; a program that makes none leaves it unread.
      const strictTools = tools.filter((tool) => tool.checkInput !== undefined).map(({ checkOutput: _checkOutput, ...tool }) => tool);
      const checker = checkerContext(isolate);
      this.#checker = checker;
      this.#checkerConfigured = this.#send(checker, { op: 'configure', payload: { ...config, tools: strictTools } }, started);
      this.#checkerConfigured.catch(() => {});
    }
    return config;
  }

  /** The most JSON one part handed into the isolate may take (see PART_MEMORY_SHARE). */
  #partBytes(): number {
    return Math.max(PART_MIN_BYTES, (this.#spec.limits.memoryMb * 1024 * 1024) / PART_MEMORY_SHARE);
  }

  /** Runs one operation in the isolate within what is left of the step: running out is the step's time limit. */
  async #within<T>(started: number, operation: (timeoutMs: number) => Promise<T>): Promise<T> {
    const timeout = this.#timeout(started);
    // The isolate's running time as the operation is issued (none while its isolate is made).
    const issuedAt = this.#isolate ? this.#readWallTime() : undefined;
    try {
      return await operation(timeout.ms);
    } catch (error) {
      // isolated-vm's timeout throws "Script execution timed out.". A program can reject a promise
      // with that text too, and isolated-vm throws what the program left unhandled in place of the
      // call's reply; but the program cannot make its isolate run as long as a timeout takes
      // without spending that time. Half of it tells the two apart, whatever the machine's load.
      const ranOut = issuedAt === undefined || this.#readWallTime() - issuedAt >= timeout.ms / 2;
      if (error instanceof Error && /timed out/i.test(error.message) && ranOut) throw new LimitReached(timeout.code);
      throw error;
    }
  }

  /** #checker, once its `configure` has replied `done`. */
  async #configuredChecker(): Promise<ivm.Reference<Dispatch>> {
    const checker = this.#checker;
    const configured = this.#checkerConfigured;
    if (!checker) throw new Error('The program is not running');
    if (configured) {
      const reply = parseCheckerReply('configure', await configured);
      if (reply.state !== 'done') throw new Error("The checker's context could not be configured");
      this.#checkerConfigured = undefined;
    }
    return checker;
  }

  /**
   * The first of `calls` (in order) whose arguments break its tool's strict parameters, checked
   * by #checker in as few round trips as fit the program's memory (one, for most batches).
   */
  async #firstArgumentViolation(
    calls: readonly { readonly index: number; readonly tool: string; readonly args: string }[],
    started: number,
  ): Promise<{ index: number; failure: ProgramFailure } | undefined> {
    const strict = calls.filter((call) => this.#spec.tools.find((candidate) => toolId(candidate) === call.tool)?.parameters !== undefined);
    if (strict.length === 0) return undefined;
    const checker = await this.#configuredChecker();
    const unchecked = { code: 'runtime_error' as const, message: "The arguments of the program's calls could not be checked" };
    // In parts of at most a share of the program's memory as JSON (one call at least): the
    // arguments are parsed in the program's heap, and live they were checked one call at a time.
    for (let from = 0; from < strict.length; ) {
      const part = firstPart(
        strict.slice(from).map(({ tool, args }) => ({ tool, args })),
        this.#partBytes(),
      );
      const op: CheckerOp = { op: 'check', payload: part };
      const reply = parseCheckerReply('check', await this.#send(checker, op, started));
      if (reply.state === 'fault') return { index: strict[from]!.index, failure: unchecked };
      if (reply.state === 'violation') {
        const { index, violation } = reply;
        const call = strict[from + index];
        if (!call || index >= part.length) return { index: strict[from]!.index, failure: unchecked };
        return { index: call.index, failure: { code: 'arguments_invalid', message: `tools.${call.tool}: ${violation}` } };
      }
      from += part.length;
    }
    return undefined;
  }

  /** The time left in this step: the lower of the step's wall budget and the program's CPU budget. */
  #timeout(started: number): { ms: number; code: 'cpu_time_exceeded' | 'wall_time_exceeded' } {
    const wallLeft = this.#spec.limits.stepWallTimeMs - (this.#readWallTime() - started);
    const cpuLeft = this.#spec.limits.cpuTimeMs - this.#readCpuTime();
    const binding = cpuLeft < wallLeft ? { left: cpuLeft, code: 'cpu_time_exceeded' as const } : { left: wallLeft, code: 'wall_time_exceeded' as const };
    if (binding.left < 1) throw new LimitReached(binding.code);
    return { ms: Math.floor(binding.left), code: binding.code };
  }

  /**
   * Sends one op to `dispatch` within what is left of the step; the call is made before this
   * returns. `sync` runs it on this thread, for an op that runs none of the program's code.
   */
  #send(dispatch: ivm.Reference<Dispatch>, op: GuestOp | CheckerOp, started: number, crossing: 'async' | 'sync' = 'async'): Promise<unknown> {
    if (crossing === 'async') this.#spinning?.handOver();
    return this.#within(started, async (timeout) =>
      crossing === 'sync' ? dispatch.applySync(undefined, dispatchArguments(op), { timeout }) : dispatch.apply(undefined, dispatchArguments(op), { timeout }),
    );
  }

  /**
   * The reply to `op`, sent as `sent`, parsed and checked (parseGuestReply). A `fault` reply, or
   * one the protocol does not have, throws: the emulator failed to run the program.
   */
  async #reply<Op extends RepliedGuestOp>(op: Op, sent: Promise<unknown>, started: number): Promise<Exclude<GuestReplyTo<Op>, { state: 'fault' }>> {
    // A promise rejection the program left unhandled is thrown by isolated-vm in place of the
    // call's result, once the microtasks have run: it is ignored, as a browser ignores it, and
    // the reply `dispatch` kept is fetched instead. (`dispatch` itself never throws.)
    let attempt = sent;
    for (let rejections = 0; ; rejections++) {
      let text: unknown;
      try {
        text = await attempt;
      } catch (error) {
        if (error instanceof LimitReached || this.#isolate?.isDisposed) throw error;
        if (rejections >= UNHANDLED_REJECTIONS_IN_A_ROW) throw new EndlessRejections();
        attempt = this.#send(this.#running(), { op: 'repeat', payload: op }, started);
        continue;
      }
      const reply = parseGuestReply(op, text);
      if (reply.state === 'fault') throw new Error(`The program's context failed to carry out ${op}`);
      return reply as Exclude<GuestReplyTo<Op>, { state: 'fault' }>;
    }
  }

  /** Sends `op` to the program's context and waits for its reply (`done`): the op alone, no report behind it. */
  async #call(op: GuestOp & { readonly op: RepliedGuestOp }, started: number): Promise<void> {
    await this.#reply(op.op, this.#send(this.#running(), op, started), started);
  }

  /** The program's `dispatch`, while it runs. */
  #running(): ivm.Reference<Dispatch> {
    if (!this.#dispatch) throw new Error('The program is not running');
    return this.#dispatch;
  }

  /**
   * Sends `op`, then a `report`, and returns the report's reply once `op`'s reply is `done`.
   *
   * Outside a replay (#runStep asks a replay's reports itself), and where this thread has more
   * than one CPU, the report is queued right behind `op`. isolated-vm runs an isolate's calls in
   * the order they were made, each with its microtasks drained before the next begins, so the
   * report finds the program idle, as if it were asked once `op` had returned; but both run on
   * the isolate's thread in one go, and the host is woken once for the two. (Asked after `op` returned, synchronously, the report took
   * 56 µs a step here idle: the isolate moves to this thread and back, each move waking a CPU.)
   *
   * Confined to one CPU (a pinned worker, a process under `taskset`), the report is asked after
   * `op` has returned (#report): the isolate's thread and this one take turns on it, each call
   * queued wakes that thread and switches to it, so two cost more than one asynchronous call and
   * a synchronous report (W2 in process: 4.45 ms against 3.96).
   */
  async #callThenReport(op: GuestOp & { readonly op: RepliedGuestOp }, started: number): Promise<Exclude<GuestReplyTo<'report'>, { state: 'fault' }>> {
    if (confinedToOneCpu()) {
      await this.#call(op, started);
      return this.#report(started);
    }
    const dispatch = this.#running();
    const sent = this.#send(dispatch, op, started);
    const reported = this.#send(dispatch, REPORT, started);
    // Whether either call threw in place of its reply (a rejection the program left unhandled, or
    // the step's end); seen here without handling it, which #reply does.
    const threw = Promise.all(
      [sent, reported].map((call) =>
        call.then(
          () => false,
          () => true,
        ),
      ),
    );
    await this.#reply(op.op, sent, started);
    const first = await this.#reply('report', reported, started);
    if (!(await threw).includes(true)) return first;
    // isolated-vm copied a rejection the program left unhandled out of the isolate after that
    // call's microtasks had run, and copying it can run the program's code (a getter of it), which
    // can make calls or queue microtasks that make them: those ran after the queued report had
    // replied. Asked again now, the report names them; the batch is what both replies name, as
    // one report asked after them all would have.
    const second = await this.#report(started);
    return first.state === 'running' && second.state === 'running' ? { ...second, calls: [...first.calls, ...second.calls] } : second;
  }

  /**
   * Asks where the program stands. Outside a replay the report runs none of the program's code
   * (it settles nothing, so no microtask of the program is queued) and its reply is bounded by
   * the batch limits: it is asked synchronously, on this thread, which spares the switch to the
   * isolate's thread and back. A replay's report answers recorded calls, and the program runs on
   * as it returns: that one stays asynchronous.
   */
  #report(started: number): Promise<Exclude<GuestReplyTo<'report'>, { state: 'fault' }>> {
    return this.#reply('report', this.#send(this.#running(), REPORT, started, this.#record.length === 0 ? 'sync' : 'async'), started);
  }

  /**
   * A replay's report. One that answers the next recorded batch runs the program on as it returns,
   * as the `deliver` it stands for did live: thrown in place of its reply (a limit reached, the
   * isolate disposed), it ran a step of the program, which counts as it did live. One sent with no
   * time left is not sent, and ran nothing.
   */
  async #replayReport(started: number): Promise<Exclude<GuestReplyTo<'report'>, { state: 'fault' }>> {
    this.#timeout(started);
    try {
      return await this.#report(started);
    } catch (error) {
      this.#steps += 1;
      throw error;
    }
  }

  /**
   * During a replay, before a report that may answer the next recorded batch: the step run since
   * `started` has ended, within its own wall-clock budget or not; returns the clock of the next.
   */
  #replayStepEnded(started: number): number {
    const now = this.#readWallTime();
    if (now - started > this.#spec.limits.stepWallTimeMs) throw new LimitReached('wall_time_exceeded');
    this.#stepStartedAt = now;
    return now;
  }

  /** Runs one step: the op `begin` gives (after what it does first), then the program until it is idle. */
  async #step(begin: (started: number) => Promise<GuestOp & { readonly op: RepliedGuestOp }>): Promise<ProgramEvent> {
    this.#warm?.stepBegan();
    const spinning = spinWhileStepRuns(this.#spinWaitMs);
    this.#spinning = spinning;
    let watch: { readonly stopped: Promise<ProgramEvent>; stop(): void } | undefined;
    try {
      watch = this.#stopsRunaways ? this.#watchForRunaway() : undefined;
      // A step stopped as a runaway ends then: what still runs of it in the isolate is not waited for.
      return await (watch ? Promise.race([this.#runStep(begin), watch.stopped]) : this.#runStep(begin));
    } finally {
      watch?.stop();
      spinning.end();
      this.#spinning = undefined;
      this.#stepStartedAt = undefined;
      this.#warm?.stepEnded();
    }
  }

  /**
   * Watches the step running now for a runaway (RUNAWAY_THRESHOLDS_MS), every RUNAWAY_POLL_MS while it
   * runs: `stopped` gives its outcome if it is one, the program then ended and its isolate
   * disposed, whatever of the step still runs in it.
   */
  #watchForRunaway(): { readonly stopped: Promise<ProgramEvent>; stop(): void } {
    // No closure named by its binding here, per step: see RunningStep (spin-wait.ts).
    let settle!: (event: ProgramEvent) => void;
    const stopped = new Promise<ProgramEvent>((resolve) => {
      settle = resolve;
    });
    const unwatch = watchStep(() => this.#stopIfRunaway(settle, unwatch));
    return { stopped, stop: unwatch };
  }

  /** A look of #watchForRunaway's: a step run away past its threshold ends the program, its isolate disposed. */
  #stopIfRunaway(settle: (event: ProgramEvent) => void, unwatch: () => void): void {
    const runaway = this.runaway;
    if (!runaway || runaway.overMs < RUNAWAY_THRESHOLDS_MS[runaway.limit].freeze) return;
    unwatch();
    const code = runaway.limit === 'wall_time' ? 'wall_time_exceeded' : 'memory_limit_exceeded';
    this.#stoppedFor = code;
    const isolate = this.#isolate;
    try {
      if (isolate && !isolate.isDisposed) isolate.dispose();
    } catch {
      // Disposed meanwhile, at its heap limit, on isolated-vm's thread.
    }
    settle(this.#fail(this.#limitFailure(code)));
  }

  async #runStep(begin: (started: number) => Promise<GuestOp & { readonly op: RepliedGuestOp }>): Promise<ProgramEvent> {
    this.#steps += 1;
    // A step's clock is the isolate's own running time: waiting for the worker's loop, for the
    // schema thread or for the host between calls into the isolate does not count against it.
    let started = this.#readWallTime();
    this.#stepStartedAt = started;
    let state: ProgramState;
    try {
      // Each recorded batch answered during a replay is a step of its own, with its own wall-clock
      // budget, as it was in the recorded run; CPU time keeps adding up across all of them. The
      // report that answers a batch runs the program on as it returns (as `deliver` did live), so
      // during a replay each report starts a new step's clock, once the step before has been
      // checked against its own (#replayStepEnded).
      const replaying = this.#record.length > 0;
      // The clock of the step whose code ran last: a report that answers no batch runs none, and
      // what follows the last one (the host's checks of the calls it names) is that step's.
      let ranFrom = started;
      let reply: Exclude<GuestReplyTo<'report'>, { state: 'fault' }>;
      const op = await begin(started);
      if (replaying) {
        await this.#call(op, started);
        started = this.#replayStepEnded(started);
        reply = await this.#replayReport(started);
      } else {
        reply = await this.#callThenReport(op, started);
      }
      for (;;) {
        if (reply.state === 'needs_answers') {
          // The next part of the record, then the same batch again.
          const part = this.#entriesFrom(reply.from);
          if (part.length === 0) throw new Error(`The replay asked for recorded calls from call ${reply.from}, which the record does not have`);
          await this.#call({ op: 'answers', payload: part }, started);
          started = this.#replayStepEnded(started);
          reply = await this.#replayReport(started);
          continue;
        }
        if (reply.state === 'resume_limit') throw new LimitReached('resume_limit_exceeded');
        if (reply.state !== 'replaying') {
          state = reply;
          break;
        }
        ranFrom = started;
        // A replay passes every resume the recorded run had: the same count, the same limit.
        if (this.#steps > this.#spec.limits.maxResumes) throw new LimitReached('resume_limit_exceeded');
        this.#steps += 1;
        started = this.#replayStepEnded(started);
        reply = await this.#replayReport(started);
      }
      if (replaying) {
        started = ranFrom;
        this.#stepStartedAt = ranFrom;
      }
    } catch (error) {
      return this.#fail(this.#classify(error));
    }
    // isolated-vm's timeout bounds each call; the totals are checked here, authoritatively.
    if (this.#readCpuTime() > this.#spec.limits.cpuTimeMs) {
      return this.#fail(this.#limitFailure('cpu_time_exceeded'));
    }
    if (this.#readWallTime() - started > this.#spec.limits.stepWallTimeMs) {
      return this.#fail(this.#limitFailure('wall_time_exceeded'));
    }
    const diverged = state.state === 'settled' && state.status === 'failed' && state.code === 'replay_diverged';
    // A replay that reached the batch holding a withheld answer ends as the live run did when
    // that batch was delivered. The host decides this, not the isolate's report: whatever else a
    // replay with a withheld answer comes back with (but a divergence before it), the program
    // did not get past that answer.
    if (state.state === 'withheld' || (this.#withheld && !diverged)) {
      return this.#fail(this.#withheld ?? { code: 'runtime_error', message: 'The program reported a withheld answer the emulator did not withhold' });
    }
    if (state.state === 'settled' && state.status === 'failed') return this.#fail({ code: state.code, message: state.message });
    if (state.state === 'settled') {
      if (Buffer.byteLength(state.result, 'utf8') > this.#spec.limits.maxOutputBytes) {
        return this.#fail(this.#limitFailure('output_limit_exceeded'));
      }
      this.#finish();
      return { type: 'completed', result: state.result, stats: this.#stats() };
    }
    try {
      return await this.#paused(state.calls, state.inFlight, started);
    } catch (error) {
      return this.#fail(this.#classify(error));
    }
  }

  async #paused(calls: readonly { seq: number; tool: string; args: string }[], inFlight: number, started: number): Promise<ProgramEvent> {
    const { limits, tools } = this.#spec;
    if (calls.length === 0) {
      return this.#fail({
        code: 'program_stalled',
        message: 'The program is waiting on a promise that nothing can settle: no tool call is pending',
      });
    }
    const requests: ToolCallRequest[] = [];
    // Each call is checked in order; the first problem ends the program. The strict parameters
    // of the calls before that one are checked together, in one round trip to #checker.
    let first: { index: number; failure: ProgramFailure } | undefined;
    const objects: { index: number; tool: string; args: string }[] = [];
    for (const [index, call] of calls.entries()) {
      const tool = tools.find((candidate) => toolId(candidate) === call.tool);
      if (call.seq !== this.#calls + index || !tool) {
        first = { index, failure: { code: 'runtime_error', message: 'The program reported a call the emulator did not expect' } };
      } else if (Buffer.byteLength(call.args, 'utf8') > limits.maxArgumentBytes) {
        first = {
          index,
          failure: { code: 'arguments_too_large', message: limitMessage('arguments_too_large', { tool: call.tool, limit: limits.maxArgumentBytes }) },
        };
      } else if (!takesText(tool)) {
        const problem = argumentsProblem(call.args, tool);
        if (problem) first = { index, failure: problem };
        else objects.push({ index, tool: call.tool, args: call.args });
      }
      if (first) break;
      requests.push({ seq: call.seq, tool: call.tool, argumentsJson: call.args });
    }
    const violation = await this.#firstArgumentViolation(objects, started);
    if (violation && (!first || violation.index < first.index)) first = violation;
    if (first) return this.#fail(first.failure);
    this.#calls += calls.length;
    if (this.#calls > limits.maxCalls) return this.#fail(this.#limitFailure('call_limit_exceeded'));
    if (inFlight > limits.maxCallsInFlight) return this.#fail(this.#limitFailure('calls_in_flight_exceeded'));
    this.#pending = requests;
    return { type: 'paused', calls: requests, stats: this.#stats() };
  }

  /** The failure of an answer over `maxToolOutputBytes`, for both a warm resume and a replay. */
  #toolOutputTooLarge(tool: string, answer: { readonly error?: string | undefined }): ProgramFailure {
    const what = answer.error === undefined ? 'output' : 'error message';
    return { code: 'tool_output_too_large', message: limitMessage('tool_output_too_large', { what, tool, limit: this.#spec.limits.maxToolOutputBytes }) };
  }

  /** The failure of a limit whose message needs only its value. */
  #limitFailure(code: PlainLimitCode): ProgramFailure {
    return { code, message: limitMessage(code, { limit: this.#spec.limits[limitNamed(code)] }) };
  }

  #classify(error: unknown): ProgramFailure {
    if (error instanceof LimitReached) return this.#limitFailure(error.code);
    if (this.#stoppedFor) return this.#limitFailure(this.#stoppedFor);
    // Only the isolate itself tells: its memory limit disposes it. An error's text does not, as a
    // program's rejection may say anything.
    if (this.#isolate?.isDisposed) return this.#limitFailure('memory_limit_exceeded');
    if (error instanceof EndlessRejections) {
      return {
        code: 'program_threw',
        message: `The program left a promise rejection unhandled at each of ${UNHANDLED_REJECTIONS_IN_A_ROW + 1} calls in a row, each made as the one before was read`,
      };
    }
    return { code: 'runtime_error', message: 'The emulator failed to run the program', cause: error };
  }

  #readWallTime(): number {
    const isolate = this.#isolate;
    if (isolate && !isolate.isDisposed) this.#wallTimeMs = Number(isolate.wallTime) / 1e6;
    return this.#wallTimeMs;
  }

  #readCpuTime(): number {
    const isolate = this.#isolate;
    if (isolate && !isolate.isDisposed) this.#cpuTimeMs = Number(isolate.cpuTime) / 1e6;
    return this.#cpuTimeMs;
  }

  #stats(): ProgramStats {
    return { cpuTimeMs: Math.round(this.#cpuTimeMs * 1000) / 1000, steps: this.#steps, calls: this.#calls };
  }

  /** The program has ended and no call runs in its isolate: it is disposed just after its outcome is handed back. */
  #finish(): void {
    this.#readCpuTime();
    const isolate = this.#release();
    if (isolate && !isolate.isDisposed) disposeSoon(isolate);
  }

  #fail(error: ProgramFailure): ProgramEvent {
    this.#finish();
    return { type: 'incomplete', error, stats: this.#stats() };
  }
}
