import { describe, expect, it } from 'vitest';
import { IsolateProgram } from '../../runtime/isolate-program.ts';
import { DEFAULT_LIMITS, LIMIT_DEFINITIONS, type ProgramLimits } from '../../runtime/limits.ts';
import { runProgram, type HostTool } from '../../runtime/run-program.ts';
import { PROGRAM_ERRORS, type ProgramErrorCode } from '../../schemas/error-codes.ts';

const echo: HostTool = { run: (args) => JSON.stringify(args) };

interface FailureCase {
  readonly code: ProgramErrorCode;
  readonly why: string;
  readonly program: string;
  readonly limits?: Partial<ProgramLimits>;
  readonly tools?: Record<string, HostTool>;
}

/** One program per failure code the runtime produces, each ending `incomplete` with that code. */
const FAILURES: readonly FailureCase[] = [
  { code: 'program_threw', why: 'an uncaught Error', program: 'throw new RangeError("nope")' },
  { code: 'program_threw', why: 'a thrown non-Error', program: 'throw {reason: 42}' },
  { code: 'program_threw', why: 'a rejected await', program: 'await Promise.reject(new Error("late"))' },
  { code: 'syntax_error', why: 'code that does not parse', program: 'const = 1' },
  { code: 'code_too_large', why: 'code over the size limit', program: `text("${'x'.repeat(2000)}")`, limits: { maxCodeBytes: 1000 } },
  { code: 'cpu_time_exceeded', why: 'a synchronous infinite loop', program: 'while (true) {}', limits: { cpuTimeMs: 150, stepWallTimeMs: 10_000 } },
  { code: 'cpu_time_exceeded', why: 'an infinite microtask loop', program: 'while (true) await null', limits: { cpuTimeMs: 150, stepWallTimeMs: 10_000 } },
  {
    code: 'wall_time_exceeded',
    why: 'a step longer than its wall-clock ceiling',
    program: 'while (true) {}',
    limits: { stepWallTimeMs: 150, cpuTimeMs: 10_000 },
  },
  {
    code: 'memory_limit_exceeded',
    why: 'an allocation without end',
    program: 'const a = []; while (true) a.push(new Array(1e5).fill(1.5))',
    limits: { memoryMb: 16 },
  },
  {
    code: 'call_limit_exceeded',
    why: 'more calls than allowed in all',
    program: 'for (let i = 0; i < 4; i++) await tools.echo({i})',
    limits: { maxCalls: 3 },
    tools: { echo },
  },
  {
    code: 'call_limit_exceeded',
    why: 'a caught call-limit error',
    program: 'for (let i = 0; i < 4; i++) { try { await tools.echo({i}) } catch {} } text("survived")',
    limits: { maxCalls: 3 },
    tools: { echo },
  },
  {
    code: 'calls_in_flight_exceeded',
    why: 'too many calls pending at once',
    program: 'await Promise.all([1, 2, 3].map((i) => tools.echo({i})))',
    limits: { maxCallsInFlight: 2 },
    tools: { echo },
  },
  {
    code: 'arguments_too_large',
    why: 'arguments over the size limit',
    program: 'await tools.echo({s: "x".repeat(200)})',
    limits: { maxArgumentBytes: 100 },
    tools: { echo },
  },
  {
    code: 'arguments_too_large',
    why: 'arguments under the limit in characters but over it in UTF-8 bytes',
    program: 'await tools.echo({s: "é".repeat(80)})',
    limits: { maxArgumentBytes: 100 },
    tools: { echo },
  },
  {
    code: 'tool_output_too_large',
    why: 'a tool output over the size limit',
    program: 'await tools.big({})',
    limits: { maxToolOutputBytes: 100 },
    tools: { big: { run: () => 'y'.repeat(101) } },
  },
  {
    code: 'tool_output_too_large',
    why: "a call's error message over the size limit, even caught",
    program: 'try { await tools.big({}) } catch { text("caught") }',
    limits: { maxToolOutputBytes: 100 },
    tools: {
      big: {
        run: () => {
          throw new Error('y'.repeat(101));
        },
      },
    },
  },
  { code: 'output_limit_exceeded', why: 'text() over the output limit', program: 'for (;;) text("0123456789")', limits: { maxOutputBytes: 1000 } },
  {
    code: 'output_limit_exceeded',
    why: 'output under the limit in characters but over it in UTF-8 bytes',
    program: 'text("é".repeat(600))',
    limits: { maxOutputBytes: 1000 },
  },
  {
    code: 'output_limit_exceeded',
    why: 'a caught output-limit error',
    program: 'try { text("z".repeat(2000)) } catch {} text("ok")',
    limits: { maxOutputBytes: 1000 },
  },
  {
    code: 'resume_limit_exceeded',
    why: 'more resumes than allowed',
    program: 'for (let i = 0; i < 4; i++) await tools.echo({i}); text("done")',
    limits: { maxResumes: 2 },
    tools: { echo },
  },
  { code: 'program_stalled', why: 'awaiting a promise nothing settles', program: 'await new Promise(() => {})' },
  {
    code: 'program_stalled',
    why: 'awaiting nothing after a batch was answered',
    program: 'await tools.echo({}); await new Promise(() => {})',
    tools: { echo },
  },
];

describe('a program that fails ends incomplete with a stable code', () => {
  it.each(FAILURES.map((failure) => [failure.code, failure.why, failure] as const))('%s: %s', async (code, _, failure) => {
    const run = await runProgram(failure.program, { limits: failure.limits, tools: failure.tools });
    expect(run.status).toBe('incomplete');
    expect(run.error?.code).toBe(code);
    expect(run.error?.message.length).toBeGreaterThan(0);
    expect(run.result).toBeUndefined();
  });

  it('runtime_error: a fault of the emulator, not the program, has its own code', async () => {
    // isolated-vm refuses a zero memory limit; resolveLimits never produces one, so build the spec by hand.
    const program = new IsolateProgram({ code: 'text(1)', tools: [], seed: 1, clock: 0, limits: { ...DEFAULT_LIMITS, memoryMb: 0 } });
    const event = await program.start();
    expect(event.type === 'incomplete' && event.error.code).toBe('runtime_error');
    expect(event.type === 'incomplete' && event.error.message).toBe('The emulator failed to run the program');
  });

  it('covers every program error code the runtime produces', () => {
    // Elsewhere: replay_diverged in test/runtime/replay.test.ts, runtime_crashed in
    // test/workers.test.ts, program_expired in test/backpressure-and-shutdown.test.ts,
    // arguments_invalid in test/tools/schemas.test.ts.
    const covered = new Set<string>([
      ...FAILURES.map((failure) => failure.code),
      ...['runtime_error', 'replay_diverged', 'runtime_crashed', 'program_expired', 'arguments_invalid'],
    ]);
    expect([...Object.keys(PROGRAM_ERRORS)].filter((code) => !covered.has(code))).toEqual([]);
    const limitCodes = Object.values(LIMIT_DEFINITIONS).map((definition) => definition.code);
    expect(limitCodes.filter((code) => !covered.has(code))).toEqual([]);
  });
});

describe('limits at their bound', () => {
  it.each([
    ['maxCalls', 'for (let i = 0; i < 3; i++) await tools.echo({i}); text("done")', { maxCalls: 3 }],
    ['maxCallsInFlight', 'await Promise.all([1, 2].map((i) => tools.echo({i}))); text("done")', { maxCallsInFlight: 2 }],
    ['maxArgumentBytes', `await tools.echo({s: "${'x'.repeat(100 - '{"s":""}'.length)}"}); text("done")`, { maxArgumentBytes: 100 }],
    ['maxOutputBytes', 'text("x".repeat(999)); text("done".slice(3))', { maxOutputBytes: 1000 }],
    ['maxCodeBytes', `text("done")${' '.repeat(988)}`, { maxCodeBytes: 1000 }],
    ['maxResumes', 'for (let i = 0; i < 2; i++) await tools.echo({i}); text("done")', { maxResumes: 2 }],
  ] as const)('%s: exactly at the limit still completes', async (_, program, limits) => {
    const run = await runProgram(program, { limits, tools: { echo } });
    expect(run.error).toBeUndefined();
    expect(run.status).toBe('completed');
  });
});

describe('CPU time', () => {
  it('counts only the time the program runs, not the time the client takes to answer', async () => {
    const slowClient: HostTool = { run: () => new Promise((resolve) => setTimeout(() => resolve('{}'), 250)) };
    const run = await runProgram('for (let i = 0; i < 3; i++) await tools.slow({}); text("done")', {
      limits: { cpuTimeMs: 200, stepWallTimeMs: 200 },
      tools: { slow: slowClient },
    });
    // Three answers of 250 ms each: far over both budgets had waiting counted.
    expect(run.status).toBe('completed');
  });

  it('adds up across steps: a program that burns CPU in each of several steps runs out', async () => {
    const run = await runProgram('for (;;) { let x = 0; for (let i = 0; i < 2e7; i++) x += i; await tools.echo({x}) }', {
      limits: { cpuTimeMs: 300, stepWallTimeMs: 10_000 },
      tools: { echo },
    });
    expect(run.error?.code).toBe('cpu_time_exceeded');
    expect(run.stats.steps).toBeGreaterThan(1);
  });
});

describe("strict arguments, checked again out of the program's reach", () => {
  const tools = [
    { name: 'strict', parseOutputAsJson: false, parameters: { type: 'object', properties: { s: { type: 'string' } }, additionalProperties: false } },
    { name: 'plain', parseOutputAsJson: false },
  ];
  const spec = (code: string, limits: Partial<ProgramLimits> = {}) => ({ code, tools, seed: 1, clock: 0, limits: { ...DEFAULT_LIMITS, ...limits } });

  it("are checked in parts the program's memory holds: a batch of large arguments fits as well as it does unchecked", async () => {
    // 40 calls of ~1 MB each in one batch, with a 96 MiB heap: the program's 40 MB leave a wide
    // margin unchecked (64 MiB left too little when the machine was loaded), while checking the
    // whole batch at once (its JSON and the strings parsed from it beside the program's own) would not fit.
    const batch = (tool: string) =>
      `const ps = []; for (let i = 0; i < 40; i++) ps.push(tools.${tool}({ s: String(i).padEnd(1000000, "a") })); await Promise.all(ps)`;
    for (const tool of ['plain', 'strict']) {
      const event = await new IsolateProgram(spec(batch(tool), { memoryMb: 96, stepWallTimeMs: 20_000, cpuTimeMs: 60_000 })).start();
      expect(event, tool).toMatchObject({ type: 'paused' });
    }
  });

  it('name the first call of the batch that breaks them, whichever part it is in', async () => {
    const tagged = (name: string) => ({ name, parseOutputAsJson: false, parameters: { type: 'object', properties: { tags: { type: 'array' } } } });
    // Each call's arguments fill a part of an 8 MiB heap's budget: the third is checked in a part of its own.
    const code =
      'const real = Array.isArray; Array.isArray = (v) => typeof v === "string" || real(v); const big = "x".repeat(700000); await Promise.all([tools.one({ tags: [big] }), tools.two({ tags: [big] }), tools.three({ tags: "no" })])';
    const event = await new IsolateProgram({ ...spec(code, { memoryMb: 8 }), tools: [tagged('one'), tagged('two'), tagged('three')] }).start();
    expect(event).toMatchObject({ type: 'incomplete', error: { code: 'arguments_invalid', message: 'tools.three: arguments.tags must be array' } });
  });
});
