import { z } from 'zod';
import { checkGuestReply, type GuestReply } from './guest-reply.ts';
import { limitTemplate, type LimitCode } from './limits.ts';

/**
 * The protocol between the host (runtime/isolate-program.ts) and the prelude
 * (runtime/guest-prelude.js) inside a program's isolate, declared once.
 *
 * The host calls the prelude's `dispatch(op, payload)` with an op's name and its payload as
 * JSON, and `dispatch` answers every op with a JSON object: one of the replies declared here or,
 * for the program's context, in runtime/guest-reply.ts. The host parses and checks every reply
 * (parseGuestReply, parseCheckerReply), like any untrusted input: the isolate runs code written
 * by a model.
 *
 * The prelude runs in two contexts of one isolate: the program's, which the GuestOps drive, and
 * the checker's, where no program ever runs, which checks arguments (the CheckerOps).
 */

/** A recorded call as a replay hands it in: with its answer, or, from a withheld answer on, without. */
export type ReplayEntry = { readonly seq: number; readonly tool: string; readonly args: string } & (
  | { readonly output: string; readonly error?: string }
  | { readonly withheld: true }
);

/** An answer to one call of the batch the program is paused on. */
export interface DeliveredAnswer {
  readonly seq: number;
  readonly output: string;
  readonly error?: string | undefined;
}

/** What each op the program's context takes carries, sent as JSON. */
export interface GuestPayloads {
  /**
   * The program starts: its configuration, and for a replay how many calls the recorded run made
   * with the first part of them, then its code. One call into the isolate for all of it.
   */
  readonly start: {
    readonly config: SandboxConfig;
    readonly record?: { readonly count: number; readonly entries: readonly ReplayEntry[] };
    readonly code: string;
  };
  /** The next part of the record, after a `needs_answers` reply. */
  readonly answers: readonly ReplayEntry[];
  /** The answers to the batch the program is paused on, in seq order. */
  readonly deliver: readonly DeliveredAnswer[];
  /**
   * Nothing: the program is idle (isolated-vm ran its microtasks). The prelude reports where it
   * stands; during a replay, a batch of recorded calls is first answered from the record.
   */
  readonly report: null;
  /**
   * The name of an op: the last reply to it, again. isolated-vm throws a promise rejection the
   * program left unhandled out of whichever call was running, in place of that call's reply;
   * the prelude keeps its last reply to each op for the host to fetch, the host having queued
   * the next op meanwhile (a `report` right behind each step's op).
   */
  readonly repeat: RepliedGuestOp;
  /**
   * A configuration of the host's own making (never a request's), in a context made ahead of its
   * program: the context removes the globals no program has and does once, on things of its own,
   * what a start does (no code is sent: it compiles and runs an empty function), so that V8's
   * first-use work in the isolate is off the program's first step. Nothing of the program's
   * state changes.
   */
  readonly warm: { readonly config: SandboxConfig };
}
export type GuestOp = { readonly [Op in keyof GuestPayloads]: { readonly op: Op; readonly payload: GuestPayloads[Op] } }[keyof GuestPayloads];
export type GuestOpName = GuestOp['op'];

/** What each op the checker's context takes carries, sent as JSON. */
export interface CheckerPayloads {
  /** The checker's configuration (the program's, with its strict tools only), once, before any `check`. */
  readonly configure: SandboxConfig;
  /** Calls to strict tools, in order: the first whose arguments break its tool's parameters is named. */
  readonly check: readonly { readonly tool: string; readonly args: string }[];
}
export type CheckerOp = { readonly [Op in keyof CheckerPayloads]: { readonly op: Op; readonly payload: CheckerPayloads[Op] } }[keyof CheckerPayloads];

/** `dispatch`'s arguments for an op: its name, and its payload as JSON. */
export function dispatchArguments(op: GuestOp | CheckerOp): [string, string] {
  return [op.op, JSON.stringify(op.payload)];
}

/** Any op of the checker's context: it threw inside the prelude (or named no op the prelude knows). */
const Fault = z.strictObject({ state: z.literal('fault') });

/** The `done` reply exactly as the prelude writes it (guest-prelude.js DONE). */
const DONE_TEXT = '{"state":"done"}';

/** The states each op replies with; every op may also reply `fault`. `repeat` replies as the op it repeats. */
const GUEST_REPLY_STATES = {
  answers: ['done'],
  start: ['done'],
  deliver: ['done'],
  warm: ['done'],
  report: ['running', 'settled', 'withheld', 'replaying', 'needs_answers', 'resume_limit'],
} as const satisfies { readonly [Op in Exclude<GuestOpName, 'repeat'>]: readonly GuestReply['state'][] };
/** An op whose reply the host reads: every op but `repeat`, which stands in for one of them. */
export type RepliedGuestOp = keyof typeof GUEST_REPLY_STATES;
/** The replies an op may give. */
export type GuestReplyTo<Op extends RepliedGuestOp> = Extract<GuestReply, { state: (typeof GUEST_REPLY_STATES)[Op][number] | 'fault' }>;
/** Where the program stands, as a `report` tells once no replay is answering batches. */
export type ProgramState = Extract<GuestReply, { state: 'running' | 'settled' | 'withheld' }>;

/** The reply of a CheckerOp, told apart by `state`. */
export const CheckerReply = z.discriminatedUnion('state', [
  // configure: done.
  z.strictObject({ state: z.literal('done') }),
  // Every call's arguments conform.
  z.strictObject({ state: z.literal('conforms') }),
  // The call at `index` of the part checked breaks its tool's strict parameters: `violation` says how.
  z.strictObject({ state: z.literal('violation'), index: z.number().int().nonnegative(), violation: z.string() }),
  Fault,
]);
export type CheckerReply = z.infer<typeof CheckerReply>;

function parseReply<T>(check: (value: unknown) => T, text: unknown, what: string): T {
  let reply: T;
  try {
    if (typeof text !== 'string') throw new TypeError(`a reply of type ${typeof text}`);
    reply = check(JSON.parse(text));
  } catch (error) {
    // The reply stays out of the message: it can hold the program's text.
    throw new Error(`The ${what} gave a reply the guest protocol does not have`, { cause: error });
  }
  return reply;
}

/**
 * The reply of the program's context to `op`, parsed and checked: a JSON object of a shape
 * GuestReply has, and one `op` may give. Anything else throws (a fault of the emulator's, not
 * the program's); a `fault` reply is returned, for the host to handle.
 */
export function parseGuestReply<Op extends RepliedGuestOp>(op: Op, text: unknown): GuestReplyTo<Op> {
  const states: readonly string[] = GUEST_REPLY_STATES[op];
  // Every step's first reply, written by the prelude as a constant: what parsing it would give.
  if (text === DONE_TEXT && states.includes('done')) return { state: 'done' } as GuestReplyTo<Op>;
  const reply = parseReply(checkGuestReply, text, "program's context");
  if (reply.state !== 'fault' && !states.includes(reply.state)) {
    throw new Error(`The program's context replied ${reply.state} to ${op}`);
  }
  return reply as GuestReplyTo<Op>;
}

/** The states each CheckerOp replies with; every op may also reply `fault`. */
const CHECKER_REPLY_STATES = {
  configure: ['done'],
  check: ['conforms', 'violation'],
} as const satisfies { readonly [Op in CheckerOp['op']]: readonly CheckerReply['state'][] };
export type CheckerReplyTo<Op extends CheckerOp['op']> = Extract<CheckerReply, { state: (typeof CHECKER_REPLY_STATES)[Op][number] | 'fault' }>;

/** The reply of the checker's context to `op`, parsed and checked; anything but a reply `op` may give throws. */
export function parseCheckerReply<Op extends CheckerOp['op']>(op: Op, text: unknown): CheckerReplyTo<Op> {
  const states: readonly string[] = CHECKER_REPLY_STATES[op];
  const reply = parseReply((value) => CheckerReply.parse(value), text, "checker's context");
  if (reply.state !== 'fault' && !states.includes(reply.state)) throw new Error(`The checker's context replied ${reply.state} to ${op}`);
  return reply as CheckerReplyTo<Op>;
}

/** The limits whose breach the prelude reports itself, with the message it formats from their template. */
export const GUEST_LIMIT_CODES = [
  'call_limit_exceeded',
  'calls_in_flight_exceeded',
  'arguments_too_large',
  'output_limit_exceeded',
] as const satisfies readonly LimitCode[];
export type GuestLimitCode = (typeof GUEST_LIMIT_CODES)[number];

/** The message templates (runtime/limits.ts) the prelude formats, by code. */
export function guestLimitMessages(): SandboxSetup['limitMessages'] {
  return Object.fromEntries(GUEST_LIMIT_CODES.map((code) => [code, limitTemplate(code)])) as SandboxSetup['limitMessages'];
}

/**
 * What `installSandbox` receives as the prelude's snapshot is made, ahead of any program: our
 * own constants only.
 */
export interface SandboxSetup {
  /** The templates of the messages the prelude ends a program with for a limit (GUEST_LIMIT_CODES). */
  readonly limitMessages: { readonly [Code in GuestLimitCode]: string };
}

/** A program's configuration, which the prelude takes with the program's code (the `start` op). */
export interface SandboxConfig {
  readonly seed: number;
  readonly clock: number;
  readonly tools: readonly {
    /** How calls name it: `name`, or `namespace.name`. */
    readonly id: string;
    /** The keys it is reachable by: on `tools`, or on its namespace's object. */
    readonly keys: readonly string[];
    /** For a namespace's tool: the keys of the namespace on `tools`. */
    readonly namespaceKeys?: readonly string[];
    /** True for a custom tool: the call takes one string, sent as it is. */
    readonly text: boolean;
    readonly parseJson: boolean;
    /** Arguments set to `null` when absent, so the call sends every field its item carries. */
    readonly nullDefaults?: readonly string[];
    /** Strict parameters: a standalone ajv validator (CommonJS module source) run on the arguments before the call leaves. */
    readonly checkInput?: string;
    /** output_schema: a standalone ajv validator run on the parsed output before the program receives it. */
    readonly checkOutput?: string;
  }[];
  /** The modules validators may `require`, by name, as CommonJS sources (see runtime/tool-schemas.ts). */
  readonly schemaModules?: Readonly<Record<string, string>>;
  readonly limits: {
    readonly maxCalls: number;
    readonly maxCallsInFlight: number;
    readonly maxArgumentBytes: number;
    readonly maxOutputBytes: number;
    readonly maxResumes: number;
  };
}
