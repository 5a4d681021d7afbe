import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import type { JournalEntry } from '../server/engine/journal-details.ts';
import { expectSdkError, REQUEST_ID, rejectionOf } from './support/api-errors.ts';
import { functionCallsOf } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// GET /v1/emulator/journal: what each recent API request did, for a test to inspect; DELETE clears it.

type FunctionCall = OpenAI.Responses.ResponseFunctionToolCall;

const MODEL = 'ptc-emulator';
const CODE = 'const [a, b] = await Promise.all([tools.get_a({}), tools.get_b({})]); text(`${a}+${b}`);';
const SCENARIOS: ScenarioFile = {
  rules: [
    { match: { user: 'go' }, program: CODE },
    { match: { user: 'knobbed' }, message: 'Knobbed answer.', knobs: { seed: 7, event_latency_ms: 0 } },
    { match: { user: 'echo' }, message: 'You said: {{user}}' },
    { match: { user: 'hello' }, message: 'Hello back.' },
  ],
};
const anyObject = { type: 'object', properties: {}, additionalProperties: true };
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'get_a', parameters: anyObject, strict: false, allowed_callers: ['programmatic'] },
  { type: 'function', name: 'get_b', parameters: anyObject, strict: false, allowed_callers: ['programmatic'] },
  { type: 'programmatic_tool_calling' },
];

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ scenarios: SCENARIOS });
});
afterAll(() => server.close());
beforeEach(async () => {
  await clearJournal(server);
});

function origin(running: RunningServer): string {
  return running.baseURL.replace(/\/v1$/, '');
}

async function readJournal(running: RunningServer, query = ''): Promise<JournalEntry[]> {
  const response = await fetch(`${running.baseURL}/emulator/journal${query}`);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { object: string; data: JournalEntry[] };
  expect(body.object).toBe('list');
  return body.data;
}

async function clearJournal(running: RunningServer): Promise<number> {
  const response = await fetch(`${running.baseURL}/emulator/journal`, { method: 'DELETE' });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { object: string; cleared: number };
  expect(body.object).toBe('emulator.journal.cleared');
  return body.cleared;
}

/** The one entry of a request (a request journaled twice, or never, fails). */
async function entryOf(requestId: string | null | undefined, running = server): Promise<JournalEntry> {
  expect(requestId).toMatch(REQUEST_ID);
  const entries = (await readJournal(running)).filter((entry) => entry.request_id === requestId);
  expect(entries, `journal entries of ${requestId}`).toHaveLength(1);
  return entries[0]!;
}

function outputFor(call: FunctionCall, output: string): ResponseInputItem.FunctionCallOutput {
  return { type: 'function_call_output', call_id: call.call_id, output, caller: call.caller ?? null };
}

describe('GET /v1/emulator/journal', () => {
  it('lists API requests newest first, each under the request id the client saw', async () => {
    const { client } = server;
    const { data: created, request_id: createId } = await client.responses.create({ model: MODEL, input: 'hello' }).withResponse();
    const { request_id: retrieveId } = await client.responses.retrieve(created.id).withResponse();
    const { request_id: modelsId } = await client.models.list().withResponse();

    const entries = await readJournal(server);
    expect(entries.map((entry) => entry.request_id)).toEqual([modelsId, retrieveId, createId]);
    const [models, retrieve, create] = entries as [JournalEntry, JournalEntry, JournalEntry];
    expect(create).toMatchObject({
      method: 'POST',
      path: '/v1/responses',
      status: 200,
      model: MODEL,
      store: true,
      stream: false,
      background: false,
      response_id: created.id,
      response_status: 'completed',
      output: ['message'],
    });
    expect(retrieve).toMatchObject({ method: 'GET', path: `/v1/responses/${created.id}`, status: 200 });
    expect(models).toMatchObject({ method: 'GET', path: '/v1/models', status: 200 });
    for (const entry of entries) {
      expect(Number.isNaN(Date.parse(entry.at))).toBe(false);
      expect(entry.duration_ms).toBeGreaterThanOrEqual(0);
    }
    expect(entries.map((entry) => Date.parse(entry.at))).toEqual(entries.map((entry) => Date.parse(entry.at)).sort((a, b) => b - a));
  });

  it("carries each turn's program trace: program call_id, path start / warm / replay, outcome and stats", async () => {
    const { client } = server;
    const user: ResponseInputItem = { role: 'user', content: 'go' };
    const { data: first, request_id: firstId } = await client.responses.create({ model: MODEL, store: false, input: [user], tools: TOOLS }).withResponse();
    const program = first.output[0] as OpenAI.Responses.ResponseOutputItem.Program;
    const [a, b] = functionCallsOf(first) as [FunctionCall, FunctionCall];
    const second = [user, ...toResponseInputItems(first.output), outputFor(a, '1'), outputFor(b, '2')];

    // The paused program answers warm once; the same request again must replay it from the items.
    const { request_id: warmId } = await client.responses.create({ model: MODEL, store: false, input: second, tools: TOOLS }).withResponse();
    const { request_id: replayId } = await client.responses.create({ model: MODEL, store: false, input: second, tools: TOOLS }).withResponse();

    const stats = { cpuTimeMs: expect.any(Number), steps: expect.any(Number), calls: 2 };
    expect((await entryOf(firstId)).programs).toEqual([{ program: program.call_id, path: 'start', outcome: 'paused', stats }]);
    expect((await entryOf(warmId)).programs).toEqual([{ program: program.call_id, path: 'warm', outcome: 'completed', stats }]);
    expect((await entryOf(replayId)).programs).toEqual([{ program: program.call_id, path: 'replay', outcome: 'completed', stats }]);
    expect((await entryOf(warmId)).output).toEqual(['program_output', 'message']);
  });

  it('names how a failed program ended', async () => {
    const { client } = server;
    const { data, request_id } = await client.responses
      .create({ model: MODEL, input: 'Run this:\n```js\nthrow new Error("boom")\n```', tools: TOOLS })
      .withResponse();
    const program = data.output[0] as OpenAI.Responses.ResponseOutputItem.Program;
    expect((await entryOf(request_id)).programs).toEqual([
      { program: program.call_id, path: 'start', outcome: 'incomplete', stats: expect.any(Object), code: 'program_threw' },
    ]);
  });

  it('records the knobs that applied: the scenario rule, overridden by headers', async () => {
    const { client } = server;
    const { request_id: ruleId } = await client.responses.create({ model: MODEL, input: 'knobbed' }).withResponse();
    const { request_id: headerId } = await client.responses
      .create({ model: MODEL, input: 'knobbed' }, { headers: { 'x-ptc-seed': '9', 'x-ptc-final-message': 'next' } })
      .withResponse();
    const { request_id: noneId } = await client.responses.create({ model: MODEL, input: 'hello' }).withResponse();
    expect((await entryOf(ruleId)).knobs).toEqual({ seed: 7, event_latency_ms: 0 });
    expect((await entryOf(headerId)).knobs).toEqual({ seed: 9, event_latency_ms: 0, final_message: 'next' });
    expect((await entryOf(noneId)).knobs).toEqual({});
  });

  it('records a rejected client-loop mistake under client_loop.rejected, with the request id of the SDK error', async () => {
    const { client } = server;
    const user: ResponseInputItem = { role: 'user', content: 'go' };
    const first = await client.responses.create({ model: MODEL, store: false, input: [user], tools: TOOLS });
    const [a] = functionCallsOf(first) as [FunctionCall];
    // Only one of the two calls answered.
    const error = await rejectionOf(
      client.responses.create({ model: MODEL, store: false, input: [user, ...toResponseInputItems(first.output), outputFor(a, '1')], tools: TOOLS }),
    );
    expectSdkError(error, { code: 'tool_output_missing' });
    const entry = await entryOf(error.requestID);
    expect(entry).toMatchObject({
      method: 'POST',
      path: '/v1/responses',
      status: 400,
      client_loop: { rejected: 'tool_output_missing', tolerated: [] },
      error: { code: 'tool_output_missing', type: 'invalid_request_error', param: error.param, message: (error.error as { message: string }).message },
    });
    expect(entry.response_id).toBeUndefined();
  });

  it('records what a lenient request let through under client_loop.tolerated', async () => {
    const { client } = server;
    const user: ResponseInputItem = { role: 'user', content: 'go' };
    const first = await client.responses.create({ model: MODEL, store: false, input: [user], tools: TOOLS });
    const [a, b] = functionCallsOf(first) as [FunctionCall, FunctionCall];
    const input: ResponseInputItem[] = [
      user,
      ...toResponseInputItems(first.output),
      outputFor(a, '1'),
      outputFor(b, '2'),
      { type: 'function_call_output', call_id: 'call_nobody', output: 'x', caller: a.caller ?? null },
    ];
    const { data, request_id } = await client.responses
      .create({ model: MODEL, store: false, input, tools: TOOLS }, { headers: { 'x-ptc-client-checks': 'lenient' } })
      .withResponse();
    expect(data.status).toBe('completed');
    const entry = await entryOf(request_id);
    expect(entry.status).toBe(200);
    expect(entry.client_loop?.rejected).toBeUndefined();
    expect(entry.client_loop?.tolerated).toHaveLength(1);
    expect(entry.client_loop?.tolerated[0]).toMatch(/^tool_output_unknown_call\b/);
    expect(entry.client_loop?.tolerated[0]).toContain('call_nobody');

    // The same request without the header is rejected, and says so.
    const error = await rejectionOf(client.responses.create({ model: MODEL, store: false, input, tools: TOOLS }));
    expectSdkError(error, { code: 'tool_output_unknown_call' });
    expect((await entryOf(error.requestID)).client_loop).toEqual({ rejected: 'tool_output_unknown_call', tolerated: [] });
  });

  it('records other errors with their envelope and no client_loop', async () => {
    const error = await rejectionOf(server.client.responses.retrieve('resp_nobody'));
    expectSdkError(error, { code: 'response_not_found' });
    const entry = await entryOf(error.requestID);
    expect(entry).toMatchObject({ method: 'GET', path: '/v1/responses/resp_nobody', status: 404, error: { code: 'response_not_found' } });
    expect(entry.client_loop).toBeUndefined();
  });

  it('?limit=N returns the N newest entries', async () => {
    const { client } = server;
    const ids: string[] = [];
    for (let index = 0; index < 4; index += 1) ids.push((await client.responses.create({ model: MODEL, input: 'hello' }).withResponse()).request_id!);
    expect((await readJournal(server, '?limit=2')).map((entry) => entry.request_id)).toEqual([ids[3], ids[2]]);
    expect((await readJournal(server, '?limit=100')).map((entry) => entry.request_id)).toEqual([...ids].reverse());
    const invalid = await fetch(`${server.baseURL}/emulator/journal?limit=0`);
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as { error: { code: string } }).error.code).toBe('invalid_value');
  });

  it('DELETE clears it, and neither reading nor clearing the journal is journaled', async () => {
    const { client } = server;
    await client.responses.create({ model: MODEL, input: 'hello' });
    await client.responses.create({ model: MODEL, input: 'hello' });
    await readJournal(server);
    expect(await clearJournal(server)).toBe(2);
    expect(await readJournal(server)).toEqual([]);
    expect(await clearJournal(server)).toBe(0);
  });

  it('does not journal /health and /metrics', async () => {
    expect((await fetch(`${origin(server)}/health`)).status).toBe(200);
    expect((await fetch(`${origin(server)}/metrics`)).status).toBe(200);
    expect(await readJournal(server)).toEqual([]);
  });
});

describe('journal content', () => {
  it('keeps no content of a store: false request: not the input, not the output, not the error', async () => {
    const { client } = server;
    const marker = `secret-${Math.random().toString(36).slice(2)}`;
    const ids: (string | null)[] = [];
    ids.push(
      (
        await client.responses
          .create({ model: MODEL, store: false, input: `echo ${marker}`, instructions: `Be brief ${marker}`, metadata: { note: marker } })
          .withResponse()
      ).request_id,
    );
    const { data: stream, request_id: streamId } = await client.responses
      .create({ model: MODEL, store: false, input: `echo ${marker}`, stream: true })
      .withResponse();
    for await (const _ of stream);
    ids.push(streamId);
    const error = await rejectionOf(
      client.responses.create({
        model: MODEL,
        store: false,
        input: [
          { role: 'user', content: `echo ${marker}` },
          { type: 'function_call_output', call_id: 'call_x', output: marker },
        ],
      }),
    );
    ids.push((error as { requestID: string | null }).requestID);

    const entries = await readJournal(server);
    for (const id of ids) {
      // (How many entries a streamed request makes is the test below's business.)
      const own = entries.filter((entry) => entry.request_id === id);
      expect(own.length, `entries of ${id}`).toBeGreaterThan(0);
      for (const entry of own) {
        expect(entry.store).toBe(false);
        expect('request' in entry).toBe(false);
        expect('response' in entry).toBe(false);
      }
    }
    const text = JSON.stringify(await readJournal(server));
    expect(text).not.toContain(marker);
  });

  it('keeps the request body and the Response of a store: true request', async () => {
    const { client } = server;
    // Digits only: a letter pair could match another rule's substring (`go`).
    const marker = `visible-${Math.random().toString().slice(2)}`;
    const { data, request_id } = await client.responses.create({ model: MODEL, input: `echo ${marker}` }).withResponse();
    const entry = await entryOf(request_id);
    expect(entry.request).toMatchObject({ model: MODEL, input: `echo ${marker}` });
    const { output_text: _outputText, ...wire } = await client.responses.retrieve(data.id);
    expect(entry.response).toStrictEqual(JSON.parse(JSON.stringify(wire)));
    expect(JSON.stringify(entry.response)).toContain(marker);
  });

  /** A streamed POST and a replayed GET, consumed to the end; their request ids. */
  async function streamedRequests(): Promise<{ post: string | null; get: string | null; final: Response }> {
    const { client } = server;
    const { data: stream, request_id: post } = await client.responses.create({ model: MODEL, input: 'go', tools: TOOLS, stream: true }).withResponse();
    let final: Response | undefined;
    for await (const event of stream) if (event.type === 'response.completed') final = event.response;
    if (!final) throw new Error('the stream did not complete');
    const { data: replay, request_id: get } = await client.responses.retrieve(final.id, { stream: true }).withResponse();
    for await (const _ of replay);
    return { post, get, final };
  }

  it('journals streamed requests with their outcome', async () => {
    const { post, get, final } = await streamedRequests();
    const entries = await readJournal(server);
    const postEntry = entries.find((entry) => entry.request_id === post);
    expect(postEntry).toMatchObject({
      method: 'POST',
      path: '/v1/responses',
      status: 200,
      stream: true,
      store: true,
      response_id: final.id,
      response_status: 'completed',
      output: ['program', 'function_call', 'function_call'],
      programs: [{ program: (final.output[0] as { call_id: string }).call_id, path: 'start', outcome: 'paused' }],
    });
    expect(postEntry?.response).toStrictEqual(final);
    expect(entries.find((entry) => entry.request_id === get)).toMatchObject({ method: 'GET', path: `/v1/responses/${final.id}`, status: 200 });
  });

  it('journals each streamed request exactly once', async () => {
    const { post, get } = await streamedRequests();
    const entries = await readJournal(server);
    expect(entries.map((entry) => entry.request_id)).toEqual([get, post]);
  });
});

describe('journal size (PTC_JOURNAL_SIZE)', () => {
  it('keeps only the newest journalSize entries', async () => {
    const small = await startServer({ scenarios: SCENARIOS, config: { journalSize: 2 } });
    try {
      const ids: (string | null)[] = [];
      for (let index = 0; index < 3; index += 1) ids.push((await small.client.responses.create({ model: MODEL, input: 'hello' }).withResponse()).request_id);
      expect((await readJournal(small)).map((entry) => entry.request_id)).toEqual([ids[2], ids[1]]);
    } finally {
      await small.close();
    }
  });

  it('keeps nothing with journalSize 0', async () => {
    const off = await startServer({ scenarios: SCENARIOS, config: { journalSize: 0 } });
    try {
      await off.client.responses.create({ model: MODEL, input: 'hello' });
      await rejectionOf(off.client.responses.retrieve('resp_nobody'));
      expect(await readJournal(off)).toEqual([]);
    } finally {
      await off.close();
    }
  });
});
