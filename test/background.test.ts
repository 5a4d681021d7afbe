import { setTimeout as sleep } from 'node:timers/promises';
import type OpenAI from 'openai';
import type { Response, ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamEvent } from '../schemas/stream-events.ts';
import type { ScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { functionCallsOf, programOutputOf } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// `background: true`: queued at once, finished by the server, pollable and cancellable.

type FunctionCall = OpenAI.Responses.ResponseFunctionToolCall;

const MODEL = 'ptc-emulator';
const ANSWER = 'The background answer is ready.';
const PROGRAM = 'const [a, b] = await Promise.all([tools.get_a({}), tools.get_b({})]); text(`${a}+${b}`);';
const SCENARIOS: ScenarioFile = {
  rules: [
    { match: { user: 'program please' }, program: PROGRAM, message: 'Result: {{result}}' },
    { match: { user: 'hello' }, message: ANSWER },
  ],
};
const anyObject = { type: 'object', properties: {}, additionalProperties: true };
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'get_a', parameters: anyObject, strict: false, allowed_callers: ['programmatic'] },
  { type: 'function', name: 'get_b', parameters: anyObject, strict: false, allowed_callers: ['programmatic'] },
  { type: 'programmatic_tool_calling' },
];
const UNFINISHED = new Set(['queued', 'in_progress']);
const TERMINAL_TYPES = new Set(['response.completed', 'response.incomplete', 'response.failed']);
/** The knob that holds a background response before its turn runs (docs/KNOBS.md). */
const DELAY_MS = 3000;

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ scenarios: SCENARIOS });
});
afterAll(() => server.close());

/** Polls with `retrieve` until the response leaves queued / in_progress; every status seen, in order. */
async function pollUntilSettled(client: OpenAI, id: string): Promise<{ response: Response; seen: string[] }> {
  const seen: string[] = [];
  for (;;) {
    const response = await client.responses.retrieve(id);
    const status = String(response.status);
    if (seen.at(-1) !== status) seen.push(status);
    if (!UNFINISHED.has(status)) return { response, seen };
    await sleep(10);
  }
}

/** Statuses only move forward: queued, then in progress, then one final status. */
function expectForwardOnly(seen: readonly string[], final: string): void {
  const order = ['queued', 'in_progress', final];
  expect(seen.at(-1)).toBe(final);
  for (const status of seen) expect(order).toContain(status);
  const ranks = seen.map((status) => order.indexOf(status));
  expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
}

function expectQueued(response: Response): void {
  expect(response.status).toBe('queued');
  expect(response.background).toBe(true);
  expect(response.output).toEqual([]);
  expect(response.completed_at).toBeNull();
  expect(response.error).toBeNull();
  expect(response.usage).toBeUndefined();
}

/** The response as the wire carries it, without the `output_text` the SDK adds to create / retrieve results. */
function wire(response: Response): unknown {
  const { output_text: _outputText, ...rest } = response;
  return JSON.parse(JSON.stringify(rest));
}

describe('background: true', () => {
  it('returns queued at once with no output, then finishes in the background', async () => {
    const { client } = server;
    const queued = await client.responses.create({ model: MODEL, input: 'hello', background: true });
    expectQueued(queued);
    const { response, seen } = await pollUntilSettled(client, queued.id);
    expectForwardOnly(seen, 'completed');
    expect(response.id).toBe(queued.id);
    expect(response.background).toBe(true);
    expect(response.output.map((item) => item.type)).toEqual(['message']);
    expect(response.output_text).toBe(ANSWER);
    expect(response.completed_at).toEqual(expect.any(Number));
    expect(response.usage?.output_tokens).toBeGreaterThan(0);
  });

  it('stays queued while a delay holds its turn back, then completes', async () => {
    const { client } = server;
    const queued = await client.responses.create({ model: MODEL, input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': '1000' } });
    expectQueued(queued);
    const { response, seen } = await pollUntilSettled(client, queued.id);
    expect(seen[0]).toBe('queued');
    expectForwardOnly(seen, 'completed');
    expect(response.output_text).toBe(ANSWER);
  });

  it('with store: false is a 400 naming background', async () => {
    const error = await rejectionOf(server.client.responses.create({ model: MODEL, input: 'hello', background: true, store: false }));
    expectSdkError(error, { code: 'invalid_value', param: 'background', mentions: ['store'] });
  });

  it('runs a program that pauses; once completed, previous_response_id continues it', async () => {
    const { client } = server;
    const queued = await client.responses.create({ model: MODEL, input: 'program please', tools: TOOLS, background: true });
    expectQueued(queued);
    const { response: paused } = await pollUntilSettled(client, queued.id);
    expect(paused.status).toBe('completed');
    expect(paused.output.map((item) => item.type)).toEqual(['program', 'function_call', 'function_call']);
    const outputs: ResponseInputItem[] = functionCallsOf(paused).map((call: FunctionCall) => ({
      type: 'function_call_output',
      call_id: call.call_id,
      output: call.name === 'get_a' ? '1' : '2',
      caller: call.caller ?? null,
    }));

    // Continued in the foreground...
    const finished = await client.responses.create({ model: MODEL, previous_response_id: paused.id, input: outputs, tools: TOOLS });
    expect(finished.output.map((item) => item.type)).toEqual(['program_output', 'message']);
    expect(programOutputOf(finished)).toMatchObject({ status: 'completed', result: '1+2' });
    expect(finished.output_text).toBe('Result: 1+2');
  });

  it('runs a program that pauses; a background continuation completes it too', async () => {
    const { client } = server;
    const { response: paused } = await pollUntilSettled(
      client,
      (await client.responses.create({ model: MODEL, input: 'program please', tools: TOOLS, background: true })).id,
    );
    const outputs: ResponseInputItem[] = functionCallsOf(paused).map((call) => ({
      type: 'function_call_output',
      call_id: call.call_id,
      output: call.name,
      caller: call.caller ?? null,
    }));
    const queued = await client.responses.create({ model: MODEL, previous_response_id: paused.id, input: outputs, tools: TOOLS, background: true });
    expectQueued(queued);
    const { response: finished } = await pollUntilSettled(client, queued.id);
    expect(finished.status).toBe('completed');
    expect(programOutputOf(finished)).toMatchObject({ status: 'completed', result: 'get_a+get_b' });
    expect(finished.previous_response_id).toBe(paused.id);
  });
});

describe('POST /v1/responses/{id}/cancel', () => {
  it('cancels a background response while it waits, and the job does not overwrite the cancellation', async () => {
    const { client } = server;
    const postedAt = Date.now();
    const queued = await client.responses.create({ model: MODEL, input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': String(DELAY_MS) } });
    expectQueued(queued);

    const cancelled = await client.responses.cancel(queued.id);
    expect(cancelled.id).toBe(queued.id);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.output).toEqual([]);
    expect(cancelled.completed_at).toEqual(expect.any(Number));
    expect(wire(await client.responses.retrieve(queued.id))).toStrictEqual(cancelled);

    // Outlive the delay: had the job kept running, it would now have stored a completed response.
    await sleep(Math.max(0, postedAt + DELAY_MS + 500 - Date.now()));
    const later = await client.responses.retrieve(queued.id);
    expect(later.status).toBe('cancelled');
    expect(later.output).toEqual([]);
    expect(wire(later)).toStrictEqual(cancelled);
  });

  it('cancelling a cancelled response again returns it unchanged', async () => {
    const { client } = server;
    const queued = await client.responses.create({ model: MODEL, input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': String(DELAY_MS) } });
    const first = await client.responses.cancel(queued.id);
    expect(await client.responses.cancel(queued.id)).toStrictEqual(first);
  });

  it('a cancelled response replays as a stream ending with one terminal event that says cancelled', async () => {
    const { client } = server;
    const queued = await client.responses.create({ model: MODEL, input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': String(DELAY_MS) } });
    const cancelled = await client.responses.cancel(queued.id);
    const events: ResponseStreamEvent[] = [];
    for await (const event of await client.responses.retrieve(queued.id, { stream: true })) events.push(event);
    for (const event of events) expect(StreamEvent.safeParse(event).success, event.type).toBe(true);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.filter((event) => TERMINAL_TYPES.has(event.type))).toHaveLength(1);
    const terminal = events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.failed' }>;
    expect(TERMINAL_TYPES.has(terminal.type)).toBe(true);
    expect(terminal.response).toStrictEqual(cancelled);
  });

  it('cancelling a finished background response returns it unchanged', async () => {
    const { client } = server;
    const queued = await client.responses.create({ model: MODEL, input: 'hello', background: true });
    const { response: finished } = await pollUntilSettled(client, queued.id);
    expect(finished.status).toBe('completed');
    const cancelled = await client.responses.cancel(queued.id);
    expect(cancelled).toStrictEqual(wire(finished));
    expect(await client.responses.retrieve(queued.id)).toStrictEqual(finished);
  });

  it('cancelling a response created without background is a 400 not_cancellable', async () => {
    const { client } = server;
    const response = await client.responses.create({ model: MODEL, input: 'hello' });
    expectSdkError(await rejectionOf(client.responses.cancel(response.id)), { code: 'not_cancellable', param: 'response_id', mentions: [response.id] });
    expect((await client.responses.retrieve(response.id)).status).toBe('completed');
  });

  it('cancelling an unknown response is a 404 response_not_found', async () => {
    expectSdkError(await rejectionOf(server.client.responses.cancel('resp_nobody')), { code: 'response_not_found', mentions: ['resp_nobody'] });
  });
});

describe('background: true with stream: true', () => {
  it('streams created, queued, in_progress, the items and one terminal event; finalResponse() equals retrieve', async () => {
    const { client } = server;
    const stream = client.responses.stream({ model: MODEL, input: 'hello', background: true }, { timeout: 10_000 });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();

    for (const event of events) expect(StreamEvent.safeParse(event).success, event.type).toBe(true);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.slice(0, 3).map((event) => event.type)).toEqual(['response.created', 'response.queued', 'response.in_progress']);
    expect(events.filter((event) => TERMINAL_TYPES.has(event.type)).map((event) => event.type)).toEqual(['response.completed']);
    expect(events.at(-1)?.type).toBe('response.completed');
    expect(final.background).toBe(true);
    expect(final.output_text).toBe(ANSWER);
    const { output_parsed: _parsed, ...finalWithoutParse } = final;
    const retrieved = await client.responses.retrieve(final.id);
    expect(JSON.parse(JSON.stringify(finalWithoutParse, (key, value: unknown) => (key === 'parsed' ? undefined : value)))).toStrictEqual(
      JSON.parse(JSON.stringify(retrieved)),
    );
  });

  it('GET ?stream=true on a background response that is still running waits and streams it whole', async () => {
    const { client } = server;
    const queued = await client.responses.create({ model: MODEL, input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': '500' } });
    const events: ResponseStreamEvent[] = [];
    for await (const event of await client.responses.retrieve(queued.id, { stream: true })) events.push(event);
    expect(events.map((event) => event.type)).toEqual([
      'response.created',
      'response.queued',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...events.filter((event) => event.type === 'response.output_text.delta').map(() => 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const terminal = events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.completed' }>;
    expect(terminal.response).toStrictEqual(wire(await client.responses.retrieve(queued.id)));
  });
});

describe('background responses when the server closes', () => {
  it('GET ?stream=true waiting on a background response gets its failure at close(), which it does not hold up', async () => {
    // Its own server, with its log read: the test waits for the request to be under way.
    const lines: string[] = [];
    const own = await startServer({ scenarios: SCENARIOS, logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } } });
    const queued = await own.client.responses.create({ model: MODEL, input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': '600000' } });
    const seen: string[] = [];
    const waiting = own.client.responses
      .retrieve(queued.id, { stream: true })
      .then(async (stream) => {
        for await (const event of stream) seen.push(event.type);
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    while (!lines.some((line) => line.includes(`/v1/responses/${queued.id}?stream=true`))) await sleep(10);
    await own.close();
    // The failure the job stored, replayed: the SDK raises the stream's error event.
    expect(await waiting).toMatchObject({ code: 'server_error', message: 'The server shut down before this background response finished.' });
    expect(seen.slice(0, 3)).toEqual(['response.created', 'response.queued', 'response.in_progress']);
  });
});
