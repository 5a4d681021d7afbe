import type { ProgramErrorCode } from '../schemas/error-codes.ts';

/**
 * Every per-program limit, declared once: its default, the environment variable that sets it
 * on the server, the program error code it ends a program with, and what it bounds.
 * The README's configuration table and docs/ERRORS.md are checked against this table.
 */
export const LIMIT_DEFINITIONS = {
  cpuTimeMs: {
    env: 'PTC_CPU_TIME_MS',
    default: 5_000,
    code: 'cpu_time_exceeded',
    description: 'CPU time a program\'s code may use across all its steps (isolated-vm `cpuTime`; time waiting on the client not counted).',
  },
  stepWallTimeMs: {
    env: 'PTC_STEP_WALL_TIME_MS',
    default: 2_000,
    code: 'wall_time_exceeded',
    description:
      'Wall-clock ceiling of one execution step, from start or resume until the program settles or pauses, counting the time its code runs (isolated-vm `wallTime`), not time waiting for a worker.',
  },
  memoryMb: {
    env: 'PTC_MEMORY_MB',
    default: 64,
    code: 'memory_limit_exceeded',
    description: 'Heap of one program\'s isolate, in MiB (isolated-vm `memoryLimit`, at least 8).',
  },
  maxCodeBytes: {
    env: 'PTC_MAX_CODE_BYTES',
    default: 256 * 1024,
    code: 'code_too_large',
    description: 'Size of a program\'s source, UTF-8 bytes.',
  },
  maxCalls: {
    env: 'PTC_MAX_CALLS',
    default: 1_000,
    code: 'call_limit_exceeded',
    description: 'Tool calls one program may make in all.',
  },
  maxCallsInFlight: {
    env: 'PTC_MAX_CALLS_IN_FLIGHT',
    default: 128,
    code: 'calls_in_flight_exceeded',
    description: 'Tool calls pending at once (one batch).',
  },
  maxResumes: {
    env: 'PTC_MAX_RESUMES',
    default: 1_000,
    code: 'resume_limit_exceeded',
    description: 'Times one program may pause and be resumed.',
  },
  maxArgumentBytes: {
    env: 'PTC_MAX_ARGUMENT_BYTES',
    default: 1024 * 1024,
    code: 'arguments_too_large',
    description: 'Serialised arguments of one call, UTF-8 bytes.',
  },
  maxToolOutputBytes: {
    env: 'PTC_MAX_TOOL_OUTPUT_BYTES',
    default: 4 * 1024 * 1024,
    code: 'tool_output_too_large',
    description: 'One tool output delivered into the program, or the error message of a call answered with an error, UTF-8 bytes.',
  },
  maxOutputBytes: {
    env: 'PTC_MAX_OUTPUT_BYTES',
    default: 1024 * 1024,
    code: 'output_limit_exceeded',
    description: 'Everything `text()` and `image()` emit, UTF-8 bytes.',
  },
} as const satisfies Record<string, { env: string; default: number; code: ProgramErrorCode; description: string }>;

export type LimitName = keyof typeof LIMIT_DEFINITIONS;
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
