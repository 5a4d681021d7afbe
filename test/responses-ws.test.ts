import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponsesStreamMessage } from 'openai/resources/responses/internal-base';
import type {
  Response,
  ResponseErrorEvent,
  ResponseInputItem,
  ResponsesClientEvent,
  ResponsesServerEvent,
  ResponseStreamEvent,
} from 'openai/resources/responses/responses';
import { ResponsesWS, type ResponsesWSClientOptions } from 'openai/resources/responses/ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CreateResponseRequest } from '../schemas/request.ts';
import { buildServer } from '../server/app.ts';
import { seededRandom } from '../server/engine/knobs.ts';
import type { ScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import type { SocketErrorEvent } from '../server/api/responses/responses-socket.ts';
import { REMEMBERED_RESPONSES, SocketSteering } from '../server/api/responses/socket-steering.ts';
import { FIXED_LIMITS } from '../schemas/fixed-limits.ts';
import { rejectionOf } from './support/api-errors.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startTestRedis } from './support/redis.ts';
import { startServer, type RunningServer } from './support/server.ts';

// WebSocket mode through the SDK's own ResponsesWS: `response.create` in, the events of the
// same request's Server-Sent Events out, errors as `error` events on a socket that stays open.

// Compile-time: the error event is one the SDK types, and a client event's body is a create body.
type IsAssignable<From, To> = [From] extends [To] ? true : false;
/** `response.create`: the client event that asks for a response (`response.steer` steers one). */
type CreateEvent = Extract<ResponsesClientEvent, { type: 'response.create' }>;
const errorEventFits: IsAssignable<SocketErrorEvent, ResponseErrorEvent> = true;
const clientEventFits: IsAssignable<Omit<CreateEvent, 'type'>, Partial<Record<keyof CreateResponseRequest, unknown>>> = true;
void [errorEventFits, clientEventFits];

const MODEL = 'ptc-emulator';
/**
 * A seed for `latency_jitter_ms: 60_000` (the knob's pauses are drawn from it) whose first pause,
 * before response.created, is under 50 ms and whose second, before response.in_progress, is over
 * 50 s: a steer sent on response.created reaches that response while its events are being sent
 * (the test would time out before the pause ends).
 */
const SLOW_SECOND_EVENT_SEED = (() => {
  for (let seed = 0; ; seed++) {
    const draw = seededRandom(seed);
    if (draw() * 60_000 < 50 && draw() * 60_000 > 50_000) return seed;
  }
})();
const SCENARIOS: ScenarioFile = {
  rules: [
    { match: { user: 'steer me while I stream' }, knobs: { latency_jitter_ms: 60_000, seed: SLOW_SECOND_EVENT_SEED }, message: 'A first answer.' },
    { match: { user: 'Now in French' }, message: 'Voilà.' },
    { match: { user: 'plain message' }, message: 'Here is a plain answer, long enough to travel as several deltas over the stream.' },
    { match: { user: 'with reasoning' }, reasoning: 'The user wants a short answer; one sentence will do.', message: 'Short answer.' },
    {
      match: { user: 'two pauses' },
      program: 'const a = await tools.get_a({ step: 1 }); const b = await tools.get_b({ step: 2, a }); text(`${a} then ${b}`);',
      message: 'The program said: {{result}}',
    },
  ],
};
const TOOLS = programTools('get_a', 'get_b');
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** A ResponsesWS whose messages a test reads in order; every one opened is closed after its test. */
class TestSocket {
  readonly ws: ResponsesWS;
  readonly #messages: AsyncIterableIterator<ResponsesStreamMessage>;

  constructor(client: OpenAI, options?: ResponsesWSClientOptions) {
    this.ws = new ResponsesWS(client, options);
    // Errors reach the test through the iterator; this listener keeps a late one (after the
    // iterator ended) from becoming an unhandled rejection inside the SDK.
    this.ws.on('error', () => {});
    this.#messages = this.ws.stream();
    opened.push(this);
  }

  /** The next message other than the socket's lifecycle (`connecting`, `open`). */
  async next(timeoutMs = 10_000): Promise<ResponsesStreamMessage> {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no message on the socket within ${timeoutMs} ms`)), timeoutMs);
      });
      const result = await Promise.race([this.#messages.next(), timeout]).finally(() => clearTimeout(timer));
      if (result.done) throw new Error('the socket closed');
      if (result.value.type === 'connecting' || result.value.type === 'open') continue;
      return result.value;
    }
  }

  /** Sends a response.create and reads its events up to the terminal one. */
  async create(body: Omit<CreateEvent, 'type'>): Promise<ResponsesServerEvent[]> {
    this.ws.send({ type: 'response.create', ...body });
    return this.events();
  }

  /** The events of the next request, up to its terminal event. */
  async events(): Promise<ResponsesServerEvent[]> {
    const events: ResponsesServerEvent[] = [];
    for (;;) {
      const message = await this.next();
      if (message.type !== 'message') throw new Error(`expected an event, got ${JSON.stringify(message).slice(0, 500)}`);
      events.push(message.message);
      if (TERMINAL.has(message.message.type)) return events;
    }
  }

  /** The error event the next request is answered with. */
  async error(): Promise<SocketErrorEvent> {
    const message = await this.next();
    if (message.type !== 'error') throw new Error(`expected an error, got ${JSON.stringify(message).slice(0, 500)}`);
    return message.error.error as unknown as SocketErrorEvent;
  }

  /** Waits for the socket to close (after closing it, or the server's doing). */
  async closed(): Promise<{ code: number; reason: string }> {
    for (;;) {
      const message = await this.next();
      if (message.type === 'close') return { code: message.code, reason: message.reason };
    }
  }

  get isOpen(): boolean {
    return this.ws.socket.readyState === 1;
  }
}

const opened: TestSocket[] = [];
afterEach(async () => {
  // However the test ended, no socket stays open.
  for (const socket of opened.splice(0)) {
    if (socket.ws.socket.readyState === 0 || socket.ws.socket.readyState === 1) {
      const closed = new Promise((resolve) => socket.ws.socket.on('close', resolve));
      if (socket.ws.socket.readyState === 1) socket.ws.close();
      else socket.ws.socket.platformSocket.terminate();
      await closed;
    }
  }
});

/** The terminal event's Response. */
function finalResponse(events: readonly ResponsesServerEvent[]): Response {
  const last = events.at(-1)!;
  if (!('response' in last) || !TERMINAL.has(last.type)) throw new Error(`no terminal event: ${last.type}`);
  return last.response;
}

/** The same request's Server-Sent Events, through the SDK. */
async function sseEvents(client: OpenAI, body: Omit<CreateEvent, 'type'>): Promise<ResponseStreamEvent[]> {
  const events: ResponseStreamEvent[] = [];
  for await (const event of await client.responses.create({ ...(body as OpenAI.Responses.ResponseCreateParamsNonStreaming), stream: true })) events.push(event);
  return events;
}

/** What an event says apart from the ids, times and seals that differ between two responses. */
function shapeOf(event: ResponsesServerEvent | ResponseStreamEvent): unknown {
  const { type, sequence_number } = event as { type: string; sequence_number: number };
  const delta = 'delta' in event ? event.delta : undefined;
  const item = 'item' in event ? (event.item as { type: string; status?: string }) : undefined;
  return { type, sequence_number, delta, item: item && { type: item.type, status: item.status } };
}

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ scenarios: SCENARIOS });
});
afterAll(async () => {
  await server.close();
});

describe('WebSocket mode', () => {
  it('connects at the Responses URL and answers response.create with the events SSE sends for the same request', async () => {
    const socket = new TestSocket(server.client);
    expect(socket.ws.url.href).toBe(`${server.baseURL.replace(/^http/, 'ws')}/responses`);
    const bodies: Omit<CreateEvent, 'type'>[] = [
      { model: MODEL, input: 'plain message', tools: TOOLS },
      { model: MODEL, input: 'with reasoning', tools: TOOLS },
      { model: MODEL, input: 'two pauses', tools: TOOLS },
      // Cut short: response.incomplete is its terminal event.
      { model: MODEL, input: 'plain message', max_output_tokens: 4 },
    ];
    const terminals: string[] = [];
    for (const body of bodies) {
      const overSocket = await socket.create(body);
      terminals.push(overSocket.at(-1)!.type);
      const overSse = await sseEvents(server.client, body);
      expect(overSocket.map(shapeOf)).toEqual(overSse.map(shapeOf));
      expect(overSocket.map((event) => event.sequence_number)).toEqual(overSocket.map((_, index) => index));
      expect(overSocket[0]!.type).toBe('response.created');
      expect(overSocket.filter((event) => TERMINAL.has(event.type))).toHaveLength(1);
      // The terminal event carries the Response the server stored.
      const response = finalResponse(overSocket);
      expect(JSON.parse(JSON.stringify(await server.client.responses.retrieve(response.id)))).toMatchObject(
        JSON.parse(JSON.stringify({ ...response, output_text: undefined })),
      );
    }
    expect(terminals).toEqual(['response.completed', 'response.completed', 'response.completed', 'response.incomplete']);
  });

  it('serves the requests of one socket one after another, in the order they were sent', async () => {
    const socket = new TestSocket(server.client);
    // Sent together, before the first is answered (the SDK queues them until the socket opens).
    for (const input of ['plain message', 'with reasoning', 'plain message']) socket.ws.send({ type: 'response.create', model: MODEL, input });
    const turns = [await socket.events(), await socket.events(), await socket.events()];
    expect(turns.map((events) => finalResponse(events).output.map((item) => item.type))).toEqual([['message'], ['reasoning', 'message'], ['message']]);
    for (const events of turns) expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
  });

  it('continues a paused program on the same socket with previous_response_id', async () => {
    const socket = new TestSocket(server.client);
    const first = finalResponse(
      await socket.create({ model: MODEL, input: inlineProgram('const a = await tools.get_a({}); text(`got ${a}`);'), tools: TOOLS }),
    );
    const [call] = functionCallsOf(first);
    expect(call?.caller).toMatchObject({ type: 'program' });
    const second = finalResponse(
      await socket.create({
        model: MODEL,
        previous_response_id: first.id,
        tools: TOOLS,
        input: [{ type: 'function_call_output', call_id: call!.call_id, output: '42', caller: call!.caller ?? null }],
      }),
    );
    expect(second.status).toBe('completed');
    expect(programOutputOf(second)?.result).toBe('got 42');
  });

  it('continues a paused program on the same socket with store: false, the client resending every item', async () => {
    const socket = new TestSocket(server.client);
    const user: ResponseInputItem = {
      role: 'user',
      content: inlineProgram('const [a, b] = await Promise.all([tools.get_a({}), tools.get_b({})]); text(a + b);'),
    };
    const first = finalResponse(await socket.create({ model: MODEL, store: false, input: [user], tools: TOOLS }));
    const calls = functionCallsOf(first);
    expect(calls).toHaveLength(2);
    const outputs: ResponseInputItem[] = calls.map((call, index) => ({
      type: 'function_call_output',
      call_id: call.call_id,
      output: `<${index}>`,
      caller: call.caller ?? null,
    }));
    const second = finalResponse(
      await socket.create({ model: MODEL, store: false, input: [user, ...toResponseInputItems(first.output), ...outputs], tools: TOOLS }),
    );
    expect(programOutputOf(second)?.result).toBe('<0><1>');
    // Nothing was stored.
    await expect(rejectionOf(server.client.responses.retrieve(second.id))).resolves.toMatchObject({ status: 404 });
  });

  it('continues a store: false response by previous_response_id on the socket that made it, sending only the new items', async () => {
    const socket = new TestSocket(server.client);
    const first = finalResponse(await socket.create({ model: MODEL, store: false, input: 'two pauses', tools: TOOLS }));
    const [a] = functionCallsOf(first);
    const second = finalResponse(
      await socket.create({
        model: MODEL,
        store: false,
        previous_response_id: first.id,
        tools: TOOLS,
        input: [{ type: 'function_call_output', call_id: a!.call_id, output: 'A', caller: a!.caller ?? null }],
      }),
    );
    const [b] = functionCallsOf(second);
    expect(JSON.parse(b!.arguments)).toEqual({ step: 2, a: 'A' });
    const answerB: ResponseInputItem[] = [{ type: 'function_call_output', call_id: b!.call_id, output: 'B', caller: b!.caller ?? null }];
    // Another socket holds nothing of it, and neither does the store.
    const other = new TestSocket(server.client);
    other.ws.send({ type: 'response.create', model: MODEL, store: false, previous_response_id: second.id, input: answerB, tools: TOOLS });
    expect(await other.error()).toMatchObject({ code: 'previous_response_not_found', param: 'previous_response_id' });
    // A store: true request may not continue it: its response could not be continued from the store.
    socket.ws.send({ type: 'response.create', model: MODEL, previous_response_id: second.id, input: answerB, tools: TOOLS });
    expect(await socket.error()).toMatchObject({ code: 'previous_response_not_found' });
    // The socket still holds it after those errors.
    const third = finalResponse(await socket.create({ model: MODEL, store: false, previous_response_id: second.id, tools: TOOLS, input: answerB }));
    expect(programOutputOf(third)?.result).toBe('A then B');
    expect(third.previous_response_id).toBe(second.id);
    // Only the latest response is held.
    socket.ws.send({ type: 'response.create', model: MODEL, store: false, previous_response_id: first.id, input: 'again', tools: TOOLS });
    expect(await socket.error()).toMatchObject({ code: 'previous_response_not_found' });
  });

  it('holds a store: false response only while its conversation fits in one request (PTC_MAX_INPUT_ITEMS)', async () => {
    const small = await startServer({ scenarios: SCENARIOS, config: { maxInputItems: 4 } });
    try {
      const socket = new TestSocket(small.client);
      // user message + program + call: 3 items, held.
      const first = finalResponse(
        await socket.create({ model: MODEL, store: false, input: inlineProgram('text(await tools.get_a({}) + await tools.get_b({}))'), tools: TOOLS }),
      );
      const [a] = functionCallsOf(first);
      // + output, call: 5 items, over the bound: not held.
      const second = finalResponse(
        await socket.create({
          model: MODEL,
          store: false,
          previous_response_id: first.id,
          tools: TOOLS,
          input: [{ type: 'function_call_output', call_id: a!.call_id, output: '1', caller: a!.caller ?? null }],
        }),
      );
      const [b] = functionCallsOf(second);
      socket.ws.send({
        type: 'response.create',
        model: MODEL,
        store: false,
        previous_response_id: second.id,
        tools: TOOLS,
        input: [{ type: 'function_call_output', call_id: b!.call_id, output: '2', caller: b!.caller ?? null }],
      });
      expect(await socket.error()).toMatchObject({ code: 'previous_response_not_found' });
    } finally {
      await small.close();
    }
  });

  it('answers a request that fails with an error event carrying the HTTP error, and serves the next request on the same socket', async () => {
    const socket = new TestSocket(server.client);
    const cases: { body: Record<string, unknown> }[] = [
      { body: { model: MODEL, input: 'plain message', bogus: 1 } },
      { body: { model: MODEL, input: 'plain message', previous_response_id: 'resp_nowhere' } },
      { body: { input: 'plain message' } },
    ];
    for (const { body } of cases) {
      socket.ws.send({ type: 'response.create', ...body } as ResponsesClientEvent);
      const event = await socket.error();
      const http = (await rejectionOf(server.client.responses.create(body as never))) as InstanceType<typeof OpenAI.APIError>;
      const envelope = http.error as { code: string; message: string; param: string | null; type: string };
      expect(event).toEqual({
        type: 'error',
        sequence_number: 0,
        code: envelope.code,
        message: envelope.message,
        param: envelope.param,
        status: http.status,
        error: envelope,
      });
      expect(socket.isOpen).toBe(true);
    }
    expect(finalResponse(await socket.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
  });

  it('answers a message that is not JSON, not an object, or not a response.create with an error event too', async () => {
    const socket = new TestSocket(server.client);
    const sent: [string | Uint8Array, Partial<SocketErrorEvent>][] = [
      ['{"type": "response.create",', { code: 'invalid_json' }],
      ['', { code: 'invalid_json' }],
      ['[1, 2]', { code: 'invalid_json' }],
      ['{"type": "response.create", "__proto__": {"model": "m"}}', { code: 'invalid_json' }],
      [JSON.stringify({ type: 'response.cancel', response_id: 'resp_x' }), { code: 'invalid_value', param: 'type' }],
      [JSON.stringify({ model: MODEL }), { code: 'invalid_value', param: 'type' }],
      [new TextEncoder().encode(JSON.stringify({ type: 'response.create', model: MODEL })), { code: 'invalid_json' }],
      [JSON.stringify({ type: 'response.create', model: MODEL, background: true }), { code: 'invalid_value', param: 'background' }],
    ];
    for (const [data, expected] of sent) {
      socket.ws.sendRaw(data);
      expect(await socket.error()).toMatchObject({ type: 'error', status: 400, ...expected });
    }
    expect(finalResponse(await socket.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
  });

  it('parses a large message beside the loop, as a large body is: refused for the same faults, and taken in the order messages came', async () => {
    const socket = new TestSocket(server.client);
    // Past the 64 KiB at which a body is parsed in the JSON thread.
    const filler = 'x'.repeat(100_000);
    const large = (extra: string) => `{"type": "response.create", "model": "${MODEL}", "instructions": "${filler}"${extra}}`;
    const faults: [string, Partial<SocketErrorEvent>, string][] = [
      [large(', "input": '), { code: 'invalid_json' }, 'could not parse'],
      [large(`, "input": ${'['.repeat(200)}${']'.repeat(200)}`), { code: 'invalid_json' }, 'nests deeper than 128 levels'],
      [large(', "metadata": {"__proto__": {"x": "y"}}'), { code: 'invalid_json' }, 'could not parse'],
      [
        large(`, "metadata": ${JSON.stringify(Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`k${index}`, 'v'])))}`),
        { code: 'invalid_value', param: 'metadata' },
        'at most 16 keys',
      ],
    ];
    for (const [data, expected, mentions] of faults) {
      socket.ws.sendRaw(data);
      const event = await socket.error();
      expect(event).toMatchObject({ type: 'error', status: 400, ...expected });
      expect(event.message).toContain(mentions);
    }
    // A large request then a small one sent at once: answered in that order.
    socket.ws.sendRaw(large(', "input": "first", "metadata": {"n": "1"}'));
    socket.ws.sendRaw(JSON.stringify({ type: 'response.create', model: MODEL, input: 'second', metadata: { n: '2' } }));
    const answered = [await socket.events(), await socket.events()].map((events) => {
      const terminal = events.at(-1) as Extract<ResponsesServerEvent, { type: 'response.completed' }>;
      return terminal.response.metadata?.n;
    });
    expect(answered).toEqual(['1', '2']);
  });

  it("echoes a request's stream_id on each of its events, error events included (openai 7.x lanes)", async () => {
    const socket = new TestSocket(server.client);
    const first = await socket.create({ model: MODEL, input: 'plain message', stream_id: 'lane-a' });
    expect(first.length).toBeGreaterThan(3);
    expect(first.map((event) => (event as { stream_id?: string }).stream_id)).toEqual(first.map(() => 'lane-a'));
    const second = await socket.create({ model: MODEL, input: 'plain message', stream_id: 'lane-b' });
    expect(new Set(second.map((event) => (event as { stream_id?: string }).stream_id))).toEqual(new Set(['lane-b']));
    // Without one, events carry none.
    const plain = await socket.create({ model: MODEL, input: 'plain message' });
    expect(plain.some((event) => 'stream_id' in event)).toBe(false);
    socket.ws.send({ type: 'response.create', model: MODEL, input: 'plain message', stream_id: 'lane-c', background: true });
    expect(await socket.error()).toMatchObject({ type: 'error', code: 'invalid_value', param: 'background', stream_id: 'lane-c' });
    // A body the schema refuses is answered on its lane too.
    socket.ws.sendRaw(JSON.stringify({ type: 'response.create', input: 'no model', stream_id: 'lane-d' }));
    expect(await socket.error()).toMatchObject({ type: 'error', param: 'model', stream_id: 'lane-d' });
  });

  it.each([true, false])(
    'generate: false (store: %s) prepares a response with no output, which the next turn continues by previous_response_id',
    async (store) => {
      const socket = new TestSocket(server.client);
      const prepared = finalResponse(await socket.create({ model: MODEL, input: 'plain message', store, generate: false }));
      expect(prepared).toMatchObject({ status: 'completed', output: [] });
      expect(prepared.usage?.output_tokens).toBe(0);
      const answered = finalResponse(await socket.create({ model: MODEL, previous_response_id: prepared.id, store }));
      expect(answered.output).toMatchObject([
        { type: 'message', content: [{ text: 'Here is a plain answer, long enough to travel as several deltas over the stream.' }] },
      ]);
    },
  );

  it('generate: false with the output a paused program waits on resumes nothing; the next turn resumes it', async () => {
    const socket = new TestSocket(server.client);
    const paused = finalResponse(await socket.create({ model: MODEL, input: 'two pauses', tools: TOOLS }));
    const call = paused.output.find((item) => item.type === 'function_call')!;
    const output = { type: 'function_call_output' as const, call_id: call.call_id, output: 'A', caller: call.caller! };
    const prepared = finalResponse(await socket.create({ model: MODEL, previous_response_id: paused.id, input: [output], tools: TOOLS, generate: false }));
    expect(prepared.output).toEqual([]);
    const resumed = finalResponse(await socket.create({ model: MODEL, previous_response_id: prepared.id, tools: TOOLS }));
    expect(resumed.output.map((item) => item.type)).toEqual(['function_call']);
    expect(resumed.output[0]).toMatchObject({ name: 'get_b', arguments: '{"step":2,"a":"A"}' });
  });

  it('refuses a generate that is not a boolean, and a stream_id that is not a string', async () => {
    const socket = new TestSocket(server.client);
    socket.ws.sendRaw(JSON.stringify({ type: 'response.create', model: MODEL, input: 'plain message', generate: 'no' }));
    expect(await socket.error()).toMatchObject({ type: 'error', status: 400, code: 'invalid_type', param: 'generate' });
    socket.ws.sendRaw(JSON.stringify({ type: 'response.create', model: MODEL, input: 'plain message', stream_id: 7 }));
    expect(await socket.error()).toMatchObject({
      type: 'error',
      status: 400,
      code: 'invalid_type',
      param: 'stream_id',
      message: expect.stringContaining('got a number'),
    });
    // Copied into every event of its request, a lane's name is bounded.
    socket.ws.send({ type: 'response.create', model: MODEL, input: 'plain message', stream_id: 'x'.repeat(257) });
    expect(await socket.error()).toMatchObject({
      type: 'error',
      status: 400,
      code: 'invalid_value',
      param: 'stream_id',
      message: expect.stringContaining('257 characters'),
    });
    expect(finalResponse(await socket.create({ model: MODEL, input: 'plain message', generate: true })).status).toBe('completed');
  });

  it('refuses a bad API key at the upgrade, which the SDK reports as an error and a closed socket', async () => {
    const guarded = await startServer({ scenarios: SCENARIOS, config: { apiKey: 'the-key' } });
    try {
      const refused = new TestSocket(new OpenAI({ apiKey: 'not-the-key', baseURL: guarded.baseURL }));
      const message = await refused.next();
      expect(message.type).toBe('error');
      expect(message.type === 'error' && message.error.message).toContain('401');
      expect((await refused.closed()).code).toBe(1006);
      const journal = (await guarded.client.get('/emulator/journal')) as { data: { method: string; path: string; status: number; error?: { code: string } }[] };
      expect(journal.data[0]).toMatchObject({ method: 'GET', path: '/v1/responses', status: 401, error: { code: 'invalid_api_key' } });
      // The right key gets its socket.
      const accepted = new TestSocket(guarded.client);
      expect(finalResponse(await accepted.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
    } finally {
      await guarded.close();
    }
  });
});

/** The next event on the socket that is not part of a response's stream: a steering event. */
type SteerEventOnSocket = Extract<ResponsesServerEvent, { type: `response.steer.${string}` }>;

/** Reads events until `done` says all that is wanted has come; each event as it came. */
async function readEvents(socket: TestSocket, done: (events: readonly ResponsesServerEvent[]) => boolean): Promise<ResponsesServerEvent[]> {
  const events: ResponsesServerEvent[] = [];
  while (!done(events)) {
    const message = await socket.next();
    if (message.type !== 'message') throw new Error(`expected an event, got ${JSON.stringify(message).slice(0, 500)}`);
    events.push(message.message);
  }
  return events;
}

async function nextSteerEvent(socket: TestSocket): Promise<SteerEventOnSocket> {
  const message = await socket.next();
  if (message.type !== 'message' || !message.message.type.startsWith('response.steer.'))
    throw new Error(`expected a steering event, got ${JSON.stringify(message).slice(0, 500)}`);
  return message.message as SteerEventOnSocket;
}

describe('WebSocket mode: steering (response.steer)', () => {
  it('steers a response whose program waits on two calls: accepted, pending with the calls owed, committed before the outputs of the continuation', async () => {
    const seen: { phase: string; lastUserText: string }[] = [];
    const steered = await startServer({
      model: (context) => {
        seen.push({ phase: context.phase, lastUserText: context.lastUserText });
        if (context.phase === 'user_turn') {
          return { type: 'program', code: 'const [a, b] = await Promise.all([tools.get_a({}), tools.get_b({})]); text(`${a} and ${b}`);' };
        }
        if (context.phase === 'after_program') return { type: 'message', text: `${context.program!.result}; asked: ${context.lastUserText}` };
        return undefined;
      },
    });
    try {
      // Paced, so that the steer (sent on response.created) usually arrives while the events are
      // sent; arriving after them, it finds the response waiting on its calls: the same events.
      const socket = new TestSocket(steered.client, { headers: { 'x-ptc-event-latency-ms': '5' } });
      const lane = 'lane-7';
      const steerInput = [{ type: 'message' as const, role: 'user' as const, content: 'Also say it in French.' }];
      socket.ws.send({ type: 'response.create', model: MODEL, input: 'Look both up.', tools: TOOLS, stream_id: lane });
      const created = await socket.next();
      if (created.type !== 'message' || created.message.type !== 'response.created')
        throw new Error(`expected response.created, got ${JSON.stringify(created)}`);
      const firstId = created.message.response.id;
      socket.ws.send({ type: 'response.steer', previous_response_id: firstId, input: steerInput });
      const events = [
        created.message,
        ...(await readEvents(
          socket,
          (read) => read.some((event) => event.type === 'response.steer.pending') && read.some((event) => TERMINAL.has(event.type)),
        )),
      ];

      const types = events.map((event) => event.type);
      const terminal = types.indexOf('response.completed');
      const accepted = events.find((event) => event.type === 'response.steer.accepted');
      const pending = events.find((event) => event.type === 'response.steer.pending');
      expect(types.filter((type) => type.startsWith('response.steer.'))).toEqual(['response.steer.accepted', 'response.steer.pending']);
      // Pending comes after response.completed: the response ended owing its program's two calls.
      expect(types.indexOf('response.steer.pending')).toBeGreaterThan(terminal);
      const first = finalResponse(events.filter((event) => !event.type.startsWith('response.steer.')));
      expect(first.id).toBe(firstId);
      const calls = functionCallsOf(first);
      expect(calls.map((call) => call.name)).toEqual(['get_a', 'get_b']);
      if (accepted?.type !== 'response.steer.accepted' || pending?.type !== 'response.steer.pending') throw new Error('no steering events');
      expect(accepted).toEqual({
        type: 'response.steer.accepted',
        sequence_number: 0,
        steer: { id: expect.stringMatching(/^steer_/), previous_response_id: firstId },
        stream_id: lane,
      });
      expect(pending).toEqual({
        type: 'response.steer.pending',
        sequence_number: 0,
        reason: 'waiting_for_required_input',
        // The stubs carry the calls' `caller` as well (an extension): filled in, they are the outputs a program's calls need.
        required_input: calls.map((call) => ({ type: 'function_call_output', call_id: call.call_id, name: call.name, caller: call.caller })),
        steer: accepted.steer,
        stream_id: lane,
      });
      // The stand-in has not seen the steering input yet.
      expect(seen.map((context) => context.lastUserText)).toEqual(['Look both up.']);

      // One explicit continuation, the stubs filled in with the results: the queued input goes before them.
      const outputs = pending.required_input.flatMap((stub) =>
        stub.type === 'function_call_output' ? [{ ...stub, output: stub.name === 'get_a' ? 'apples' : 'bread' }] : [],
      );
      const continued = await socket.create({ model: MODEL, previous_response_id: firstId, tools: TOOLS, input: outputs, stream_id: lane });
      const second = finalResponse(continued);
      expect(continued.every((event) => (event as { stream_id?: string }).stream_id === lane)).toBe(true);
      expect(programOutputOf(second)?.result).toBe('apples and bread');
      const answer = second.output.find((item) => item.type === 'message');
      expect(answer?.type === 'message' && answer.content.map((part) => (part.type === 'output_text' ? part.text : '')).join('')).toBe(
        'apples and bread; asked: Also say it in French.',
      );
      expect(seen.at(-1)).toEqual({ phase: 'after_program', lastUserText: 'Also say it in French.' });
      const inputItems = await steered.client.responses.inputItems.list(second.id, { order: 'asc' });
      expect(inputItems.data.map((item) => item.type)).toEqual(['message', 'function_call_output', 'function_call_output']);
      expect(inputItems.data[0]).toMatchObject({ role: 'user', content: [{ type: 'input_text', text: 'Also say it in French.' }] });

      // Continued, the first response takes no more steering; the second completed owing nothing.
      socket.ws.send({ type: 'response.steer', previous_response_id: firstId, input: 'More?' });
      expect(await nextSteerEvent(socket)).toMatchObject({ type: 'response.steer.failed', error: { code: 'response_not_active' }, stream_id: lane });
      socket.ws.send({ type: 'response.steer', previous_response_id: second.id, input: 'More?' });
      expect(await nextSteerEvent(socket)).toEqual({
        type: 'response.steer.failed',
        sequence_number: 0,
        error: { type: 'invalid_request_error', code: 'response_already_completed', message: expect.stringContaining('waits on no tool output') },
        steer: { input: 'More?', previous_response_id: second.id },
        stream_id: lane,
      });
    } finally {
      await steered.close();
    }
  });

  it('steered while its events are sent, a response owing nothing sends the rest at once, and an automatic successor commits the input', async () => {
    const socket = new TestSocket(server.client);
    const lane = 'lane-s';
    socket.ws.send({
      type: 'response.create',
      model: MODEL,
      input: 'steer me while I stream',
      instructions: 'Be brief.',
      metadata: { run: 'steered' },
      stream_id: lane,
    });
    const created = await socket.next();
    if (created.type !== 'message' || created.message.type !== 'response.created') throw new Error(`expected response.created, got ${JSON.stringify(created)}`);
    const steeredId = created.message.response.id;
    // The next event of that response comes after a pause of over 50 s: the steer is read before it.
    socket.ws.send({ type: 'response.steer', previous_response_id: steeredId, input: 'Now in French.' });
    const events = [created.message, ...(await readEvents(socket, (read) => read.filter((event) => event.type === 'response.completed').length === 2))];
    expect(events[1]).toEqual({
      type: 'response.steer.accepted',
      sequence_number: 0,
      steer: { id: expect.stringMatching(/^steer_/), previous_response_id: steeredId },
      stream_id: lane,
    });
    expect(events.every((event) => (event as { stream_id?: string }).stream_id === lane)).toBe(true);
    const split = events.findIndex((event) => event.type === 'response.completed') + 1;
    const steered = finalResponse(events.slice(0, split).filter((event) => event.type !== 'response.steer.accepted'));
    const successorEvents = events.slice(split);
    const successor = finalResponse(successorEvents);
    // The steered response was not cut: it completed as it was made.
    expect(steered).toMatchObject({ id: steeredId, status: 'completed', incomplete_details: null });
    expect(
      steered.output.map((item) => item.type === 'message' && item.content.map((part) => (part.type === 'output_text' ? part.text : '')).join('')),
    ).toEqual(['A first answer.']);
    // Its successor: created automatically, with its settings, continuing it with the queued input.
    expect(successorEvents[0]?.type).toBe('response.created');
    expect(successorEvents.map((event) => event.sequence_number)).toEqual(successorEvents.map((_, index) => index));
    expect(successor).toMatchObject({ previous_response_id: steeredId, instructions: 'Be brief.', metadata: { run: 'steered' }, status: 'completed' });
    expect(
      successor.output.map((item) => item.type === 'message' && item.content.map((part) => (part.type === 'output_text' ? part.text : '')).join('')),
    ).toEqual(['Voilà.']);
    const committed = await server.client.responses.inputItems.list(successor.id);
    expect(committed.data).toMatchObject([{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Now in French.' }] }]);
    // Its input committed, the steered response takes no more; the socket serves on.
    socket.ws.send({ type: 'response.steer', previous_response_id: steeredId, input: 'And in German.' });
    expect(await nextSteerEvent(socket)).toMatchObject({ type: 'response.steer.failed', error: { code: 'response_already_completed' }, stream_id: lane });
    expect(finalResponse(await socket.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
  });

  it('a continuation refused keeps the steering queued for the next one', async () => {
    const socket = new TestSocket(server.client);
    const first = finalResponse(await socket.create({ model: MODEL, input: 'two pauses', tools: TOOLS }));
    const [a] = functionCallsOf(first);
    socket.ws.send({ type: 'response.steer', previous_response_id: first.id, input: 'Steer this.' });
    expect((await nextSteerEvent(socket)).type).toBe('response.steer.accepted');
    expect(await nextSteerEvent(socket)).toMatchObject({
      type: 'response.steer.pending',
      required_input: [{ type: 'function_call_output', call_id: a!.call_id, name: 'get_a', caller: a!.caller }],
    });
    // Without the output the call needs: refused, and the steering waits on.
    socket.ws.send({ type: 'response.create', model: MODEL, previous_response_id: first.id, tools: TOOLS, input: [] });
    expect(await socket.error()).toMatchObject({ status: 400 });
    const second = finalResponse(
      await socket.create({
        model: MODEL,
        previous_response_id: first.id,
        tools: TOOLS,
        input: [{ type: 'function_call_output', call_id: a!.call_id, output: 'A', caller: a!.caller ?? null }],
      }),
    );
    const items = await server.client.responses.inputItems.list(second.id, { order: 'asc' });
    expect(items.data.map((item) => item.type)).toEqual(['message', 'function_call_output']);
    expect(items.data[0]).toMatchObject({ role: 'user', content: [{ type: 'input_text', text: 'Steer this.' }] });
  });

  it('refuses what it cannot steer with response.steer.failed, returning the input, and goes on serving', async () => {
    const socket = new TestSocket(server.client);
    const failed = async (event: Record<string, unknown>): Promise<SteerEventOnSocket> => {
      socket.ws.sendRaw(JSON.stringify(event));
      const answer = await nextSteerEvent(socket);
      expect(answer.type).toBe('response.steer.failed');
      return answer;
    };
    const done = finalResponse(await socket.create({ model: MODEL, input: 'plain message', stream_id: 'done-lane' }));
    const input = [{ type: 'message' as const, role: 'user' as const, content: 'and also this' }];
    // Completed, owing nothing: too late.
    expect(await failed({ type: 'response.steer', previous_response_id: done.id, input })).toEqual({
      type: 'response.steer.failed',
      sequence_number: 0,
      error: { type: 'invalid_request_error', code: 'response_already_completed', message: expect.any(String) },
      steer: { previous_response_id: done.id, input },
      stream_id: 'done-lane',
    });
    // Not made on this socket.
    const elsewhere = await server.client.responses.create({ model: MODEL, input: 'two pauses', tools: TOOLS });
    for (const id of [elsewhere.id, 'resp_nope']) {
      expect(await failed({ type: 'response.steer', previous_response_id: id, input })).toMatchObject({
        error: { code: 'response_not_found', message: expect.stringContaining('not available on this connection') },
        steer: { previous_response_id: id, input },
      });
    }
    // Not input steering takes: a tool output, another role, nothing, a stream_id of its own.
    const paused = finalResponse(await socket.create({ model: MODEL, input: 'two pauses', tools: TOOLS }));
    for (const [event, said] of [
      [{ type: 'response.steer', previous_response_id: paused.id, input: [{ type: 'function_call_output', call_id: 'call_1', output: 'x' }] }, 'input[0]'],
      [{ type: 'response.steer', previous_response_id: paused.id, input: [{ role: 'assistant', content: 'x' }] }, 'input[0].role'],
      [{ type: 'response.steer', previous_response_id: paused.id, input: '' }, 'input'],
      [{ type: 'response.steer', previous_response_id: paused.id, input: 'x', stream_id: 'mine' }, 'stream_id'],
    ] as const) {
      const answer = await failed(event);
      expect(answer).toMatchObject({ error: { code: 'invalid_input', message: expect.stringContaining(said) }, steer: { input: event.input } });
      expect(answer).not.toHaveProperty('steer.id');
    }
    // Too much at once: more than steeringMessages messages queued on the socket.
    const many = Array.from({ length: FIXED_LIMITS.steeringMessages.value + 1 }, (_, index) => ({
      type: 'message' as const,
      role: 'user' as const,
      content: `note ${index}`,
    }));
    expect(await failed({ type: 'response.steer', previous_response_id: paused.id, input: many })).toMatchObject({
      error: { code: 'too_many_pending_steers' },
    });
    socket.ws.send({ type: 'response.steer', previous_response_id: paused.id, input: many.slice(1) });
    expect((await nextSteerEvent(socket)).type).toBe('response.steer.accepted');
    expect((await nextSteerEvent(socket)).type).toBe('response.steer.pending');
    expect(await failed({ type: 'response.steer', previous_response_id: paused.id, input: 'one more' })).toMatchObject({
      error: { code: 'too_many_pending_steers' },
    });
    // In a conversation: the SDK documents that such responses do not support steering.
    const conversation = await server.client.conversations.create();
    const inConversation = finalResponse(await socket.create({ model: MODEL, conversation: conversation.id, input: 'two pauses', tools: TOOLS }));
    expect(await failed({ type: 'response.steer', previous_response_id: inConversation.id, input })).toMatchObject({
      error: { code: 'steering_not_supported' },
    });
    expect(finalResponse(await socket.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
  });
});

describe('WebSocket mode: what a socket keeps of steering (SocketSteering)', () => {
  const body = (extra: Partial<CreateResponseRequest> = {}): CreateResponseRequest =>
    ({ model: MODEL, input: 'hello', instructions: 'Be brief.', store: true, metadata: { k: 'v' }, ...extra }) as CreateResponseRequest;
  const message = (id: string) => ({ type: 'message' as const, id, role: 'assistant' as const, status: 'completed' as const, content: [] });

  it('a steer while the events of a response that owes nothing are sent: after them, an automatic successor inheriting its settings', () => {
    const steering = new SocketSteering(1_000_000);
    steering.streaming(body({ previous_response_id: 'resp_0' }), 'lane', { id: 'resp_1', output: [message('msg_1')] });
    const outcome = steering.steer({ type: 'response.steer', previous_response_id: 'resp_1', input: 'first' });
    expect(outcome.refusal).toBeUndefined();
    expect(outcome.events.map((event) => event.type)).toEqual(['response.steer.accepted']);
    steering.steer({ type: 'response.steer', previous_response_id: 'resp_1', input: [{ role: 'user', content: [{ type: 'input_text', text: 'second' }] }] });
    const after = steering.streamed('resp_1');
    expect(after.events).toEqual([]);
    expect(after.successor).toEqual({
      parentId: 'resp_1',
      lane: 'lane',
      body: {
        model: MODEL,
        instructions: 'Be brief.',
        store: true,
        metadata: { k: 'v' },
        previous_response_id: 'resp_1',
        input: [
          { type: 'message', role: 'user', content: 'first' },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'second' }] },
        ],
      },
      submissions: [
        expect.objectContaining({ input: 'first' }),
        expect.objectContaining({ input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'second' }] }] }),
      ],
    });
    // Handed over: completed, the response takes no more.
    expect(steering.steer({ type: 'response.steer', previous_response_id: 'resp_1', input: 'late' }).refusal?.code).toBe('response_already_completed');
    const failed = steering.successorFailed(after.successor!, 'The server is busy.');
    expect(failed.map((event) => event.type === 'response.steer.failed' && [event.error.code, event.steer.id, event.stream_id])).toEqual([
      ['successor_creation_failed', after.successor!.submissions[0]!.id, 'lane'],
      ['successor_creation_failed', after.successor!.submissions[1]!.id, 'lane'],
    ]);
  });

  it('a response that ends owing calls announces each submission pending once; a continuation takes the input, or leaves it when refused', () => {
    const steering = new SocketSteering(1_000_000);
    const call = { type: 'function_call' as const, id: 'fc_1', call_id: 'call_1', name: 'get_a', arguments: '{}', status: 'completed' as const };
    steering.streaming(body(), undefined, { id: 'resp_1', output: [call] });
    expect(steering.steer({ type: 'response.steer', previous_response_id: 'resp_1', input: 'one' }).events.map((event) => event.type)).toEqual([
      'response.steer.accepted',
    ]);
    expect(steering.streamed('resp_1').events).toEqual([
      expect.objectContaining({ type: 'response.steer.pending', required_input: [{ type: 'function_call_output', call_id: 'call_1', name: 'get_a' }] }),
    ]);
    expect(steering.steer({ type: 'response.steer', previous_response_id: 'resp_1', input: 'two' }).events.map((event) => event.type)).toEqual([
      'response.steer.accepted',
      'response.steer.pending',
    ]);
    const prefix = [
      { type: 'message', role: 'user', content: 'one' },
      { type: 'message', role: 'user', content: 'two' },
    ];
    expect(steering.continuing('resp_1')).toEqual(prefix);
    expect(steering.steer({ type: 'response.steer', previous_response_id: 'resp_1', input: 'three' }).refusal?.code).toBe('response_not_active');
    steering.continued('resp_1', false);
    expect(steering.continuing('resp_1')).toEqual(prefix);
    steering.continued('resp_1', true);
    expect(steering.continuing('resp_1')).toEqual([]);
    expect(steering.steer({ type: 'response.steer', previous_response_id: 'resp_1', input: 'four' }).refusal?.code).toBe('response_not_active');
  });

  it(`remembers the latest ${REMEMBERED_RESPONSES} responses and those with input queued; bounds the input by bytes as well`, () => {
    const steering = new SocketSteering(200);
    const call = { type: 'function_call' as const, id: 'fc_0', call_id: 'call_0', name: 'get_a', arguments: '{}', status: 'completed' as const };
    steering.streaming(body(), undefined, { id: 'resp_0', output: [call] });
    steering.streamed('resp_0');
    steering.steer({ type: 'response.steer', previous_response_id: 'resp_0', input: 'kept' });
    for (let index = 1; index <= REMEMBERED_RESPONSES; index++) {
      steering.streaming(body(), undefined, { id: `resp_${index}`, output: [] });
      steering.streamed(`resp_${index}`);
    }
    expect(steering.steer({ type: 'response.steer', previous_response_id: 'resp_1', input: 'x' }).refusal?.code).toBe('response_not_found');
    expect(steering.steer({ type: 'response.steer', previous_response_id: 'resp_2', input: 'x' }).refusal?.code).toBe('response_already_completed');
    expect(steering.steer({ type: 'response.steer', previous_response_id: 'resp_0', input: 'y'.repeat(200) }).refusal?.code).toBe('too_many_pending_steers');
    expect(steering.continuing('resp_0')).toEqual([{ type: 'message', role: 'user', content: 'kept' }]);
  });
});

describe('WebSocket mode: knobs, bounds and the journal', () => {
  it('applies the knob headers of the upgrade to every request, and refuses the upgrade for a bad one', async () => {
    const paced = new TestSocket(server.client, { headers: { 'x-ptc-event-latency-ms': '1', 'x-ptc-final-message': 'next' } });
    const first = finalResponse(await paced.create({ model: MODEL, input: inlineProgram('text("done")'), tools: TOOLS }));
    // final_message: next: the program's output without its message.
    expect(first.output.map((item) => item.type)).toEqual(['program', 'program_output']);
    const journal = (await server.client.get('/emulator/journal', { query: { limit: 5 } })) as { data: Record<string, unknown>[] };
    const entry = journal.data.find((candidate) => candidate.response_id === first.id)!;
    expect(entry).toMatchObject({
      method: 'WS',
      path: '/v1/responses',
      status: 200,
      stream: true,
      knobs: { event_latency_ms: 1, final_message: 'next' },
      output: ['program', 'program_output'],
    });
    expect((entry.stream_report as { pauses_ms: number[] }).pauses_ms.every((pause) => pause === 1)).toBe(true);

    const refused = new TestSocket(server.client, { headers: { 'x-ptc-no-such-knob': '1' } });
    const message = await refused.next();
    expect(message.type === 'error' && message.error.message).toContain('400');
  });

  it('ends the connection without a close frame after stream_cut_after events, every event before it delivered', async () => {
    const socket = new TestSocket(server.client, { headers: { 'x-ptc-stream-cut-after': '3' } });
    socket.ws.send({ type: 'response.create', model: MODEL, input: 'plain message' });
    const received: string[] = [];
    for (;;) {
      const message = await socket.next();
      if (message.type === 'close') {
        expect(message.code).toBe(1006);
        break;
      }
      if (message.type === 'message') received.push(message.message.type);
    }
    expect(received).toEqual(['response.created', 'response.in_progress', 'response.output_item.added']);
  });

  it('counts a simulated error toward error_times, so a client that sends its request again gets through', async () => {
    const socket = new TestSocket(server.client, { headers: { 'x-ptc-error-status': '503', 'x-ptc-error-times': '2' } });
    for (let attempt = 1; attempt <= 2; attempt += 1) {
      socket.ws.send({ type: 'response.create', model: MODEL, input: 'plain message' });
      expect(await socket.error()).toMatchObject({ code: 'simulated_error', status: 503, error: { type: 'server_error' } });
    }
    expect(finalResponse(await socket.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
  });

  it('closes the socket with 1009 for a message over PTC_BODY_LIMIT_BYTES', async () => {
    const small = await startServer({ scenarios: SCENARIOS, config: { bodyLimitBytes: 4096 } });
    try {
      const socket = new TestSocket(small.client);
      expect(finalResponse(await socket.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
      socket.ws.send({ type: 'response.create', model: MODEL, input: 'x'.repeat(5000) });
      expect((await socket.closed()).code).toBe(1009);
    } finally {
      await small.close();
    }
  });

  it('takes a place in the same turn gate as HTTP requests: server_busy when it is full', async () => {
    const busy = await startServer({ scenarios: SCENARIOS, config: { maxConcurrentTurns: 1, maxQueuedTurns: 0 } });
    try {
      const running = busy.client.responses.create({ model: MODEL, input: 'plain message' }, { headers: { 'x-ptc-delay-ms': '500' } });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const socket = new TestSocket(busy.client);
      socket.ws.send({ type: 'response.create', model: MODEL, input: 'plain message' });
      expect(await socket.error()).toMatchObject({ code: 'server_busy', status: 429, error: { type: 'rate_limit_error' } });
      await running;
      expect(finalResponse(await socket.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
    } finally {
      await busy.close();
    }
  });

  it('a client that closes mid-turn costs nothing after the turn: its place is freed, and the server serves others', async () => {
    const busy = await startServer({ scenarios: SCENARIOS, config: { maxConcurrentTurns: 1, maxQueuedTurns: 4 } });
    try {
      const socket = new TestSocket(busy.client, { headers: { 'x-ptc-delay-ms': '500' } });
      socket.ws.send({ type: 'response.create', model: MODEL, input: 'plain message' });
      // A second request, waiting behind the first on the socket, is dropped with it.
      socket.ws.send({ type: 'response.create', model: MODEL, input: 'with reasoning' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      socket.ws.close();
      // The server sees the client leave while the turn still runs, not after it.
      await socket.closed();
      const during = (await busy.client.get('/emulator/journal')) as { data: { method: string }[] };
      expect(during.data.filter((entry) => entry.method === 'WS')).toEqual([]);
      // The only place is taken until the turn ends, then free: this request waits for it.
      expect((await busy.client.responses.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
      const journal = (await busy.client.get('/emulator/journal')) as { data: { method: string; status: number; stream_report?: { events_sent: number } }[] };
      const overSocket = journal.data.filter((entry) => entry.method === 'WS');
      // The turn ran (and its response was stored), but none of its events were sent.
      expect(overSocket).toHaveLength(1);
      expect(overSocket[0]).toMatchObject({ status: 200 });
      expect(overSocket[0]!.stream_report).toBeUndefined();
    } finally {
      await busy.close();
    }
  });

  it('finishes the request a socket is serving when the server closes, then closes the socket with 1001', async () => {
    const closing = await startServer({ scenarios: SCENARIOS });
    let closed: Promise<void> | undefined;
    try {
      const socket = new TestSocket(closing.client, { headers: { 'x-ptc-delay-ms': '200' } });
      socket.ws.send({ type: 'response.create', model: MODEL, input: 'plain message' });
      await new Promise((resolve) => setTimeout(resolve, 50));
      closed = closing.close();
      expect(finalResponse(await socket.events()).status).toBe('completed');
      expect((await socket.closed()).code).toBe(1001);
    } finally {
      await (closed ?? closing.close());
    }
  });

  it('answers shutting_down while the server drains, then closes the socket with 1001', async () => {
    const app = await buildServer({ logger: false, scenarios: SCENARIOS, config: { fingerprintKey: randomUUID(), store: 'memory', workers: 0 } });
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const client = new OpenAI({ apiKey: 'k', baseURL: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`, maxRetries: 0 });
      const socket = new TestSocket(client);
      expect(finalResponse(await socket.create({ model: MODEL, input: 'plain message' })).status).toBe('completed');
      app.drain();
      socket.ws.send({ type: 'response.create', model: MODEL, input: 'plain message' });
      expect(await socket.error()).toMatchObject({ code: 'shutting_down', status: 503 });
      expect((await socket.closed()).code).toBe(1001);
      // New sockets are refused at the upgrade.
      const late = new TestSocket(client);
      const message = await late.next();
      expect(message.type === 'error' && message.error.message).toContain('503');
    } finally {
      await app.close();
    }
  });
});

describe.each(['memory', 'sqlite', 'redis'] as const)('WebSocket mode on the %s store', (store) => {
  it('continues a paused program on one socket by previous_response_id and in a conversation, and what it stored reads back over HTTP', async ({ skip }) => {
    const redis = store === 'redis' ? await startTestRedis() : undefined;
    skip(store === 'redis' && !redis, 'no Redis available');
    const dataDir = store === 'sqlite' ? mkdtempSync(join(tmpdir(), 'ptc-ws-store-')) : undefined;
    const stored = await startServer({
      scenarios: SCENARIOS,
      config: { store, ...(dataDir ? { dataDir } : {}), ...(redis ? { redisUrl: redis.url, redisPrefix: redis.keyPrefix } : {}) },
    });
    try {
      const socket = new TestSocket(stored.client);
      const program = inlineProgram('const a = await tools.get_a({}); text(`got ${a}`);');
      const first = finalResponse(await socket.create({ model: MODEL, input: program, tools: TOOLS }));
      const [call] = functionCallsOf(first);
      const output = (value: string): ResponseInputItem[] => [
        { type: 'function_call_output', call_id: call!.call_id, output: value, caller: call!.caller ?? null },
      ];
      const second = finalResponse(await socket.create({ model: MODEL, previous_response_id: first.id, tools: TOOLS, input: output('42') }));
      expect(programOutputOf(second)?.result).toBe('got 42');
      expect((await stored.client.responses.retrieve(second.id)).previous_response_id).toBe(first.id);

      const conversation = await stored.client.conversations.create();
      const inConversation = finalResponse(await socket.create({ model: MODEL, conversation: conversation.id, input: program, tools: TOOLS }));
      const [conversationCall] = functionCallsOf(inConversation);
      const resumed = finalResponse(
        await socket.create({
          model: MODEL,
          conversation: conversation.id,
          tools: TOOLS,
          input: [{ type: 'function_call_output', call_id: conversationCall!.call_id, output: '7', caller: conversationCall!.caller ?? null }],
        }),
      );
      expect(programOutputOf(resumed)?.result).toBe('got 7');
      const items = await stored.client.conversations.items.list(conversation.id, { order: 'asc', limit: 100 });
      expect(items.data.map((item) => item.type)).toEqual(['message', 'program', 'function_call', 'function_call_output', 'program_output', 'message']);
    } finally {
      await stored.close();
      await redis?.stop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('an upgrade request the router refuses before any hook', () => {
  it('is answered in the envelope and its connection closed, not left open (a malformed URL)', async () => {
    const { port } = new URL(server.baseURL);
    const answer = await new Promise<{ text: string; closed: boolean }>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1');
      let text = '';
      // A wide margin: the answer and the close come at once.
      const timer = setTimeout(() => {
        socket.destroy();
        resolve({ text, closed: false });
      }, 10_000);
      socket.on('data', (chunk) => (text += chunk));
      socket.on('close', () => {
        clearTimeout(timer);
        resolve({ text, closed: true });
      });
      socket.write('GET /%ff HTTP/1.1\r\nhost: x\r\nconnection: keep-alive, upgrade\r\nupgrade: websocket\r\n\r\n');
    });
    expect(answer.closed).toBe(true);
    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer.text).toContain('"code":"invalid_value"');
  });
});
