import type { ProgramErrorCode } from '../schemas/error-codes.ts';

/**
 * Every per-program limit, declared once: its default, the environment variable that sets it
 * on the server, the program error code it ends a program with, the message that failure
 * carries, and what it bounds. The README's configuration table and docs/ERRORS.md are checked
 * against this table.
 *
 * A message is a template: `{limit}` is the limit's value, `{tool}` the tool a call named (as
 * `tools.` names it), `{what}` what of an answer was too large (`output` or `error message`).
 * The host formats them with limitMessage; the prelude, for the limits it enforces inside the
 * isolate, formats the same templates, handed to it when its isolate is made (SandboxSetup).
 */
export const LIMIT_DEFINITIONS = {
  cpuTimeMs: {
    env: 'PTC_CPU_TIME_MS',
    default: 5_000,
    code: 'cpu_time_exceeded',
    message: 'The program used more than {limit} ms of CPU',
    description: "CPU time a program's code may use across all its steps (isolated-vm `cpuTime`; time waiting on the client not counted).",
  },
  stepWallTimeMs: {
    env: 'PTC_STEP_WALL_TIME_MS',
    default: 2_000,
    code: 'wall_time_exceeded',
    message: 'One execution step ran longer than {limit} ms',
    description:
      'Wall-clock ceiling of one execution step, from start or resume until the program settles or pauses, counting the time its code runs (isolated-vm `wallTime`), not time waiting for a worker.',
  },
  memoryMb: {
    env: 'PTC_MEMORY_MB',
    default: 64,
    code: 'memory_limit_exceeded',
    message: "The program's heap exceeded {limit} MiB",
    description: "Heap of one program's isolate, in MiB (isolated-vm `memoryLimit`, at least 8).",
  },
  maxCodeBytes: {
    env: 'PTC_MAX_CODE_BYTES',
    default: 256 * 1024,
    code: 'code_too_large',
    message: "The program's code exceeds {limit} bytes",
    description: "Size of a program's source, UTF-8 bytes.",
  },
  maxCalls: {
    env: 'PTC_MAX_CALLS',
    default: 1_000,
    code: 'call_limit_exceeded',
    message: 'The program made more than {limit} tool calls',
    description: 'Tool calls one program may make in all.',
  },
  maxCallsInFlight: {
    env: 'PTC_MAX_CALLS_IN_FLIGHT',
    default: 128,
    code: 'calls_in_flight_exceeded',
    message: 'More than {limit} tool calls pending at once',
    description: 'Tool calls pending at once (one batch).',
  },
  maxResumes: {
    env: 'PTC_MAX_RESUMES',
    default: 1_000,
    code: 'resume_limit_exceeded',
    message: 'The program was resumed more than {limit} times',
    description: 'Times one program may pause and be resumed.',
  },
  maxArgumentBytes: {
    env: 'PTC_MAX_ARGUMENT_BYTES',
    default: 1024 * 1024,
    code: 'arguments_too_large',
    message: 'Arguments of tools.{tool} exceed {limit} bytes',
    description: 'Serialised arguments of one call, UTF-8 bytes.',
  },
  maxToolOutputBytes: {
    env: 'PTC_MAX_TOOL_OUTPUT_BYTES',
    default: 4 * 1024 * 1024,
    code: 'tool_output_too_large',
    message: 'The {what} of tools.{tool} exceeds {limit} bytes',
    description: 'One tool output delivered into the program, or the error message of a call answered with an error, UTF-8 bytes.',
  },
  maxOutputBytes: {
    env: 'PTC_MAX_OUTPUT_BYTES',
    default: 1024 * 1024,
    code: 'output_limit_exceeded',
    message: 'Program output exceeds {limit} bytes',
    description: 'Everything `text()` and `image()` emit, UTF-8 bytes.',
  },
} as const satisfies Record<string, { env: string; default: number; code: ProgramErrorCode; message: string; description: string }>;

export type LimitName = keyof typeof LIMIT_DEFINITIONS;
type LimitDefinition = (typeof LIMIT_DEFINITIONS)[LimitName];
/** The program error codes limits end programs with: one per limit. */
export type LimitCode = LimitDefinition['code'];

/** The names of the placeholders in a message template. */
type Placeholders<Template extends string> = Template extends `${string}{${infer Name}}${infer Rest}` ? Name | Placeholders<Rest> : never;
/** What a limit's message needs filled in. */
export type LimitMessageValues<Code extends LimitCode> = {
  readonly [Name in Placeholders<Extract<LimitDefinition, { code: Code }>['message']>]: string | number;
};
/** The codes of the limits whose message needs only the limit's value. */
export type PlainLimitCode = {
  [Code in LimitCode]: Placeholders<Extract<LimitDefinition, { code: Code }>['message']> extends 'limit' ? Code : never;
}[LimitCode];

const LIMIT_NAMES_BY_CODE: ReadonlyMap<string, LimitName> = new Map(
  (Object.entries(LIMIT_DEFINITIONS) as [LimitName, LimitDefinition][]).map(([name, definition]) => [definition.code, name]),
);

/** The limit a code ends programs for. */
export function limitNamed(code: LimitCode): LimitName {
  const name = LIMIT_NAMES_BY_CODE.get(code);
  if (name === undefined) throw new TypeError(`No limit ends programs with ${code}`);
  return name;
}

/** A limit's message template, unformatted (as the prelude receives it). */
export function limitTemplate(code: LimitCode): string {
  return LIMIT_DEFINITIONS[limitNamed(code)].message;
}

const PLACEHOLDER = /\{(\w+)\}/g;

/**
 * The message of a program ended by a limit: its template with each placeholder replaced, in
 * one pass (a value that holds `{limit}` stays as it is). The prelude's own formatter
 * (guest-prelude.js limitMessage) does the same.
 */
export function limitMessage<Code extends LimitCode>(code: Code, values: LimitMessageValues<Code>): string {
  const filled: Readonly<Record<string, string | number>> = values;
  return limitTemplate(code).replace(PLACEHOLDER, (placeholder, name: string) => (Object.hasOwn(filled, name) ? String(filled[name]) : placeholder));
}
export type ProgramLimits = { readonly [K in LimitName]: number };

export const DEFAULT_LIMITS: ProgramLimits = Object.freeze(
  Object.fromEntries(Object.entries(LIMIT_DEFINITIONS).map(([name, def]) => [name, def.default])) as ProgramLimits,
);

/** Limits with overrides applied; rejects values that are not positive integers. */
export function resolveLimits(overrides: Partial<ProgramLimits> = {}): ProgramLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const [name, value] of Object.entries(overrides) as [LimitName, number | undefined][]) {
    if (value === undefined) continue;
    if (!(name in LIMIT_DEFINITIONS)) throw new TypeError(`Unknown limit "${name}"`);
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new RangeError(`Limit ${name} must be a positive integer, got ${String(value)}`);
    }
    limits[name] = value;
  }
  if (limits.memoryMb < 8) throw new RangeError('Limit memoryMb must be at least 8 (isolated-vm minimum)');
  return Object.freeze(limits);
}
