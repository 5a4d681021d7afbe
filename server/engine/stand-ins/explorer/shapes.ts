import { LIMIT_DEFINITIONS, type LimitName, type ProgramLimits } from '../../../../runtime/index.ts';
import type { Knobs } from '../../../../schemas/knobs.ts';
import { invocation, RESULT_HELPERS, type ProgramCall } from '../autopilot/program-writer.ts';
import type { DirectCallDecision } from '../model-decision.ts';

/**
 * The shapes a PTC client loop must survive, as the guide and the tutorial describe what the
 * hosted runtime returns (../shared/seeds): each is a program the explorer writes with the
 * request's own tools and the autopilot's arguments, and, where the shape needs it, the limits it
 * runs under (sealed in its fingerprint, so every resume keeps them: a limit is crossed for real,
 * by a program far past it, never on a clock's margin) and the knobs of its responses.
 */

export interface ShapeInput {
  /** The program calls the autopilot planned, at least one; `independent` those that use no other call's result. */
  readonly independent: readonly ProgramCall[];
  readonly kinds: ReadonlyMap<string, string>;
  /** Whether the request has a tool the model may call directly (and that changes nothing). */
  readonly canCallDirectly: boolean;
  /** The direct calls the autopilot planned: filled once a shape that makes one is drawn. */
  readonly direct: readonly DirectCallDecision[];
  /** The server's limits. */
  readonly limits: ProgramLimits;
}

export interface ShapeProgram {
  /** The program's body, after the explorer's marker line. */
  readonly body: string;
  /** The limits it runs under, from its whole code (the code-size limit needs it). */
  readonly limits?: (code: string) => Partial<ProgramLimits>;
  /** The model's own calls in the same response. */
  readonly calls?: readonly DirectCallDecision[];
}

export interface Shape {
  readonly name: string;
  /** What a client meets, for the report. */
  readonly description: string;
  /** Knobs of every response of its conversation. */
  readonly knobs?: Knobs;
  readonly applies: (input: ShapeInput) => boolean;
  readonly write: (input: ShapeInput) => ShapeProgram;
}

const always = (): boolean => true;

/** The `n`th call, cycling over the independent ones. */
function nth(input: ShapeInput, n: number): ProgramCall {
  return input.independent[n % input.independent.length]!;
}

function program(...lines: string[]): string {
  return [...RESULT_HELPERS, ...lines].join('\n');
}

/** `const name = await attempt(() => tools.x({...}));` */
function awaited(name: string, call: ProgramCall): string {
  return `const ${name} = await attempt(() => ${invocation(call)});`;
}

/** A 1×1 transparent PNG, as a data URL. */
const PIXEL = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

/** A program that makes one call, then does `then` (the limit shapes: a call first, so that the limit is met on a resume, as a client loop meets it). */
function oneCallThen(input: ShapeInput, ...then: string[]): string {
  return program(awaited('first', nth(input, 0)), ...then);
}

/** The shape of each limit: what crosses it, far past it, and the limit it runs under. */
const LIMIT_SHAPES: { readonly [Name in LimitName]: (input: ShapeInput) => ShapeProgram } = {
  cpuTimeMs: (input) => ({ body: oneCallThen(input, 'let spins = 0;', 'for (;;) spins++;'), limits: () => ({ cpuTimeMs: 50 }) }),
  stepWallTimeMs: (input) => ({ body: oneCallThen(input, 'let spins = 0;', 'for (;;) spins++;'), limits: () => ({ stepWallTimeMs: 100 }) }),
  memoryMb: (input) => ({
    body: oneCallThen(input, 'const kept = new Map();', 'for (let i = 0; ; i++) kept.set(i, new Array(1e4).fill(i));'),
    limits: () => ({ memoryMb: 8 }),
  }),
  maxCodeBytes: (input) => ({ body: oneCallThen(input, 'text({ first });'), limits: (code) => ({ maxCodeBytes: Math.max(1, Buffer.byteLength(code) - 1) }) }),
  maxCalls: (input) => ({
    body: program(awaited('first', nth(input, 0)), awaited('second', nth(input, 1)), 'text({ first, second });'),
    limits: () => ({ maxCalls: 1 }),
  }),
  maxCallsInFlight: (input) => ({
    body: program(
      `const both = await Promise.all([attempt(() => ${invocation(nth(input, 0))}), attempt(() => ${invocation(nth(input, 1))})]);`,
      'text({ both });',
    ),
    limits: () => ({ maxCallsInFlight: 1 }),
  }),
  maxResumes: (input) => ({
    body: program(awaited('first', nth(input, 0)), awaited('second', nth(input, 1)), awaited('third', nth(input, 2)), 'text({ first, second, third });'),
    limits: () => ({ maxResumes: 1 }),
  }),
  maxArgumentBytes: (input) => {
    const call = nth(input, 0);
    return {
      body: oneCallThen(input, 'text({ first });'),
      limits: () => ({
        maxArgumentBytes: Math.max(1, Buffer.byteLength(typeof call.argument === 'string' ? call.argument : JSON.stringify(call.argument)) - 1),
      }),
    };
  },
  maxToolOutputBytes: (input) => ({ body: oneCallThen(input, 'text({ first });'), limits: () => ({ maxToolOutputBytes: 1 }) }),
  maxOutputBytes: (input) => ({ body: oneCallThen(input, "text('x'.repeat(128));"), limits: () => ({ maxOutputBytes: 64 }) }),
};

/** The catalogue, in the order seeds draw from. */
export const SHAPES: readonly Shape[] = [
  {
    name: 'sequential_pauses',
    description: 'one program pauses three times, one call each time, each waiting for the last',
    applies: always,
    write: (input) => ({
      body: program('const results = [];', ...[0, 1, 2].map((n) => `results.push(await attempt(() => ${invocation(nth(input, n))}));`), 'text({ results });'),
    }),
  },
  {
    name: 'parallel_batch',
    description: 'one batch of ten calls (Promise.all): ten function_call items in one response',
    applies: always,
    write: (input) => ({
      body: program(
        'const results = await Promise.all([',
        ...Array.from({ length: 10 }, (_, n) => `  attempt(() => ${invocation(nth(input, n))}),`),
        ']);',
        'text({ calls: results.length, results });',
      ),
    }),
  },
  {
    name: 'direct_and_programmatic',
    description: "a program's calls and a direct call of the model's in the same response",
    applies: (input) => input.canCallDirectly,
    write: (input) => ({ body: oneCallThen(input, 'text({ first });'), calls: [input.direct[0]!] }),
  },
  {
    name: 'tool_output_failure',
    description: 'the program treats a tool output as a failure, retries once, and reports a structured failure',
    applies: always,
    write: (input) => ({
      body: program(
        '// The output is taken for a transient failure (as a check of a field the tool did not return would), tried once more, then reported.',
        'const tries = [];',
        `for (let attempt_ = 0; attempt_ < 2; attempt_++) tries.push(await attempt(() => ${invocation(nth(input, 0))}));`,
        "text({ status: 'failed', reason: 'the tool output lacked what this program needs', tries });",
      ),
    }),
  },
  {
    name: 'error_caught',
    description: 'the program throws an error and catches it, then completes',
    applies: always,
    write: (input) => ({
      body: oneCallThen(
        input,
        'let caught;',
        "try { throw new RangeError('thrown on purpose, and caught'); } catch (error) { caught = `${error.name}: ${error.message}`; }",
        'text({ first, caught });',
      ),
    }),
  },
  {
    name: 'error_uncaught',
    description: 'the program throws after a call and does not catch it: program_output incomplete (program_threw)',
    applies: always,
    write: (input) => ({ body: oneCallThen(input, "throw new Error('thrown on purpose after a tool call, not caught');") }),
  },
  {
    name: 'program_stalled',
    description: 'the program awaits a promise nothing settles: program_output incomplete (program_stalled)',
    applies: always,
    write: (input) => ({ body: oneCallThen(input, 'await new Promise(() => {});', 'text({ first });') }),
  },
  ...(Object.entries(LIMIT_SHAPES) as [LimitName, (input: ShapeInput) => ShapeProgram][]).map(
    ([limit, write]): Shape => ({
      name: `limit:${LIMIT_DEFINITIONS[limit].code}`,
      description: `the program crosses ${LIMIT_DEFINITIONS[limit].env} (set low for it): program_output incomplete (${LIMIT_DEFINITIONS[limit].code})`,
      applies: always,
      write,
    }),
  ),
  {
    name: 'no_message_yet',
    description: 'a response ends with the program_output and no message: the message comes in the next one',
    knobs: { final_message: 'next' },
    applies: always,
    write: (input) => ({ body: oneCallThen(input, 'text({ first });') }),
  },
  {
    name: 'image_output',
    description: 'the program emits an image() beside its text',
    applies: always,
    write: (input) => ({ body: oneCallThen(input, `image(${JSON.stringify(PIXEL)});`, 'text({ first });') }),
  },
  {
    name: 'near_output_limit',
    description: 'a program_output 1 KiB under PTC_MAX_OUTPUT_BYTES',
    applies: (input) => input.limits.maxOutputBytes > 2048,
    write: (input) => ({ body: oneCallThen(input, `text('x'.repeat(${input.limits.maxOutputBytes - 1024}));`) }),
  },
  {
    name: 'mcp_tool_call',
    description: "a program's call of an MCP tool: an mcp_approval_request pause where the server requires approval",
    applies: (input) => input.independent.some((call) => input.kinds.get(call.tool) === 'mcp'),
    write: (input) => ({
      body: oneCallThen({ ...input, independent: input.independent.filter((call) => input.kinds.get(call.tool) === 'mcp') }, 'text({ first });'),
    }),
  },
];

export function shapeNamed(name: string): Shape | undefined {
  return SHAPES.find((shape) => shape.name === name);
}
