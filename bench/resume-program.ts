import type { ServerConfig } from '../server/platform/config.ts';
import type { ProgramSpec } from '../runtime/isolate-program.ts';
import { DEFAULT_LIMITS, resolveLimits } from '../runtime/limits.ts';
import { programTools } from '../test/support/programs.ts';

/** How many earlier calls (= earlier batches, the program awaits one call at a time) a resume carries. */
export interface ResumeSchedule {
  readonly earlierCalls: number;
  readonly warmup: number;
  readonly iterations: number;
}

/** The one tool the program calls; it has no output_schema, so the program receives strings. */
export const TOOL = 't';

/** A program that calls the tool forever, one call per batch: call `seq` has arguments `{i: seq}`. */
export const LOOP_PROGRAM = `for (let i = 0; ; i++) await tools.${TOOL}({ i });`;

/** The same tool as the server sees it in a request (allowed_callers: programmatic), plus PTC. */
export const LOOP_TOOLS = programTools(TOOL);

/** What the client answers call `seq` with; distinct per call so the output digest means something. */
export function toolOutput(seq: number): string {
  return `output of call ${seq}`;
}

/** The arguments call `seq` must carry: the bench checks every call it times against this. */
export function expectedArguments(seq: number): string {
  return JSON.stringify({ i: seq });
}

/**
 * Runtime defaults, except `maxCalls` and `maxResumes`: their defaults (1000) would end the
 * program at the longest history, `maxEarlierCalls + 1` recorded calls followed by one more,
 * each its own batch and resume.
 */
export function loopLimits(maxEarlierCalls: number) {
  return resolveLimits({ maxCalls: maxEarlierCalls + 10, maxResumes: maxEarlierCalls + 10 });
}

export function loopSpec(maxEarlierCalls: number): ProgramSpec {
  return { code: LOOP_PROGRAM, tools: [{ name: TOOL, parseOutputAsJson: false }], seed: 1, clock: 0, limits: loopLimits(maxEarlierCalls) };
}

const MIB = 1024 * 1024;

/** The cache settings of ProgramRuntime's defaults (server/platform/config.ts), used by the in-process runtime too. */
export const DEFAULT_CACHE = { pausedTtlMs: 600_000, maxPausedPrograms: 1000, maxPausedHeapBytes: 512 * MIB, warmIsolates: 2 } as const;

/**
 * Every bench server's settings, given in full rather than read from the environment, so that a
 * PTC_* variable in the shell cannot change what is measured (no API key, no scenario file).
 */
export function benchServerConfig(overrides: Partial<ServerConfig>): Partial<ServerConfig> {
  return {
    apiKey: undefined,
    scenariosPath: undefined,
    clientChecks: 'strict',
    fingerprintOldKeys: [],
    store: 'memory',
    limits: DEFAULT_LIMITS,
    ...DEFAULT_CACHE,
    ...overrides,
  };
}
