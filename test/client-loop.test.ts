import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import { expectSdkError, rejectionOf, type ExpectedApiError } from './support/api-errors.ts';
import { startServer, type RunningServer } from './support/server.ts';

type Program = OpenAI.Responses.ResponseOutputItem.Program;
type FunctionCall = OpenAI.Responses.ResponseFunctionToolCall;
type FunctionCallOutput = ResponseInputItem.FunctionCallOutput;
type ProgramCaller = { type: 'program'; caller_id: string };

const MODEL = 'ptc-emulator';
const CODE = 'const [a, b] = await Promise.all([tools.get_a({}), tools.get_b({})]); text(a + b);';
const SCENARIOS: ScenarioFile = { rules: [{ match: { user: 'go' }, program: CODE }] };

const noArguments = { type: 'object', properties: {}, additionalProperties: false };
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'get_a', description: 'Returns a.', parameters: noArguments, strict: true, allowed_callers: ['programmatic'] },
  { type: 'function', name: 'get_b', description: 'Returns b.', parameters: noArguments, strict: true, allowed_callers: ['programmatic'] },
  { type: 'programmatic_tool_calling' },
];

const LENIENT = { 'x-ptc-client-checks': 'lenient' } as const;

let server: RunningServer;
let lenientServer: RunningServer;
beforeAll(async () => {
  server = await startServer({ scenarios: SCENARIOS });
  lenientServer = await startServer({ scenarios: SCENARIOS, config: { clientChecks: 'lenient' } });
});
afterAll(async () => {
  await server.close();
  await lenientServer.close();
});

/** The first turn of a loop: the program paused on its two calls, and what a store: false client resends. */
interface PausedLoop {
  readonly first: Response;
  readonly program: Program;
  readonly a: FunctionCall;
  readonly b: FunctionCall;
  readonly caller: ProgramCaller;
  /** `[user message, program, call a, call b]`, as `toResponseInputItems` makes them. */
  readonly resent: ResponseInputItem[];
}

async function pausedLoop(running: RunningServer, store = false): Promise<PausedLoop> {
  const user: ResponseInputItem = { role: 'user', content: 'go' };
  const first = await running.client.responses.create({ model: MODEL, store, input: [user], tools: TOOLS });
  expect(first.output.map((item) => item.type)).toEqual(['program', 'function_call', 'function_call']);
  const [program, a, b] = first.output as [Program, FunctionCall, FunctionCall];
  expect([a.name, b.name]).toEqual(['get_a', 'get_b']);
  const caller: ProgramCaller = { type: 'program', caller_id: program.call_id };
  expect(a.caller).toEqual(caller);
  expect(b.caller).toEqual(caller);
  return { first, program, a, b, caller, resent: [user, ...toResponseInputItems(first.output)] };
}

/** What a correct client sends back for a call: its output, with `caller` copied. */
function outputFor(call: FunctionCall, output: string): FunctionCallOutput {
  return { type: 'function_call_output', call_id: call.call_id, output, caller: call.caller ?? null };
}

/** The correct second request of a store: false loop: `[user, program, a, b, output a, output b]`. */
function correctInput(loop: PausedLoop): ResponseInputItem[] {
  return [...loop.resent, outputFor(loop.a, '1'), outputFor(loop.b, '2')];
}

/** `resent` with the item at `index` replaced. */
function replaced(loop: PausedLoop, index: number, item: ResponseInputItem): ResponseInputItem[] {
  const items = [...loop.resent];
  items[index] = item;
  return items;
}

function send(running: RunningServer, input: ResponseInputItem[], headers?: Record<string, string>): Promise<Response> {
  return running.client.responses.create({ model: MODEL, store: false, input, tools: TOOLS }, headers ? { headers } : undefined);
}

/** The program got '1' and '2' and finished: `text(a + b)` is '12', then the final message. */
function expectCompleted(response: Response, loop: PausedLoop): void {
  expect(response.output.map((item) => item.type)).toEqual(['program_output', 'message']);
  expect(response.output[0]).toMatchObject({ type: 'program_output', call_id: loop.program.call_id, status: 'completed', result: '12' });
  expect(response.output_text).toBe('12');
}

/** A response that ends the loop: a final message and no call. */
function expectFinalMessage(response: Response): void {
  expect(response.output.some((item) => item.type === 'function_call')).toBe(false);
  expect(response.output.at(-1)?.type).toBe('message');
}

function closingOutput(loop: PausedLoop): ResponseInputItem {
  return { type: 'program_output', call_id: loop.program.call_id, result: '', status: 'incomplete', id: 'po_x' };
}

function withCaller(output: FunctionCallOutput, caller: FunctionCallOutput['caller']): FunctionCallOutput {
  return { ...output, caller };
}

function withoutCaller(call: FunctionCall, output: string): FunctionCallOutput {
  return { type: 'function_call_output', call_id: call.call_id, output };
}

function garbled(fingerprint: string): string {
  const last = fingerprint.at(-2) === 'A' ? 'B' : 'A';
  return `${fingerprint.slice(0, -2)}${last}${fingerprint.at(-1) ?? ''}`;
}

type Case = readonly [name: string, build: (loop: PausedLoop) => ResponseInputItem[], expected: (loop: PausedLoop) => ExpectedApiError];

/** Violations strict mode answers with a 400; the correct request afterwards still resumes the program. */
const STRICT_CASES: readonly Case[] = [
  [
    'a call left without output',
    (loop) => [...loop.resent, outputFor(loop.a, '1')],
    (loop) => ({ code: 'tool_output_missing', param: 'input[3]', message: `No tool output found for function call ${loop.b.call_id}.` }),
  ],
  [
    'both calls left without output',
    (loop) => [...loop.resent],
    (loop) => ({ code: 'tool_output_missing', param: 'input[2]', message: `No tool output found for function call ${loop.a.call_id}.` }),
  ],
  [
    'an output for a call_id no call has',
    (loop) => [...correctInput(loop), { type: 'function_call_output', call_id: 'call_nobody', output: 'x', caller: loop.caller }],
    () => ({ code: 'tool_output_unknown_call', param: 'input[6].call_id', mentions: ['call_nobody', 'input[6]'] }),
  ],
  [
    'a second output for the same call',
    (loop) => [...correctInput(loop), outputFor(loop.a, '9')],
    (loop) => ({ code: 'tool_output_duplicate', param: 'input[6]', mentions: [loop.a.call_id, 'input[6]'] }),
  ],
  [
    'an output without caller',
    (loop) => [...loop.resent, withoutCaller(loop.a, '1'), outputFor(loop.b, '2')],
    (loop) => ({ code: 'caller_missing', param: 'input[4].caller', mentions: [loop.a.call_id, loop.program.call_id, 'input[4]'] }),
  ],
  [
    'an output with caller: null',
    (loop) => [...loop.resent, outputFor(loop.a, '1'), withCaller(outputFor(loop.b, '2'), null)],
    (loop) => ({ code: 'caller_missing', param: 'input[5].caller', mentions: [loop.b.call_id, loop.program.call_id] }),
  ],
  [
    'an output whose caller became direct',
    (loop) => [...loop.resent, withCaller(outputFor(loop.a, '1'), { type: 'direct' }), outputFor(loop.b, '2')],
    (loop) => ({ code: 'caller_mismatch', param: 'input[4].caller', mentions: [loop.a.call_id, 'direct', loop.program.call_id] }),
  ],
  [
    'an output whose caller names another program',
    (loop) => [...loop.resent, outputFor(loop.a, '1'), withCaller(outputFor(loop.b, '2'), { type: 'program', caller_id: 'call_someone_else' })],
    (loop) => ({ code: 'caller_mismatch', param: 'input[5].caller', mentions: [loop.b.call_id, 'call_someone_else', loop.program.call_id] }),
  ],
  [
    'the program item dropped',
    (loop) => correctInput(loop).filter((item) => item.type !== 'program'),
    (loop) => ({ code: 'program_item_missing', param: 'input[1].caller.caller_id', mentions: [loop.a.call_id, loop.program.call_id] }),
  ],
  [
    "the program's code changed",
    (loop) => [...replaced(loop, 1, { ...loop.program, code: `${loop.program.code}\n// tweaked` }), outputFor(loop.a, '1'), outputFor(loop.b, '2')],
    (loop) => ({ code: 'fingerprint_mismatch', mentions: [loop.program.call_id] }),
  ],
  [
    "a call's arguments changed",
    (loop) => [...replaced(loop, 2, { ...loop.a, arguments: '{"x":1}' }), outputFor(loop.a, '1'), outputFor(loop.b, '2')],
    (loop) => ({ code: 'program_item_altered', mentions: [loop.a.call_id, loop.program.call_id] }),
  ],
  [
    "a call's tool name changed",
    (loop) => [...replaced(loop, 3, { ...loop.b, name: 'get_a' }), outputFor(loop.a, '1'), outputFor(loop.b, '2')],
    (loop) => ({ code: 'program_item_altered', mentions: [loop.b.call_id, loop.program.call_id] }),
  ],
  [
    'a fabricated call naming the program as caller',
    (loop) => [
      ...loop.resent,
      { type: 'function_call', call_id: 'call_fabricated', name: 'get_a', arguments: '{}', caller: loop.caller },
      outputFor(loop.a, '1'),
      outputFor(loop.b, '2'),
      { type: 'function_call_output', call_id: 'call_fabricated', output: '3', caller: loop.caller },
    ],
    (loop) => ({ code: 'program_item_altered', mentions: ['call_fabricated', loop.program.call_id] }),
  ],
  [
    'the program item sent twice',
    (loop) => [...loop.resent, loop.program, outputFor(loop.a, '1'), outputFor(loop.b, '2')],
    // As hosted: any item twice in one input is a duplicate.
    (loop) => ({ code: 'duplicate_item_id', param: 'input[4].id', mentions: [loop.program.id, 'Remove duplicate items'] }),
  ],
  [
    'a garbled fingerprint',
    (loop) => [...replaced(loop, 1, { ...loop.program, fingerprint: garbled(loop.program.fingerprint) }), outputFor(loop.a, '1'), outputFor(loop.b, '2')],
    (loop) => ({ code: 'fingerprint_invalid', mentions: [loop.program.call_id] }),
  ],
  [
    'a fingerprint that is no fingerprint',
    (loop) => [...replaced(loop, 1, { ...loop.program, fingerprint: 'trust-me' }), outputFor(loop.a, '1'), outputFor(loop.b, '2')],
    (loop) => ({ code: 'fingerprint_invalid', mentions: [loop.program.call_id] }),
  ],
  [
    'an output placed before its call',
    (loop) => [...loop.resent.slice(0, 3), outputFor(loop.b, '2'), loop.resent[3]!, outputFor(loop.a, '1')],
    (loop) => ({ code: 'items_out_of_order', param: 'input[3]', mentions: [loop.b.call_id, 'input[3]'] }),
  ],
  [
    'the calls placed before their program',
    (loop) => [loop.resent[0]!, loop.resent[2]!, loop.resent[3]!, loop.resent[1]!, outputFor(loop.a, '1'), outputFor(loop.b, '2')],
    (loop) => ({ code: 'items_out_of_order', mentions: [loop.a.call_id, loop.program.call_id] }),
  ],
  [
    'a program_output placed before its program',
    (loop) => [loop.resent[0]!, closingOutput(loop), loop.resent[1]!, loop.resent[2]!, loop.resent[3]!],
    (loop) => ({ code: 'items_out_of_order', mentions: [loop.program.call_id] }),
  ],
  [
    'a program_output for a program the conversation lacks',
    (loop) => [...correctInput(loop), { type: 'program_output', call_id: 'call_no_program', result: '', status: 'incomplete', id: 'po_y' }],
    () => ({ code: 'program_item_missing', param: 'input[6].call_id', mentions: ['call_no_program', 'input[6]'] }),
  ],
  [
    'a call placed after its program_output',
    (loop) => [loop.resent[0]!, loop.resent[1]!, closingOutput(loop), loop.resent[2]!, loop.resent[3]!],
    (loop) => ({ code: 'items_out_of_order', param: 'input[3]', mentions: [loop.a.call_id, loop.program.call_id] }),
  ],
];

function strictCase(name: string): Case {
  const found = STRICT_CASES.find((candidate) => candidate[0] === name);
  if (!found) throw new Error(`no strict case named ${name}`);
  return found;
}

describe('client-loop checks in strict mode (the default)', () => {
  it.each(STRICT_CASES)('rejects %s with a 400 naming the mistake, and the correct request still resumes the program', async (_, build, expected) => {
    const loop = await pausedLoop(server);
    expectSdkError(await rejectionOf(send(server, build(loop))), expected(loop));
    expectCompleted(await send(server, correctInput(loop)), loop);
  });

  it('rejects a program sealed by another server instance', async () => {
    const other = await startServer({ scenarios: SCENARIOS, config: { fingerprintKey: 'another-instance-secret' } });
    try {
      const foreign = await pausedLoop(other);
      expectSdkError(await rejectionOf(send(server, correctInput(foreign))), { code: 'fingerprint_invalid', mentions: [foreign.program.call_id] });
      // Its own server resumes it.
      expectCompleted(await send(other, correctInput(foreign)), foreign);
    } finally {
      await other.close();
    }
  });

  it("rejects a program carrying another program's fingerprint", async () => {
    const loop = await pausedLoop(server);
    const donor = await pausedLoop(server);
    const input = [...replaced(loop, 1, { ...loop.program, fingerprint: donor.program.fingerprint }), outputFor(loop.a, '1'), outputFor(loop.b, '2')];
    expectSdkError(await rejectionOf(send(server, input)), { code: 'fingerprint_mismatch', mentions: [loop.program.call_id] });
    expectCompleted(await send(server, correctInput(loop)), loop);
    expectCompleted(await send(server, correctInput(donor)), donor);
  });

  it('resumes the program once the same rejected loop is fixed, after several rejections in a row', async () => {
    const loop = await pausedLoop(server);
    for (const [, build, expected] of STRICT_CASES.filter(
      ([, , expected]) => expected(loop).code.startsWith('tool_output') || expected(loop).code.startsWith('caller'),
    )) {
      expectSdkError(await rejectionOf(send(server, build(loop))), expected(loop));
    }
    expectCompleted(await send(server, correctInput(loop)), loop);
  });

  describe('continuing with previous_response_id (store: true)', () => {
    function continueWith(loop: PausedLoop, input: ResponseInputItem[], headers?: Record<string, string>): Promise<Response> {
      return server.client.responses.create({ model: MODEL, previous_response_id: loop.first.id, input, tools: TOOLS }, headers ? { headers } : undefined);
    }

    it('rejects a call left without output with the documented message', async () => {
      const loop = await pausedLoop(server, true);
      expectSdkError(await rejectionOf(continueWith(loop, [outputFor(loop.a, '1')])), {
        code: 'tool_output_missing',
        message: `No tool output found for function call ${loop.b.call_id}.`,
      });
      expectCompleted(await continueWith(loop, [outputFor(loop.a, '1'), outputFor(loop.b, '2')]), loop);
    });

    it("names the offending item by its index in the request's own input", async () => {
      const loop = await pausedLoop(server, true);
      const error = await rejectionOf(continueWith(loop, [withoutCaller(loop.a, '1'), outputFor(loop.b, '2')]));
      expectSdkError(error, { code: 'caller_missing', param: 'input[0].caller', mentions: [loop.a.call_id, 'input[0]'] });
      expectCompleted(await continueWith(loop, [outputFor(loop.a, '1'), outputFor(loop.b, '2')]), loop);
    });
  });
});

/** The violations lenient mode lets through, and what the program then receives. */
const TOLERATED: readonly (readonly [name: string, build: (loop: PausedLoop) => ResponseInputItem[], strictCode: ExpectedApiError['code']])[] = [
  [
    'an output for a call_id no call has',
    (loop) => [...correctInput(loop), { type: 'function_call_output', call_id: 'call_nobody', output: 'x', caller: loop.caller }],
    'tool_output_unknown_call',
  ],
  ['a second output for the same call (the first one counts)', (loop) => [...correctInput(loop), outputFor(loop.a, '9')], 'tool_output_duplicate'],
  ['an output without caller', (loop) => [...loop.resent, withoutCaller(loop.a, '1'), withoutCaller(loop.b, '2')], 'caller_missing'],
  [
    'an output whose caller became direct',
    (loop) => [...loop.resent, withCaller(outputFor(loop.a, '1'), { type: 'direct' }), outputFor(loop.b, '2')],
    'caller_mismatch',
  ],
  [
    'an output whose caller names another program',
    (loop) => [...loop.resent, outputFor(loop.a, '1'), withCaller(outputFor(loop.b, '2'), { type: 'program', caller_id: 'call_someone_else' })],
    'caller_mismatch',
  ],
];

describe.each([
  ['per request (header x-ptc-client-checks: lenient)', () => server, LENIENT],
  ['server-wide (clientChecks: lenient)', () => lenientServer, undefined],
] as const)('lenient client-loop checks, %s', (_, running, headers) => {
  it.each(TOLERATED)('lets %s through and resumes the program with the outputs it can match', async (_, build) => {
    const loop = await pausedLoop(running());
    expectCompleted(await send(running(), build(loop), headers), loop);
  });

  it('lets a call after its program_output through: the program stays closed', async () => {
    const loop = await pausedLoop(running());
    const response = await send(running(), [loop.resent[0]!, loop.resent[1]!, closingOutput(loop), loop.resent[2]!, loop.resent[3]!], headers);
    expectFinalMessage(response);
    expect(response.output.map((item) => item.type)).toEqual(['message']);
  });

  it.each<Case>(
    ['a call left without output', 'the program item dropped', "the program's code changed", 'a garbled fingerprint', 'an output placed before its call'].map(
      strictCase,
    ),
  )('still rejects %s', async (_, build, expected) => {
    const loop = await pausedLoop(running());
    expectSdkError(await rejectionOf(send(running(), build(loop), headers)), expected(loop));
    expectCompleted(await send(running(), correctInput(loop), headers), loop);
  });
});

describe('the x-ptc-client-checks header', () => {
  it.each(['loose', 'STRICT', 'strict, lenient'])('rejects the value %j naming the header and the values it takes', async (value) => {
    const loop = await pausedLoop(server);
    const error = await rejectionOf(send(server, correctInput(loop), { 'x-ptc-client-checks': value }));
    expectSdkError(error, { code: 'invalid_value', param: 'x-ptc-client-checks', mentions: ['x-ptc-client-checks', value, "'strict'", "'lenient'"] });
    expectCompleted(await send(server, correctInput(loop)), loop);
  });

  it.each(TOLERATED.map(([name, build, code]) => [name, build, code] as const))(
    'makes a lenient server strict for one request: %s is rejected',
    async (_, build, code) => {
      const loop = await pausedLoop(lenientServer);
      expectSdkError(await rejectionOf(send(lenientServer, build(loop), { 'x-ptc-client-checks': 'strict' })), { code });
      expectCompleted(await send(lenientServer, correctInput(loop)), loop);
    },
  );
});

describe('a client-authored program_output', () => {
  let own: RunningServer;
  beforeAll(async () => {
    own = await startServer({ scenarios: SCENARIOS });
  });
  afterAll(() => own.close());

  async function pausedPrograms(): Promise<number> {
    const health = await fetch(`${own.baseURL.replace(/\/v1$/, '')}/health`);
    return ((await health.json()) as { paused_programs: number }).paused_programs;
  }

  it('closes the program without its tool outputs: the next response is a final message', async () => {
    const before = await pausedPrograms();
    const loop = await pausedLoop(own);
    expect(await pausedPrograms()).toBe(before + 1);
    const closed = await send(own, [...loop.resent, closingOutput(loop)]);
    expect(closed.output.map((item) => item.type)).toEqual(['message']);
    // The server let go of the paused program.
    expect(await pausedPrograms()).toBe(before);
  });

  it('no further calls come from a closed program, even when the outputs arrive later', async () => {
    const loop = await pausedLoop(own);
    const closingInput = [...loop.resent, closingOutput(loop)];
    const closed = await send(own, closingInput);
    expectFinalMessage(closed);
    const late = await send(own, [...closingInput, ...toResponseInputItems(closed.output), outputFor(loop.a, '1'), outputFor(loop.b, '2')]);
    // Whatever the stand-in does next, the closed program neither calls nor completes.
    const fromClosed = late.output.filter(
      (item) =>
        (item.type === 'function_call' && item.caller?.type === 'program' && item.caller.caller_id === loop.program.call_id) ||
        (item.type === 'program_output' && item.call_id === loop.program.call_id),
    );
    expect(fromClosed).toEqual([]);
  });

  it('with store: false the resent items are the truth: a history without the closing item resumes the program', async () => {
    const loop = await pausedLoop(own);
    await send(own, [...loop.resent, closingOutput(loop)]);
    // The server keeps nothing of a store: false request, so it cannot know the client closed it.
    const resumed = await send(own, correctInput(loop));
    expectCompleted(resumed, loop);
  });

  it('closes the program of a stored conversation too', async () => {
    const before = await pausedPrograms();
    const loop = await pausedLoop(own, true);
    const closed = await own.client.responses.create({ model: MODEL, previous_response_id: loop.first.id, input: [closingOutput(loop)], tools: TOOLS });
    expect(closed.output.map((item) => item.type)).toEqual(['message']);
    expect(await pausedPrograms()).toBe(before);
  });
});
