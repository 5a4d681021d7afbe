/**
 * Every error class the runtime throws, in one module (exported from index.ts): what a caller
 * of the runtime can catch and tell apart.
 */
import type { WorkerDeath } from './worker/worker-process.ts';

/** A process without the Node flag isolated-vm needs (node-flags.ts) was about to make an isolate. */
export class MissingNodeFlagError extends Error {
  override readonly name = 'MissingNodeFlagError';
  constructor(flag: string) {
    super(
      `ptc-emulator runs programs with isolated-vm, which needs Node started with ${flag} ` +
        `in the process that makes isolates. Start Node with it (node ${flag} …, or NODE_OPTIONS=${flag}), ` +
        'or run isolates in worker processes (the server\'s default; the workers get the flag by themselves).',
    );
  }
}

/** A step was asked of a program while another caller runs one. */
export class ProgramBusyError extends Error {
  constructor(readonly programId: string) {
    super(`Program ${programId} is already running a step`);
  }
}

/** A fingerprint or sealed id that does not verify, or that this version cannot read. */
export class FingerprintError extends Error {}

/** A schema ajv could not compile: the message says why. */
export class ToolSchemaError extends Error {}

/** A schema ajv compiles, but at a cost past what the emulator takes on for one request. */
export class SchemaTooComplexError extends ToolSchemaError {}

/** ajv took longer than the job's deadline over a schema. */
export class SchemaDeadlineError extends SchemaTooComplexError {
  constructor(readonly deadlineMs: number) {
    super(`ajv did not compile it within ${deadlineMs} ms of CPU time`);
  }
}

/** The worker process running a step died, and why. */
export class WorkerDeathError extends Error {
  /**
   * @param runaways the programs whose steps the worker last reported running past their
   * wall-clock limit: what killed it, when anything did (see RUNAWAY_GRACE_MS).
   */
  constructor(
    readonly reason: WorkerDeath,
    detail: string,
    readonly runaways: ReadonlySet<string> = new Set(),
  ) {
    super(detail);
  }
}
