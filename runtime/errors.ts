/**
 * Every error class the runtime throws, in one module (exported from index.ts): what a caller
 * of the runtime can catch and tell apart.
 */

/**
 * What every error class of the emulator is: a fixed `name` (the class's) and a fixed `code`
 * (`PTC_ERR_…`, one per class), so that a caller tells them apart without parsing a message
 * (undici's errors are the model). test/error-classes.test.ts checks every class as a table.
 */
export abstract class EmulatorError extends Error {
  abstract override readonly name: string;
  abstract readonly code: string;
}

/**
 * The Node flag isolated-vm needs in every process that makes isolates (see node-flags.ts),
 * declared beside the error that names it.
 */
export const REQUIRED_NODE_FLAG = '--no-node-snapshot';

/** A process without REQUIRED_NODE_FLAG was about to make an isolate. */
export class MissingNodeFlagError extends EmulatorError {
  override readonly name = 'MissingNodeFlagError';
  readonly code = 'PTC_ERR_MISSING_NODE_FLAG';
  constructor() {
    super(
      `ptc-emulator runs programs with isolated-vm, which needs Node started with ${REQUIRED_NODE_FLAG} ` +
        `in the process that makes isolates. Start Node with it (node ${REQUIRED_NODE_FLAG} …, or NODE_OPTIONS=${REQUIRED_NODE_FLAG}), ` +
        "or run isolates in worker processes (the server's default; the workers get the flag by themselves).",
    );
  }
}

/** A step was asked of a program while another caller runs one. */
export class ProgramBusyError extends EmulatorError {
  override readonly name = 'ProgramBusyError';
  readonly code = 'PTC_ERR_PROGRAM_BUSY';
  constructor(readonly programId: string) {
    super(`Program ${programId} is already running a step`);
  }
}

/** A fingerprint or sealed id that does not verify, or that this version cannot read. */
export class FingerprintError extends EmulatorError {
  override readonly name = 'FingerprintError';
  readonly code = 'PTC_ERR_FINGERPRINT';
}

/** A program's claims (its tools, mostly) too large to seal: it could never be resumed. */
export class FingerprintTooLargeError extends EmulatorError {
  override readonly name = 'FingerprintTooLargeError';
  readonly code = 'PTC_ERR_FINGERPRINT_TOO_LARGE';
}

/** A schema ajv could not compile: the message says why. */
export class ToolSchemaError extends EmulatorError {
  override readonly name: string = 'ToolSchemaError';
  readonly code: string = 'PTC_ERR_TOOL_SCHEMA';
}

/** A schema ajv compiles, but at a cost past what the emulator takes on for one request. */
export class SchemaTooComplexError extends ToolSchemaError {
  override readonly name: string = 'SchemaTooComplexError';
  override readonly code: string = 'PTC_ERR_SCHEMA_TOO_COMPLEX';
}

/** ajv took longer than the job's deadline over a schema; `measure` says how long, by which clock. */
/** The schema thread has FIXED_LIMITS.schemaJobQueue jobs waiting already: the caller retries later. */
export class SchemaThreadBusyError extends EmulatorError {
  override readonly name = 'SchemaThreadBusyError';
  readonly code = 'PTC_ERR_SCHEMA_THREAD_BUSY';
}

export class SchemaDeadlineError extends SchemaTooComplexError {
  override readonly name = 'SchemaDeadlineError';
  override readonly code = 'PTC_ERR_SCHEMA_DEADLINE';
  constructor(
    readonly deadlineMs: number,
    readonly measure: string = `${deadlineMs} ms`,
  ) {
    super(`ajv did not compile it within ${measure}`);
  }
}

/**
 * Which limit a step ran past without ending (see IsolateProgram.runaway): its wall-clock limit,
 * or its heap limit, its isolate disposed under a native call that went on.
 */
export const RUNAWAY_LIMITS = ['wall_time', 'memory'] as const;
export type RunawayLimit = (typeof RUNAWAY_LIMITS)[number];

/** Why a worker process died: it exited, missed heartbeats, or was killed for its memory, its CPU or a step's deadline. */
export type WorkerDeath = 'exit' | 'heartbeat' | 'rss' | 'cpu' | 'deadline';

/** The worker process running a step died, and why. */
export class WorkerDeathError extends EmulatorError {
  override readonly name = 'WorkerDeathError';
  readonly code = 'PTC_ERR_WORKER_DEATH';
  /**
   * @param runaways the programs whose steps the worker last reported past a limit without
   * ending, and which limit (see RUNAWAY_THRESHOLDS_MS).
   * @param forRunaway true when the supervisor killed the worker for one of them (or for the
   * memory a step still running on a disposed isolate grew): the cause is known, and the other
   * steps it was running are innocent.
   */
  constructor(
    readonly reason: WorkerDeath,
    detail: string,
    readonly runaways: ReadonlyMap<string, RunawayLimit> = new Map(),
    readonly forRunaway = false,
  ) {
    super(detail);
  }
}
