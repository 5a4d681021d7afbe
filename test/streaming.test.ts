import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseCreateParamsNonStreaming, ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamEvent } from '../schemas/stream-events.ts';
import type { ScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { sseEvents } from './support/fuzz-http.ts';
import { withoutParseFields } from './support/sdk-parse-fields.ts';
import { SEED_TOOLS } from './fixtures/seed-tools.ts';
import { functionCallsOf, programOutputOf } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// Every kind of turn, streamed through the SDK's own helpers, must accumulate into exactly the
// Response the non-streaming API stores for it (SPEC §6).

type FunctionCall = OpenAI.Responses.ResponseFunctionToolCall;
type Params = Omit<ResponseCreateParamsNonStreaming, 'stream'>;

const MODEL = 'ptc-emulator';
const TWO_PAUSES = 'const a = await tools.get_a({ step: 1 }); const b = await tools.get_b({ step: 2, a }); text(`${a} then ${b}`);';
const PLAIN = 'Here is a plain answer, long enough to travel as many deltas over the stream.';
const LONG =
  'This answer is deliberately long: it rambles on about the weather, the tides, the price of tea and the migration of birds, so that a small max_output_tokens budget cuts it well before its end.';
const UNICODE = 'Crème brûlée à la française — 東京の天気は晴れ、気温は二十度です。 Ünïcödé 🎉👩‍👩‍👧‍👦🇫🇷 ✔︎ done';
const REASONING = 'The user wants a short answer; one sentence will do.';

const SCENARIOS: ScenarioFile = {
  rules: [
    { match: { user: 'two pauses' }, program: TWO_PAUSES, message: 'The program said: {{result}}' },
    { match: { user: 'failing program' }, program: 'throw new Error("boom")' },
    { match: { user: 'direct call' }, calls: [{ name: 'lookup', arguments: { q: 'weather in Paris' } }], message: 'Lookup said {{output}}' },
    { match: { user: 'plain message' }, message: PLAIN },
    { match: { user: 'with reasoning' }, reasoning: REASONING, message: 'Short answer.' },
    { match: { user: 'long answer' }, message: LONG },
    { match: { user: 'unicode please' }, message: UNICODE },
  ],
};

const anyObject = { type: 'object', properties: {}, additionalProperties: true };
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'get_a', description: 'Returns a.', parameters: anyObject, strict: false, allowed_callers: ['programmatic'] },
  { type: 'function', name: 'get_b', description: 'Returns b.', parameters: anyObject, strict: false, allowed_callers: ['programmatic'] },
  {
    type: 'function',
    name: 'lookup',
    description: 'Looks something up.',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false },
    strict: true,
  },
  { type: 'programmatic_tool_calling' },
];

let server: RunningServer;
let seedServer: RunningServer;
beforeAll(async () => {
  server = await startServer({ scenarios: SCENARIOS });
  seedServer = await startServer({ scenarios: fileURLToPath(new URL('./fixtures/seed-scenario.yaml', import.meta.url)) });
});
afterAll(async () => {
  await server.close();
  await seedServer.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers

const TERMINAL_TYPES = new Set(['response.completed', 'response.incomplete', 'response.failed']);
const TERMINAL_FOR_STATUS: Record<string, string> = {
  completed: 'response.completed',
  incomplete: 'response.incomplete',
  failed: 'response.failed',
};
/** A UTF-16 surrogate without its pair: what a delta cut inside an emoji would carry. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The stored response exactly as the wire carries it (no `output_text`: the SDK adds that). */
async function wireResponse(client: OpenAI, id: string): Promise<Record<string, unknown> & { output: unknown[] }> {
  const raw = await client.responses.retrieve(id).asResponse();
  expect(raw.status).toBe(200);
  return (await raw.json()) as Record<string, unknown> & { output: unknown[] };
}

type Mode = 'client.responses.stream()' | 'responses.create({stream: true})';
const MODES: readonly Mode[] = ['client.responses.stream()', 'responses.create({stream: true})'];

interface Streamed {
  readonly events: ResponseStreamEvent[];
  /** `finalResponse()` of the helper, or the SDK's accumulator folded over the raw events. */
  readonly final: Response;
}

async function streamTurn(client: OpenAI, mode: Mode, params: Params): Promise<Streamed> {
  const events: ResponseStreamEvent[] = [];
  if (mode === 'client.responses.stream()') {
    const stream = client.responses.stream(params);
    for await (const event of stream) events.push(event);
    return { events, final: await stream.finalResponse() };
  }
  const stream = await client.responses.create({ ...params, stream: true });
  let snapshot: Response | undefined;
  for await (const event of stream) {
    events.push(event);
    snapshot = accumulateResponse(event, snapshot);
  }
  if (!snapshot) throw new Error('the stream carried no events');
  return { events, final: snapshot };
}

function isTerminal(
  event: ResponseStreamEvent,
): event is Extract<ResponseStreamEvent, { type: 'response.completed' | 'response.incomplete' | 'response.failed' }> {
  return TERMINAL_TYPES.has(event.type);
}

/** The event types of one item's block, with each run of deltas written once as `<type>*`. */
function blockShape(block: readonly ResponseStreamEvent[]): string[] {
  const shape: string[] = [];
  for (const event of block) {
    const name = event.type.endsWith('.delta') ? `${event.type}*` : event.type;
    if (shape.at(-1) !== name || !name.endsWith('*')) shape.push(name);
  }
  return shape;
}

type WireItem = Record<string, unknown> & { type: string; id: string };

/** The shape an item's block must have, from the item the stored response holds. */
function expectedShape(item: WireItem): string[] {
  const deltas = (text: string, type: string): string[] => (text === '' ? [] : [`${type}*`]);
  switch (item.type) {
    case 'program':
    case 'program_output':
      return ['response.output_item.added', 'response.output_item.done'];
    case 'function_call':
      return [
        'response.output_item.added',
        ...deltas(item.arguments as string, 'response.function_call_arguments.delta'),
        'response.function_call_arguments.done',
        'response.output_item.done',
      ];
    case 'message':
      return [
        'response.output_item.added',
        ...(item.content as { text: string }[]).flatMap((part) => [
          'response.content_part.added',
          ...deltas(part.text, 'response.output_text.delta'),
          'response.output_text.done',
          'response.content_part.done',
        ]),
        'response.output_item.done',
      ];
    case 'reasoning':
      return [
        'response.output_item.added',
        ...(item.summary as { text: string }[]).flatMap((part) => [
          'response.reasoning_summary_part.added',
          ...deltas(part.text, 'response.reasoning_summary_text.delta'),
          'response.reasoning_summary_text.done',
          'response.reasoning_summary_part.done',
        ]),
        'response.output_item.done',
      ];
    default:
      throw new Error(`no expected shape for item type ${item.type}`);
  }
}

/** Checks one item's block: its shape, ids, and that deltas add up to what `.done` and the item say. */
function expectItemBlock(block: readonly ResponseStreamEvent[], item: WireItem, index: number): void {
  expect(blockShape(block), `events of output[${index}] (${item.type})`).toEqual(expectedShape(item));
  const added = block[0] as Extract<ResponseStreamEvent, { type: 'response.output_item.added' }>;
  const done = block.at(-1) as Extract<ResponseStreamEvent, { type: 'response.output_item.done' }>;
  expect(added.item.type).toBe(item.type);
  expect(added.item.id).toBe(item.id);
  expect(done.item).toStrictEqual(item);
  for (const event of block) {
    if ('item_id' in event) expect(event.item_id, event.type).toBe(item.id);
    if ('delta' in event && typeof event.delta === 'string')
      expect(LONE_SURROGATE.test(event.delta), `delta ${JSON.stringify(event.delta)} splits a character`).toBe(false);
  }

  const deltasOf = (type: string, key: (event: ResponseStreamEvent) => boolean = () => true): string =>
    block
      .filter((event) => event.type === type && key(event))
      .map((event) => (event as { delta: string }).delta)
      .join('');
  switch (item.type) {
    case 'function_call': {
      const argumentsDone = block.find((event) => event.type === 'response.function_call_arguments.done');
      // openai 7.x dropped `name` from this event: the item carries it.
      expect(argumentsDone).toMatchObject({ arguments: item.arguments, output_index: index });
      expect(argumentsDone).not.toHaveProperty('name');
      expect(deltasOf('response.function_call_arguments.delta')).toBe(item.arguments);
      if ('arguments' in added.item) expect(added.item.arguments).toBe('');
      break;
    }
    case 'message': {
      const content = item.content as { text: string }[];
      for (const [contentIndex, part] of content.entries()) {
        const inPart = (event: ResponseStreamEvent): boolean => 'content_index' in event && event.content_index === contentIndex;
        const textDone = block.find((event) => event.type === 'response.output_text.done' && inPart(event));
        const partDone = block.find((event) => event.type === 'response.content_part.done' && inPart(event));
        const partAdded = block.find((event) => event.type === 'response.content_part.added' && inPart(event));
        expect(deltasOf('response.output_text.delta', inPart)).toBe(part.text);
        expect(textDone).toMatchObject({ text: part.text });
        expect(partDone).toMatchObject({ part });
        expect(partAdded).toMatchObject({ part: { ...part, text: '' } });
      }
      break;
    }
    case 'reasoning': {
      const summary = item.summary as { text: string }[];
      for (const [summaryIndex, part] of summary.entries()) {
        const inPart = (event: ResponseStreamEvent): boolean => 'summary_index' in event && event.summary_index === summaryIndex;
        expect(deltasOf('response.reasoning_summary_text.delta', inPart)).toBe(part.text);
        expect(block.find((event) => event.type === 'response.reasoning_summary_text.done' && inPart(event))).toMatchObject({ text: part.text });
        expect(block.find((event) => event.type === 'response.reasoning_summary_part.done' && inPart(event))).toMatchObject({ part });
      }
      break;
    }
  }
}

/**
 * Everything a full (not resumed) stream of a stored response must satisfy: strict event
 * shapes, numbering, lifecycle order, one terminal event, per-item blocks that rebuild the
 * stored output, and the SDK accumulator reaching the stored output before the terminal event.
 */
function expectWellFormedStream(
  events: readonly ResponseStreamEvent[],
  wire: Record<string, unknown> & { output: unknown[] },
  opening: readonly string[],
): void {
  for (const event of events) {
    const parsed = StreamEvent.safeParse(event);
    expect(parsed.success, `${event.type} #${event.sequence_number}: ${parsed.error?.message}`).toBe(true);
  }
  expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
  expect(events.slice(0, opening.length).map((event) => event.type)).toEqual(opening);

  const terminals = events.filter(isTerminal);
  expect(terminals).toHaveLength(1);
  const terminal = events.at(-1)!;
  expect(terminal).toBe(terminals[0]);
  expect(terminal.type).toBe(TERMINAL_FOR_STATUS[wire.status as string]);
  expect((terminal as Extract<ResponseStreamEvent, { response: unknown }>).response).toStrictEqual(wire);

  // Opening snapshots: the request's echo, no output, no usage.
  const { usage: _usage, ...withoutUsage } = wire;
  for (const event of events.slice(0, opening.length)) {
    const snapshot = (event as Extract<ResponseStreamEvent, { response: unknown }>).response;
    expect('usage' in snapshot).toBe(false);
    // A background response opens queued (response.created, response.queued); any other opens in progress.
    const status = event.type !== 'response.in_progress' && wire.background === true ? 'queued' : 'in_progress';
    expect(snapshot).toStrictEqual({ ...withoutUsage, status, output: [], completed_at: null, error: null, incomplete_details: null });
  }

  // Items: contiguous blocks, in output order.
  const itemEvents = events.slice(opening.length, -1);
  const output = wire.output as WireItem[];
  let at = 0;
  for (const [index, item] of output.entries()) {
    const start = at;
    while (at < itemEvents.length && (itemEvents[at] as { output_index?: number }).output_index === index) at += 1;
    expectItemBlock(itemEvents.slice(start, at), item, index);
  }
  // After the items, only a failed response has more: the flat `error` event naming its error.
  expect(
    itemEvents.slice(at).map((event) => event.type),
    'events after the last item',
  ).toEqual(wire.error ? ['error'] : []);

  // Programs travel only as whole items; a program is added without its code, as the hosted
  // stream adds it (recorded in the Vercel AI SDK's fixtures), and done whole.
  for (const event of itemEvents) {
    const item = output[(event as { output_index: number }).output_index];
    if (item?.type === 'program' || item?.type === 'program_output') expect(['response.output_item.added', 'response.output_item.done']).toContain(event.type);
    if (item?.type === 'program' && event.type === 'response.output_item.added') expect((event as { item: unknown }).item).toEqual({ ...item, code: '' });
  }

  // The SDK's accumulator rebuilds the output from the item events alone, before the terminal event replaces its snapshot.
  let snapshot: Response | undefined;
  for (const event of events.slice(0, -1)) snapshot = accumulateResponse(event, snapshot);
  expect(withoutParseFields(snapshot?.output)).toStrictEqual(wire.output);
}

// ---------------------------------------------------------------------------------------------
// Every kind of turn

function outputFor(call: FunctionCall, output: string): ResponseInputItem.FunctionCallOutput {
  return { type: 'function_call_output', call_id: call.call_id, output, caller: call.caller ?? null };
}

async function firstPause(client: OpenAI): Promise<Response> {
  return client.responses.create({ model: MODEL, input: 'two pauses', tools: TOOLS });
}

async function secondPause(client: OpenAI): Promise<Response> {
  const first = await firstPause(client);
  const [a] = functionCallsOf(first);
  return client.responses.create({ model: MODEL, previous_response_id: first.id, input: [outputFor(a!, 'A')], tools: TOOLS });
}

interface TurnCase {
  readonly name: string;
  /** The request of the turn under test (earlier turns, if any, run non-streaming first). */
  readonly params: (client: OpenAI) => Promise<Params>;
  readonly types: readonly string[];
  readonly status: 'completed' | 'incomplete';
  readonly check?: (final: Response) => void;
}

const TURNS: readonly TurnCase[] = [
  {
    name: 'a program that starts and pauses on a call',
    params: async () => ({ model: MODEL, input: 'two pauses', tools: TOOLS }),
    types: ['program', 'function_call'],
    status: 'completed',
    check: (final) => {
      const program = final.output[0] as OpenAI.Responses.ResponseOutputItem.Program;
      expect(program.code).toBe(TWO_PAUSES);
      expect(functionCallsOf(final)[0]).toMatchObject({ name: 'get_a', arguments: '{"step":1}', caller: { type: 'program', caller_id: program.call_id } });
    },
  },
  {
    name: 'a resumed program that pauses again',
    params: async (client) => {
      const first = await firstPause(client);
      const [a] = functionCallsOf(first);
      return { model: MODEL, previous_response_id: first.id, input: [outputFor(a!, 'A')], tools: TOOLS };
    },
    types: ['function_call'],
    status: 'completed',
    check: (final) => expect(functionCallsOf(final)[0]).toMatchObject({ name: 'get_b', arguments: '{"step":2,"a":"A"}' }),
  },
  {
    name: 'a resumed program that completes (program_output and message)',
    params: async (client) => {
      const second = await secondPause(client);
      const [b] = functionCallsOf(second);
      return { model: MODEL, previous_response_id: second.id, input: [outputFor(b!, 'B')], tools: TOOLS };
    },
    types: ['program_output', 'message'],
    status: 'completed',
    check: (final) => {
      expect(programOutputOf(final)).toMatchObject({ status: 'completed', result: 'A then B' });
      expect(final.output_text).toBe('The program said: A then B');
    },
  },
  {
    name: 'a program that fails (incomplete program_output)',
    params: async () => ({ model: MODEL, input: 'failing program', tools: TOOLS }),
    types: ['program', 'program_output', 'message'],
    status: 'completed',
    check: (final) => {
      const output = programOutputOf(final);
      expect(output?.status).toBe('incomplete');
      expect(JSON.parse(output?.result ?? '{}')).toMatchObject({ error: { code: 'program_threw' } });
    },
  },
  {
    name: 'a direct function call from a scenario rule',
    params: async () => ({ model: MODEL, input: 'direct call', tools: TOOLS }),
    types: ['function_call'],
    status: 'completed',
    check: (final) => expect(functionCallsOf(final)[0]).toMatchObject({ name: 'lookup', arguments: '{"q":"weather in Paris"}', caller: { type: 'direct' } }),
  },
  {
    name: 'the message answering a direct call',
    params: async (client) => {
      const call = await client.responses.create({ model: MODEL, input: 'direct call', tools: TOOLS });
      return { model: MODEL, previous_response_id: call.id, input: [outputFor(functionCallsOf(call)[0]!, 'sunny')], tools: TOOLS };
    },
    types: ['message'],
    status: 'completed',
    check: (final) => expect(final.output_text).toBe('Lookup said sunny'),
  },
  {
    name: 'a plain message',
    params: async () => ({ model: MODEL, input: 'plain message', tools: TOOLS }),
    types: ['message'],
    status: 'completed',
    check: (final) => expect(final.output_text).toBe(PLAIN),
  },
  {
    name: 'a message with a reasoning summary',
    params: async () => ({ model: MODEL, input: 'with reasoning', tools: TOOLS, reasoning: { summary: 'auto' } }),
    types: ['reasoning', 'message'],
    status: 'completed',
    check: (final) => {
      expect(final.output[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: REASONING }] });
      expect(final.output_text).toBe('Short answer.');
    },
  },
  {
    name: 'a message cut by max_output_tokens (status incomplete)',
    params: async () => ({ model: MODEL, input: 'long answer', tools: TOOLS, max_output_tokens: 16 }),
    types: ['message'],
    status: 'incomplete',
    check: (final) => {
      expect(final.incomplete_details).toEqual({ reason: 'max_output_tokens' });
      expect(final.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
      expect(final.output_text.length).toBeGreaterThan(0);
      expect(LONG.startsWith(final.output_text)).toBe(true);
      expect(final.output_text.length).toBeLessThan(LONG.length);
    },
  },
  {
    name: 'text with accents, CJK and emoji',
    params: async () => ({ model: MODEL, input: 'unicode please', tools: TOOLS }),
    types: ['message'],
    status: 'completed',
    check: (final) => expect(final.output_text).toBe(UNICODE),
  },
];

describe.each(TURNS)('streaming $name', (turn) => {
  it.each(MODES)('through %s: well-formed events that accumulate into the stored response', async (mode) => {
    const { client } = server;
    const params = await turn.params(client);
    const { events, final } = await streamTurn(client, mode, params);

    const wire = await wireResponse(client, final.id);
    expect(wire.status).toBe(turn.status);
    expectWellFormedStream(events, wire, ['response.created', 'response.in_progress']);

    // finalResponse() is the non-streaming Response of the same turn, field for field.
    const retrieved = await client.responses.retrieve(final.id);
    expect(withoutParseFields(final)).toStrictEqual(withoutParseFields(retrieved));
    expect(final.output.map((item) => item.type)).toEqual(turn.types);
    turn.check?.(final);

    // Text streams as real deltas, not one blob.
    const message = final.output.find((item) => item.type === 'message');
    if (message && final.output_text.length > 20) {
      expect(events.filter((event) => event.type === 'response.output_text.delta').length).toBeGreaterThan(1);
    }

    // The streamed output can be sent back as input.
    expect(toResponseInputItems(final.output).map((item) => item.type)).toEqual(turn.types);
  });
});

describe('a streamed turn that the client loop checks reject', () => {
  it('answers with a 400 before any event, not with a stream', async () => {
    const { client } = server;
    const first = await firstPause(client);
    const error = await rejectionOf(
      client.responses.create({
        model: MODEL,
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: 'call_nobody', output: 'x' }],
        tools: TOOLS,
        stream: true,
      }),
    );
    expectSdkError(error, { code: 'tool_output_unknown_call', mentions: ['call_nobody'] });
  });
});

// ---------------------------------------------------------------------------------------------
// The seed's client loop, streamed

const seedImplementations: Record<string, (args: { sku: string }) => Promise<unknown>> = {
  get_inventory: async ({ sku }) => ({ sku, available_units: 42 }),
  get_demand: async ({ sku }) => ({ sku, requested_units: 31 }),
};

const SEED_RESULT = '{"sku":"sku_123","available_units":42,"requested_units":31,"shortage_units":0}';

async function runSeedCalls(calls: readonly FunctionCall[]): Promise<ResponseInputItem.FunctionCallOutput[]> {
  return Promise.all(
    calls.map(async (call) => {
      const run = seedImplementations[call.name];
      if (!run) throw new Error(`Unknown tool: ${call.name}`);
      return {
        type: 'function_call_output' as const,
        call_id: call.call_id,
        output: JSON.stringify(await run(JSON.parse(call.arguments))),
        caller: call.caller ?? null,
      };
    }),
  );
}

/** The seed's store: false loop, with `responses.create` swapped for `responses.stream(...).finalResponse()`. */
async function streamedLoopStateless(client: OpenAI): Promise<{ text: string; responses: Response[] }> {
  const responses: Response[] = [];
  const input: ResponseInputItem[] = [{ role: 'user', content: 'Compare inventory with demand for sku_123.' }];
  for (let turn = 0; turn < 10; turn += 1) {
    // The Response of the terminal event, as the wire sent it: finalResponse() adds the SDK's
    // parse fields (`parsed_arguments`, `parsed`), which the API rejects when sent back.
    const stream = client.responses.stream({ model: 'YOUR_MODEL_ID', store: false, input, tools: [...SEED_TOOLS] });
    let completed: Response | undefined;
    stream.on('response.completed', (event) => {
      completed = event.response;
    });
    const response = await stream.finalResponse();
    responses.push(response);
    if (response.status !== 'completed') throw new Error(`Response ended with status ${response.status}`);
    input.push(...toResponseInputItems(completed!.output));
    const calls = response.output.filter((item): item is FunctionCall & { parsed_arguments: unknown } => item.type === 'function_call');
    if (calls.length === 0) {
      if (response.output.some((item) => item.type === 'message')) return { text: response.output_text, responses };
      continue;
    }
    input.push(...(await runSeedCalls(calls)));
  }
  throw new Error('the loop did not end');
}

/** The same loop continuing stored responses with previous_response_id. */
async function streamedLoopStored(client: OpenAI): Promise<{ text: string; responses: Response[] }> {
  const responses: Response[] = [];
  let input: ResponseInputItem[] = [{ role: 'user', content: 'Compare inventory with demand for sku_123.' }];
  let previousResponseId: string | undefined;
  for (let turn = 0; turn < 10; turn += 1) {
    const response = await client.responses
      .stream({ model: 'YOUR_MODEL_ID', input, tools: [...SEED_TOOLS], ...(previousResponseId ? { previous_response_id: previousResponseId } : {}) })
      .finalResponse();
    responses.push(response);
    if (response.status !== 'completed') throw new Error(`Response ended with status ${response.status}`);
    previousResponseId = response.id;
    const calls = response.output.filter((item): item is FunctionCall & { parsed_arguments: unknown } => item.type === 'function_call');
    if (calls.length === 0) {
      if (response.output.some((item) => item.type === 'message')) return { text: response.output_text, responses };
      input = [];
      continue;
    }
    input = await runSeedCalls(calls);
  }
  throw new Error('the loop did not end');
}

it("rejects, as the hosted API does, a store: false loop that resends finalResponse().output with the SDK's parse fields", async () => {
  const input: ResponseInputItem[] = [{ role: 'user', content: 'Compare inventory with demand for sku_123.' }];
  const first = await seedServer.client.responses.stream({ model: 'YOUR_MODEL_ID', store: false, input, tools: [...SEED_TOOLS] }).finalResponse();
  // Resent as the helper returned them: openai 7.x's toResponseInputItems would strip the fields.
  input.push(...(first.output as ResponseInputItem[]));
  const error = await seedServer.client.responses.create({ model: 'YOUR_MODEL_ID', store: false, input, tools: [...SEED_TOOLS] }).then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toMatchObject({ status: 400, code: 'unknown_parameter', param: 'input[2].parsed_arguments' });
  expect((error as Error).message).toBe("400 Unknown parameter: 'input[2].parsed_arguments'.");
});

describe.each([
  ["store: false, resending the terminal event's response", streamedLoopStateless],
  ['store: true, continuing with previous_response_id', streamedLoopStored],
])('the seed client loop over responses.stream() (%s)', (_, loop) => {
  it('reaches the final message with the program result', async () => {
    const { text, responses } = await loop(seedServer.client);
    expect(text).toBe(SEED_RESULT);
    expect(responses.map((response) => response.output.map((item) => item.type))).toEqual([
      ['program', 'function_call', 'function_call'],
      ['program_output', 'message'],
    ]);
    expect(programOutputOf(responses[1]!)).toMatchObject({ status: 'completed', result: SEED_RESULT });
  });
});

// ---------------------------------------------------------------------------------------------
// GET /v1/responses/{id}?stream=true

describe('replaying a stored response with GET /v1/responses/{id}?stream=true', () => {
  let id: string;
  let original: ResponseStreamEvent[];
  beforeAll(async () => {
    const { client } = server;
    const second = await secondPause(client);
    const [b] = functionCallsOf(second);
    const stream = await client.responses.create({ model: MODEL, previous_response_id: second.id, input: [outputFor(b!, 'B')], tools: TOOLS, stream: true });
    original = [];
    for await (const event of stream) original.push(event);
    const terminal = original.at(-1);
    if (terminal?.type !== 'response.completed') throw new Error(`unexpected end of stream: ${terminal?.type}`);
    id = terminal.response.id;
  });

  async function replay(query: { stream: true; starting_after?: number }): Promise<ResponseStreamEvent[]> {
    const events: ResponseStreamEvent[] = [];
    for await (const event of await server.client.responses.retrieve(id, query)) events.push(event);
    return events;
  }

  it('sends the same events, with the same sequence numbers, as the original stream', async () => {
    const replayed = await replay({ stream: true });
    expect(replayed).toStrictEqual(original);
    expectWellFormedStream(replayed, await wireResponse(server.client, id), ['response.created', 'response.in_progress']);
  });

  it('replays every time, identically', async () => {
    expect(await replay({ stream: true })).toStrictEqual(await replay({ stream: true }));
  });

  it.each([
    ['-1 (everything)', () => -1],
    ['0 (after response.created)', () => 0],
    ['1 (after response.in_progress)', () => 1],
    ['the middle of the message', () => Math.floor(original.length / 2)],
    ['the event before the terminal one', () => original.length - 2],
    ['the terminal event (nothing left)', () => original.length - 1],
  ])('with starting_after %s sends only the later events', async (_, after) => {
    const startingAfter = after();
    const replayed = await replay({ stream: true, starting_after: startingAfter });
    expect(replayed).toStrictEqual(original.filter((event) => event.sequence_number > startingAfter));
  });

  it.each([0, 1, 5])(
    'client.responses.stream({response_id, starting_after: %i}) emits the later events and finalResponse() is the stored response',
    async (startingAfter) => {
      const { client } = server;
      const stream = client.responses.stream({ response_id: id, starting_after: startingAfter });
      const events: ResponseStreamEvent[] = [];
      for await (const event of stream) events.push(event);
      expect(events).toStrictEqual(original.filter((event) => event.sequence_number > startingAfter));
      const final = await stream.finalResponse();
      expect(withoutParseFields(final)).toStrictEqual(withoutParseFields(await client.responses.retrieve(id)));
    },
  );

  it('answers 404 response_not_found for an unknown id', async () => {
    expectSdkError(await rejectionOf(server.client.responses.retrieve('resp_unknown', { stream: true })), { code: 'response_not_found' });
  });
});

// ---------------------------------------------------------------------------------------------
// A background response that fails inside its turn

describe('a background response that fails inside its turn', () => {
  let paused: Response;
  // A stand-in that breaks on one input: a fault inside the turn, after the request was queued.
  let faulty: RunningServer;
  beforeAll(async () => {
    paused = await firstPause(server.client);
    faulty = await startServer({
      model: (context) => {
        if (context.lastUserText === 'explode') throw new Error('stand-in bug');
        return undefined;
      },
    });
  });
  afterAll(() => faulty.close());

  async function failedBackground(): Promise<Response> {
    const { client } = faulty;
    const queued = await client.responses.create({ model: MODEL, input: 'explode', background: true });
    expect(queued.status).toBe('queued');
    for (;;) {
      const response = await client.responses.retrieve(queued.id);
      if (response.status !== 'queued' && response.status !== 'in_progress') return response;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('is accepted, then fails with server_error in response.error', async () => {
    const failed = await failedBackground();
    expect(failed.status).toBe('failed');
    expect(failed.error).toEqual({ code: 'server_error', message: 'The emulator failed while running this background response.' });
    expect(failed.output).toEqual([]);
  });

  it('whereas a client-loop mistake is a 400 at once, before anything is queued', async () => {
    const error = await rejectionOf(
      server.client.responses.create({
        model: MODEL,
        previous_response_id: paused.id,
        input: [{ type: 'function_call_output', call_id: 'call_nobody', output: 'x' }],
        tools: TOOLS,
        background: true,
      }),
    );
    expectSdkError(error, { code: 'tool_output_unknown_call', mentions: ['call_nobody'] });
  });

  it('whereas mistakes detected before the turn are a 400 at once, background or not', async () => {
    const { client } = server;
    // An input item the schema rejects (no call_id), and background without store.
    const malformed = await rejectionOf(
      client.responses.create({
        model: MODEL,
        previous_response_id: paused.id,
        input: [{ type: 'function_call_output', output: 'x' } as unknown as ResponseInputItem],
        tools: TOOLS,
        background: true,
      }),
    );
    expect(malformed).toBeInstanceOf(OpenAI.BadRequestError);
    expectSdkError(await rejectionOf(client.responses.create({ model: MODEL, input: 'plain message', background: true, store: false })), {
      code: 'invalid_value',
      param: 'background',
    });
  });

  // On the wire, a failed response's stream is its items, then a flat `error` event, then
  // response.failed. openai 7.x's stream throws an APIError at the `error` event, carrying its
  // code and message: an SDK user sees the failure, not response.failed.
  it('replays as a flat error event followed by response.failed', async () => {
    const { client } = faulty;
    const failed = await failedBackground();
    const raw = await client.responses.retrieve(failed.id, { stream: true }).asResponse();
    const events = sseEvents(await raw.text());
    const wire = await wireResponse(client, failed.id);
    expect(events.map((event) => event.event)).toEqual(['response.created', 'response.queued', 'response.in_progress', 'error', 'response.failed']);
    const data = events.map((event) => event.data as ResponseStreamEvent);
    expectWellFormedStream(data, wire, ['response.created', 'response.queued', 'response.in_progress']);
    const error = data[3]!;
    expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'sequence_number', 'type']);
    const responseError = wire.error as { code: string; message: string };
    expect(error).toStrictEqual({ type: 'error', code: responseError.code, message: responseError.message, param: null, sequence_number: 3 });
    await expectStreamEndsInApiError(await client.responses.retrieve(failed.id, { stream: true }), responseError);
  });

  it('streams the error event then response.failed when created with background and stream', async () => {
    const { client } = faulty;
    const raw = await client.responses.create({ model: MODEL, input: 'explode', background: true, stream: true }, { timeout: 10_000 }).asResponse();
    const events = sseEvents(await raw.text());
    expect(events.map((event) => event.event)).toEqual(['response.created', 'response.queued', 'response.in_progress', 'error', 'response.failed']);
    const data = events.map((event) => event.data as ResponseStreamEvent);
    const terminal = data.at(-1) as Extract<ResponseStreamEvent, { type: 'response.failed' }>;
    const wire = await wireResponse(client, terminal.response.id);
    expectWellFormedStream(data, wire, ['response.created', 'response.queued', 'response.in_progress']);
    const stream = await client.responses.create({ model: MODEL, input: 'explode', background: true, stream: true }, { timeout: 10_000 });
    await expectStreamEndsInApiError(stream, wire.error as { code: string; message: string });
  });

  it('surfaces through the SDK stream helper: the stream ends at the error event and finalResponse() rejects with its APIError', async () => {
    const { client } = faulty;
    const failed = await failedBackground();
    const stream = client.responses.stream({ response_id: failed.id });
    const onError: unknown[] = [];
    stream.on('error', (error) => onError.push(error));
    const events: ResponseStreamEvent[] = [];
    const iteration = await rejectionOf(
      (async () => {
        for await (const event of stream) events.push(event);
      })(),
    );
    expect(events.map((event) => event.type)).toEqual(['response.created', 'response.queued', 'response.in_progress']);
    const rejection = await rejectionOf(stream.finalResponse());
    for (const error of [iteration, rejection, ...onError]) {
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect(error).toMatchObject({ status: undefined, code: failed.error?.code, message: failed.error?.message });
    }
    expect(onError).toHaveLength(1);
  });
});

/** Iterates an SDK stream to its end: it must stop with an APIError carrying the response's error. */
async function expectStreamEndsInApiError(stream: AsyncIterable<ResponseStreamEvent>, expected: { code: string; message: string }): Promise<void> {
  const seen: string[] = [];
  const error = await rejectionOf(
    (async () => {
      for await (const event of stream) seen.push(event.type);
    })(),
  );
  expect(seen).toEqual(['response.created', 'response.queued', 'response.in_progress']);
  expect(error).toBeInstanceOf(OpenAI.APIError);
  expect(error).toMatchObject({ status: undefined, code: expected.code, param: null, message: expected.message });
}
