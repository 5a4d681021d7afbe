import { setTimeout as sleep } from 'node:timers/promises';
import type OpenAI from 'openai';
import type { Response, ResponseStreamEvent, ResponseUsage } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import { startServer, type RunningServer } from './support/server.ts';

// `usage` over HTTP: on every finished Response however it was obtained, never on opening snapshots.
// (How tokens are counted is test/usage.test.ts's business.)

const MODEL = 'ptc-emulator';
const SHORT = 'Yes.';
const LONG = 'Yes, and here is a much longer answer that goes on for a while, so that it must cost many more output tokens than the short one.';
const SCENARIOS: ScenarioFile = {
  rules: [
    { match: { user: 'short' }, message: SHORT },
    { match: { user: 'long' }, message: LONG },
    { match: { user: 'think' }, reasoning: 'Let me weigh both options before answering.', message: SHORT },
  ],
};

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ scenarios: SCENARIOS });
});
afterAll(() => server.close());

function expectConsistentUsage(usage: ResponseUsage | undefined): asserts usage is ResponseUsage {
  expect(usage).toBeDefined();
  const { input_tokens, output_tokens, total_tokens, output_tokens_details, input_tokens_details } = usage!;
  for (const count of [input_tokens, output_tokens, total_tokens, output_tokens_details.reasoning_tokens, input_tokens_details.cached_tokens]) {
    expect(Number.isInteger(count)).toBe(true);
    expect(count).toBeGreaterThanOrEqual(0);
  }
  expect(input_tokens).toBeGreaterThan(0);
  expect(output_tokens).toBeGreaterThan(0);
  expect(total_tokens).toBe(input_tokens + output_tokens);
  expect(output_tokens_details.reasoning_tokens).toBeLessThanOrEqual(output_tokens);
  expect(input_tokens_details.cached_tokens).toBeLessThanOrEqual(input_tokens);
}

async function settled(client: OpenAI, id: string): Promise<Response> {
  for (;;) {
    const response = await client.responses.retrieve(id);
    if (response.status !== 'queued' && response.status !== 'in_progress') return response;
    await sleep(10);
  }
}

/** The message text, from the items (a raw stream event's Response has no SDK-computed `output_text`). */
function messageText(response: Response): string {
  return response.output
    .flatMap((item) => (item.type === 'message' ? item.content.map((part) => (part.type === 'output_text' ? part.text : '')) : []))
    .join('');
}

type Obtain = (client: OpenAI, input: string) => Promise<Response>;

const HOW: readonly [string, Obtain][] = [
  ['non-streaming create', (client, input) => client.responses.create({ model: MODEL, input })],
  ['retrieve', async (client, input) => client.responses.retrieve((await client.responses.create({ model: MODEL, input })).id)],
  ['the streamed finalResponse()', (client, input) => client.responses.stream({ model: MODEL, input }).finalResponse()],
  [
    'the terminal event of stream: true',
    async (client, input) => {
      let terminal: Response | undefined;
      for await (const event of await client.responses.create({ model: MODEL, input, stream: true }))
        if (event.type === 'response.completed') terminal = event.response;
      if (!terminal) throw new Error('no response.completed');
      return terminal;
    },
  ],
  [
    'a background response, once finished',
    async (client, input) => settled(client, (await client.responses.create({ model: MODEL, input, background: true })).id),
  ],
];

describe.each(HOW)('usage on %s', (_, obtain) => {
  it('is present and consistent: total = input + output', async () => {
    expectConsistentUsage((await obtain(server.client, 'short')).usage);
  });

  it('grows with a longer message', async () => {
    const short = await obtain(server.client, 'short');
    const long = await obtain(server.client, 'long');
    expect(messageText(short)).toBe(SHORT);
    expect(messageText(long)).toBe(LONG);
    expectConsistentUsage(short.usage);
    expectConsistentUsage(long.usage);
    expect(long.usage.output_tokens).toBeGreaterThan(short.usage.output_tokens);
  });

  it('counts reasoning tokens when a reasoning summary is emitted, and none otherwise', async () => {
    const thought = await obtain(server.client, 'think');
    expect(thought.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    expectConsistentUsage(thought.usage);
    expect(thought.usage.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(thought.usage.output_tokens_details.reasoning_tokens).toBeLessThan(thought.usage.output_tokens);
    const plain = await obtain(server.client, 'short');
    expectConsistentUsage(plain.usage);
    expect(plain.usage.output_tokens_details.reasoning_tokens).toBe(0);
    // The same message, plus the reasoning.
    expect(thought.usage.output_tokens - thought.usage.output_tokens_details.reasoning_tokens).toBe(plain.usage.output_tokens);
  });
});

describe('usage on an incomplete response', () => {
  it('is present, and counts the cut message only', async () => {
    const { client } = server;
    const full = await client.responses.create({ model: MODEL, input: 'long' });
    const cut = await client.responses.create({ model: MODEL, input: 'long', max_output_tokens: 8 });
    expect(cut.status).toBe('incomplete');
    expectConsistentUsage(cut.usage);
    expectConsistentUsage(full.usage);
    expect(cut.usage.output_tokens).toBeLessThan(full.usage.output_tokens);
  });
});

describe('opening snapshots', () => {
  const OPENING = new Set(['response.created', 'response.queued', 'response.in_progress']);

  function openingSnapshots(events: readonly ResponseStreamEvent[]): Response[] {
    return events.flatMap((event) => (OPENING.has(event.type) ? [(event as Extract<ResponseStreamEvent, { response: Response }>).response] : []));
  }

  it('response.created and response.in_progress carry no usage; the terminal event does', async () => {
    const events: ResponseStreamEvent[] = [];
    for await (const event of await server.client.responses.create({ model: MODEL, input: 'short', stream: true })) events.push(event);
    const snapshots = openingSnapshots(events);
    expect(snapshots).toHaveLength(2);
    for (const snapshot of snapshots) expect('usage' in snapshot).toBe(false);
    const terminal = events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.completed' }>;
    expectConsistentUsage(terminal.response.usage);
  });

  it('a queued background response, and its replayed opening events, carry no usage', async () => {
    const { client } = server;
    const queued = await client.responses.create({ model: MODEL, input: 'short', background: true });
    expect(queued.status).toBe('queued');
    expect('usage' in queued).toBe(false);
    const events: ResponseStreamEvent[] = [];
    for await (const event of await client.responses.retrieve(queued.id, { stream: true })) events.push(event);
    const snapshots = openingSnapshots(events);
    expect(snapshots.map((snapshot) => snapshot.status)).toEqual(['queued', 'queued', 'in_progress']);
    for (const snapshot of snapshots) expect('usage' in snapshot).toBe(false);
    expectConsistentUsage((events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.completed' }>).response.usage);
  });
});
