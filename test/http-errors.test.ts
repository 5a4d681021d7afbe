import OpenAI from 'openai';
import type { ResponseCreateParamsNonStreaming } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorResponse, expectSdkError, REQUEST_ID, rejectionOf, type ExpectedApiError } from './support/api-errors.ts';
import { startServer, type RunningServer } from './support/server.ts';

const MODEL = 'ptc-emulator';
const MODELS = ['ptc-emulator', 'ptc-emulator-mini'];

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ config: { models: MODELS, apiKey: undefined } });
});
afterAll(() => server.close());

/** The server's root (without `/v1`), for routes outside the API prefix. */
function rootURL(running: RunningServer): string {
  return running.baseURL.replace(/\/v1$/, '');
}

function postRaw(running: RunningServer, body: string | undefined, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  return fetch(`${running.baseURL}/responses`, { method: 'POST', headers, ...(body === undefined ? {} : { body }) });
}

/** A body the SDK types do not allow, sent as a JS user (or a typo) would. */
function untyped(body: Record<string, unknown>): ResponseCreateParamsNonStreaming {
  return body as unknown as ResponseCreateParamsNonStreaming;
}

const inlineProgram = (code: string): string => `Run this:\n\`\`\`js\n${code}\n\`\`\``;

describe('HTTP errors of POST /v1/responses that only a raw client can produce', () => {
  it.each<[string, string | undefined, Record<string, string>, ExpectedApiError]>([
    [
      'malformed JSON',
      '{"model": "ptc-emulator", "input": ',
      { 'content-type': 'application/json' },
      { code: 'invalid_json', param: null, mentions: ['JSON'] },
    ],
    ['an empty body', '', { 'content-type': 'application/json' }, { code: 'invalid_json', param: null, mentions: ['empty'] }],
    ['no body at all', undefined, { 'content-type': 'application/json' }, { code: 'invalid_json', param: null, mentions: ['empty'] }],
    ['a JSON array', '[]', { 'content-type': 'application/json' }, { code: 'invalid_json', param: null, mentions: ['JSON object'] }],
    ['a JSON string', '"hello"', { 'content-type': 'application/json' }, { code: 'invalid_json', param: null, mentions: ['JSON object'] }],
    ['JSON null', 'null', { 'content-type': 'application/json' }, { code: 'invalid_json', param: null, mentions: ['JSON object'] }],
    [
      'a body with a __proto__ key',
      '{"model": "ptc-emulator", "__proto__": {"polluted": true}}',
      { 'content-type': 'application/json' },
      { code: 'invalid_json', param: null, mentions: ['JSON'] },
    ],
    [
      'a text/plain body',
      JSON.stringify({ model: MODEL, input: 'hi' }),
      { 'content-type': 'text/plain' },
      { code: 'unsupported_media_type', param: null, mentions: ['Content-Type', 'application/json'] },
    ],
    [
      'a form-encoded body',
      'model=ptc-emulator&input=hi',
      { 'content-type': 'application/x-www-form-urlencoded' },
      { code: 'unsupported_media_type', param: null, mentions: ['application/json'] },
    ],
  ])('rejects %s in the error envelope', async (_, body, headers, expected) => {
    await expectErrorResponse(await postRaw(server, body, headers), expected);
  });

  it('rejects a body over the configured limit with 413', async () => {
    const small = await startServer({ config: { bodyLimitBytes: 2048 } });
    try {
      const body = JSON.stringify({ model: MODEL, input: 'x'.repeat(4096) });
      await expectErrorResponse(await postRaw(small, body), { code: 'request_too_large', param: null, mentions: ['2048 bytes'] });
      // A body under the limit on the same server is served.
      const fits = await postRaw(small, JSON.stringify({ model: MODEL, input: 'x'.repeat(100) }));
      expect(fits.status).toBe(200);
    } finally {
      await small.close();
    }
  });
});

describe('validation errors of POST /v1/responses seen through the openai SDK', () => {
  it.each<[string, Record<string, unknown>, ExpectedApiError]>([
    [
      'an unknown top-level parameter',
      { model: MODEL, input: 'hi', temprature: 0.5 },
      { code: 'unknown_parameter', param: 'temprature', mentions: ["'temprature'"] },
    ],
    ['a number as model', { model: 5, input: 'hi' }, { code: 'invalid_type', param: 'model', mentions: ["'model'", 'string', 'integer'] }],
    ['a number as input', { model: MODEL, input: 5 }, { code: 'invalid_type', param: 'input', mentions: ["'input'", 'integer'] }],
    ['an object as tools', { model: MODEL, input: 'hi', tools: {} }, { code: 'invalid_type', param: 'tools', mentions: ["'tools'", 'array', 'object'] }],
    [
      'a number as the call_id of a function_call_output',
      { model: MODEL, input: [{ type: 'function_call_output', call_id: 42, output: 'x' }] },
      { code: 'invalid_type', param: 'input[0].call_id', mentions: ["'input[0].call_id'", 'string', 'integer'] },
    ],
    [
      'a string as the content of the second message',
      {
        model: MODEL,
        input: [
          { role: 'user', content: 'a' },
          { role: 'user', content: 7 },
        ],
      },
      { code: 'invalid_type', param: 'input[1].content', mentions: ["'input[1].content'"] },
    ],
    ['an absent model', { input: 'hi' }, { code: 'missing_required_parameter', param: 'model', mentions: ["'model'"] }],
    [
      'a function_call_output without output',
      { model: MODEL, input: [{ type: 'function_call_output', call_id: 'call_1' }] },
      { code: 'missing_required_parameter', param: 'input[0].output', mentions: ["'input[0].output'"] },
    ],
    [
      'an unsupported truncation',
      { model: MODEL, input: 'hi', truncation: 'sometimes' },
      { code: 'invalid_value', param: 'truncation', mentions: ["'truncation'", '"sometimes"', "'auto'", "'disabled'"] },
    ],
    [
      'an unknown item type',
      { model: MODEL, input: [{ type: 'telepathy', id: 'x' }] },
      { code: 'invalid_value', param: 'input[0].type', mentions: ["'input[0].type'", 'telepathy'] },
    ],
    [
      'an unknown tool type',
      { model: MODEL, input: 'hi', tools: [{ type: 'programmatic_tool_calling' }, { type: 'teleporter' }] },
      { code: 'invalid_value', param: 'tools[1].type', mentions: ["'tools[1].type'", 'teleporter'] },
    ],
    ['a temperature above 2', { model: MODEL, input: 'hi', temperature: 3 }, { code: 'invalid_value', param: 'temperature', mentions: ["'temperature'"] }],
    [
      'an unknown previous_response_id',
      { model: MODEL, input: 'hi', previous_response_id: 'resp_does_not_exist' },
      { code: 'previous_response_not_found', param: 'previous_response_id', mentions: ["'resp_does_not_exist'"] },
    ],
    [
      'two tools with the same name',
      {
        model: MODEL,
        input: 'hi',
        tools: [
          { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } },
          { type: 'function', name: 'other', parameters: { type: 'object', properties: {} } },
          { type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } },
        ],
      },
      { code: 'duplicate_tool_name', param: 'tools[2].name', mentions: ["'lookup'", 'tools[0]', 'tools[2]'] },
    ],
    [
      'a programmatic-only tool without programmatic_tool_calling',
      { model: MODEL, input: 'hi', tools: [{ type: 'function', name: 'lookup', parameters: null, allowed_callers: ['programmatic'] }] },
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].allowed_callers', mentions: ['tools[0]', "'lookup'", 'programmatic_tool_calling'] },
    ],
    [
      'background: true with store: false',
      { model: MODEL, input: 'hi', background: true, store: false },
      { code: 'invalid_value', param: 'background', mentions: ['store: true'] },
    ],
    ['stream of the wrong type', { model: MODEL, input: 'hi', stream: 'yes' }, { code: 'invalid_type', param: 'stream', mentions: ["'stream'"] }],
  ])('answers %s with a 400 naming the parameter', async (_, body, expected) => {
    const error = await rejectionOf(server.client.responses.create(untyped(body)));
    expectSdkError(error, expected);
  });

  it('answers the same mistakes in the raw envelope too', async () => {
    const response = await postRaw(server, JSON.stringify({ model: MODEL, input: [{ type: 'function_call_output', call_id: 42, output: 'x' }] }));
    await expectErrorResponse(response, { code: 'invalid_type', param: 'input[0].call_id', mentions: ["'input[0].call_id'"] });
  });

  it('does not find a previous response created with store: false', async () => {
    const unstored = await server.client.responses.create({ model: MODEL, input: 'hi', store: false });
    const error = await rejectionOf(server.client.responses.create({ model: MODEL, input: 'again', previous_response_id: unstored.id }));
    expectSdkError(error, { code: 'previous_response_not_found', param: 'previous_response_id', mentions: [unstored.id] });
    // Nor can it be fetched.
    expectSdkError(await rejectionOf(server.client.responses.retrieve(unstored.id)), { code: 'response_not_found', mentions: [unstored.id] });
  });
});

describe('404s', () => {
  it.each<[string, (client: OpenAI) => PromiseLike<unknown>, ExpectedApiError]>([
    ['GET of an unknown response', (client) => client.responses.retrieve('resp_unknown'), { code: 'response_not_found', mentions: ["'resp_unknown'"] }],
    ['DELETE of an unknown response', (client) => client.responses.delete('resp_unknown'), { code: 'response_not_found', mentions: ["'resp_unknown'"] }],
    [
      'the input items of an unknown response',
      (client) => client.responses.inputItems.list('resp_unknown'),
      { code: 'response_not_found', mentions: ["'resp_unknown'"] },
    ],
    ['an unknown model', (client) => client.models.retrieve('gpt-unknown'), { code: 'model_not_found', param: 'model', mentions: ["'gpt-unknown'"] }],
    ['an unknown route', (client) => client.get('/no-such-thing'), { code: 'unknown_url', param: null, mentions: ['GET /v1/no-such-thing'] }],
  ])('answers %s with NotFoundError', async (_, call, expected) => {
    expectSdkError(await rejectionOf(call(server.client)), expected);
  });

  it.each<[string, string, string, ExpectedApiError]>([
    ['an unknown path', 'GET', '/v1/no-such-thing?x=1', { code: 'unknown_url', param: null, mentions: ['GET /v1/no-such-thing'] }],
    ['a method a known path does not take', 'PUT', '/v1/responses', { code: 'unknown_url', param: null, mentions: ['PUT /v1/responses'] }],
    ['a path outside /v1', 'GET', '/responses', { code: 'unknown_url', param: null, mentions: ['GET /responses'] }],
    ['GET of an unknown response', 'GET', '/v1/responses/resp_unknown', { code: 'response_not_found', mentions: ["'resp_unknown'"] }],
    ['an unknown model', 'GET', '/v1/models/gpt-unknown', { code: 'model_not_found', param: 'model', mentions: ["'gpt-unknown'"] }],
  ])('answers %s in the raw envelope', async (_, method, path, expected) => {
    await expectErrorResponse(await fetch(`${rootURL(server)}${path}`, { method }), expected);
  });
});

describe('query errors of GET /v1/responses/{id}/input_items', () => {
  let responseId: string;
  beforeAll(async () => {
    responseId = (await server.client.responses.create({ model: MODEL, input: 'hi' })).id;
  });

  it.each<[string, Record<string, unknown>, ExpectedApiError]>([
    ['an unknown order', { order: 'sideways' }, { code: 'invalid_value', param: 'order', mentions: ["'order'", '"sideways"', "'asc'", "'desc'"] }],
    ['a limit of 0', { limit: 0 }, { code: 'invalid_value', param: 'limit', mentions: ["'limit'"] }],
    ['a limit over 100', { limit: 101 }, { code: 'invalid_value', param: 'limit', mentions: ["'limit'"] }],
    ['an after naming no item', { after: 'msg_nowhere' }, { code: 'invalid_value', param: 'after', mentions: ["'msg_nowhere'"] }],
    ['an unknown query parameter', { colour: 'blue' }, { code: 'unknown_parameter', param: 'colour', mentions: ["'colour'"] }],
  ])('answers %s with a 400 naming it', async (_, query, expected) => {
    const error = await rejectionOf(server.client.responses.inputItems.list(responseId, query as OpenAI.Responses.InputItemListParams));
    expectSdkError(error, expected);
  });
});

describe('x-request-id', () => {
  it.each<[string, string, RequestInit]>([
    [
      'POST /v1/responses',
      '/v1/responses',
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, input: 'hi' }) },
    ],
    ['GET /v1/models', '/v1/models', { method: 'GET' }],
    ['GET /health', '/health', { method: 'GET' }],
  ])('is sent on a successful %s', async (_, path, init) => {
    const response = await fetch(`${rootURL(server)}${path}`, init);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(REQUEST_ID);
  });

  it('is fresh for every request and reaches the SDK', async () => {
    const first = await server.client.responses.create({ model: MODEL, input: 'hi' }).withResponse();
    const second = await server.client.responses.create({ model: MODEL, input: 'hi' }).withResponse();
    expect(first.request_id).toMatch(REQUEST_ID);
    expect(second.request_id).toMatch(REQUEST_ID);
    expect(first.request_id).not.toBe(second.request_id);
  });

  it('ignores a client-sent x-request-id', async () => {
    const response = await fetch(`${server.baseURL}/models`, { headers: { 'x-request-id': 'req_chosen_by_client' } });
    expect(response.headers.get('x-request-id')).toMatch(REQUEST_ID);
    expect(response.headers.get('x-request-id')).not.toBe('req_chosen_by_client');
  });
});

describe('the API key', () => {
  let guarded: RunningServer;
  beforeAll(async () => {
    guarded = await startServer({ config: { apiKey: 'k' } });
  });
  afterAll(() => guarded.close());

  it('rejects a wrong bearer with AuthenticationError', async () => {
    const wrong = new OpenAI({ apiKey: 'not-k', baseURL: guarded.baseURL, maxRetries: 0 });
    expectSdkError(await rejectionOf(wrong.responses.create({ model: MODEL, input: 'hi' })), { code: 'invalid_api_key', param: null, mentions: ['API key'] });
    expectSdkError(await rejectionOf(wrong.models.list()), { code: 'invalid_api_key', param: null });
  });

  it.each<[string, Record<string, string>]>([
    ['no Authorization header', {}],
    ['a bearer that only starts with the key', { authorization: 'Bearer kk' }],
    ['the key without the Bearer scheme', { authorization: 'k' }],
  ])('rejects %s with 401', async (_, headers) => {
    await expectErrorResponse(await fetch(`${guarded.baseURL}/models`, { headers }), { code: 'invalid_api_key', param: null });
  });

  it.each(['/health', '/health?probe=1'])('answers %s without a key', async (path) => {
    const response = await fetch(`${rootURL(guarded)}${path}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(REQUEST_ID);
    expect(await response.json()).toMatchObject({ status: 'ok' });
  });

  it('serves the right key', async () => {
    const response = await guarded.client.responses.create({ model: MODEL, input: 'hi' });
    expect(response.status).toBe('completed');
  });
});

describe('the stored-response routes', () => {
  it('GET /v1/responses/{id} returns the created response exactly', async () => {
    const created = await server.client.responses.create({
      model: MODEL,
      input: inlineProgram("text('stored')"),
      tools: [{ type: 'programmatic_tool_calling' }],
      metadata: { case: 'get' },
    });
    expect(created.output_text).toBe('stored');
    const { output_text: _sdkOnly, ...wire } = created;
    const fetched = await fetch(`${server.baseURL}/responses/${created.id}`);
    expect(fetched.status).toBe(200);
    const body = (await fetched.json()) as Record<string, unknown>;
    expect(body).not.toHaveProperty('output_text');
    expect(body).toEqual(wire);
    // Through the SDK, as a user reads it.
    expect(await server.client.responses.retrieve(created.id)).toEqual(created);
  });

  it('DELETE /v1/responses/{id} deletes it: GET, DELETE and previous_response_id then find nothing', async () => {
    const created = await server.client.responses.create({ model: MODEL, input: 'to delete' });
    const deleted = await fetch(`${server.baseURL}/responses/${created.id}`, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ id: created.id, object: 'response.deleted', deleted: true });
    expectSdkError(await rejectionOf(server.client.responses.retrieve(created.id)), { code: 'response_not_found', mentions: [created.id] });
    expectSdkError(await rejectionOf(server.client.responses.delete(created.id)), { code: 'response_not_found', mentions: [created.id] });
    expectSdkError(await rejectionOf(server.client.responses.inputItems.list(created.id)), { code: 'response_not_found', mentions: [created.id] });
    expectSdkError(await rejectionOf(server.client.responses.create({ model: MODEL, input: 'next', previous_response_id: created.id })), {
      code: 'previous_response_not_found',
      param: 'previous_response_id',
      mentions: [created.id],
    });
  });

  it('DELETE naming a JSON body it does not send (as curl users write it) deletes; a POST without one is still a 400', async () => {
    const created = await server.client.responses.create({ model: MODEL, input: 'to delete by hand' });
    const url = `${server.baseURL}/responses/${created.id}`;
    const deleted = await fetch(url, { method: 'DELETE', headers: { 'content-type': 'application/json' } });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toMatchObject({ id: created.id, deleted: true });
    await expectErrorResponse(await postRaw(server, '', { 'content-type': 'application/json' }), { code: 'invalid_json', mentions: ['empty'] });
  });

  it('DELETE through the SDK resolves', async () => {
    const created = await server.client.responses.create({ model: MODEL, input: 'to delete' });
    await server.client.responses.delete(created.id);
    expectSdkError(await rejectionOf(server.client.responses.retrieve(created.id)), { code: 'response_not_found' });
  });

  describe('GET /v1/responses/{id}/input_items', () => {
    const texts = ['first', 'second', 'third', 'fourth', 'fifth'];
    let responseId: string;
    beforeAll(async () => {
      const created = await server.client.responses.create({
        model: MODEL,
        input: [
          { role: 'user', content: 'first' },
          { role: 'user', content: [{ type: 'input_text', text: 'second' }] },
          { type: 'message', role: 'user', content: 'third' },
          { role: 'developer', content: 'fourth' },
          { role: 'user', content: 'fifth' },
        ],
      });
      responseId = created.id;
    });

    type Listed = { id: string; type: string; role?: string; content?: unknown; status?: string };
    async function listRaw(query: string): Promise<{ object: string; data: Listed[]; first_id: string | null; last_id: string | null; has_more: boolean }> {
      const response = await fetch(`${server.baseURL}/responses/${responseId}/input_items${query}`);
      expect(response.status).toBe(200);
      return (await response.json()) as { object: string; data: Listed[]; first_id: string | null; last_id: string | null; has_more: boolean };
    }
    const textOf = (item: Listed): unknown => (item.content as { text?: unknown }[] | undefined)?.[0]?.text;

    it('lists newest first by default, string content as input_text parts', async () => {
      const page = await listRaw('');
      expect(page.object).toBe('list');
      expect(page.data.map(textOf)).toEqual([...texts].reverse());
      for (const item of page.data) {
        expect(item.type).toBe('message');
        expect(item.id).toMatch(/^msg_/);
        expect(item.content).toEqual([{ type: 'input_text', text: textOf(item) }]);
      }
      expect(page.data.map((item) => item.role)).toEqual(['user', 'developer', 'user', 'user', 'user']);
      expect(new Set(page.data.map((item) => item.id)).size).toBe(texts.length);
      expect(page.first_id).toBe(page.data[0]?.id);
      expect(page.last_id).toBe(page.data.at(-1)?.id);
      expect(page.has_more).toBe(false);
    });

    it('lists every message with status completed, whatever form its content was sent in', async () => {
      const page = await listRaw('');
      expect(page.data.map((item) => [textOf(item), item.status])).toEqual([...texts].reverse().map((text) => [text, 'completed']));
    });

    it('lists oldest first with order=asc', async () => {
      const page = await listRaw('?order=asc');
      expect(page.data.map(textOf)).toEqual(texts);
    });

    it('pages with limit, has_more and after', async () => {
      const first = await listRaw('?order=asc&limit=2');
      expect(first.data.map(textOf)).toEqual(['first', 'second']);
      expect(first.has_more).toBe(true);
      expect(first.last_id).toBe(first.data[1]?.id);
      const second = await listRaw(`?order=asc&limit=2&after=${first.last_id}`);
      expect(second.data.map(textOf)).toEqual(['third', 'fourth']);
      expect(second.has_more).toBe(true);
      const third = await listRaw(`?order=asc&limit=2&after=${second.last_id}`);
      expect(third.data.map(textOf)).toEqual(['fifth']);
      expect(third.has_more).toBe(false);
    });

    it('pages through the SDK: the auto-paginator visits every item once, newest first', async () => {
      const seen: unknown[] = [];
      const page = await server.client.responses.inputItems.list(responseId, { limit: 2 });
      expect(page.data).toHaveLength(2);
      expect(page.has_more).toBe(true);
      for await (const item of server.client.responses.inputItems.list(responseId, { limit: 2 })) {
        seen.push(item.type === 'message' ? (item.content[0] as { text?: string } | undefined)?.text : item.type);
      }
      expect(seen).toEqual([...texts].reverse());
    });
  });

  it('lists only the input of its own request when continuing a conversation', async () => {
    const first = await server.client.responses.create({ model: MODEL, input: 'one' });
    const second = await server.client.responses.create({ model: MODEL, input: 'two', previous_response_id: first.id });
    const page = await server.client.responses.inputItems.list(second.id);
    expect(page.data).toHaveLength(1);
    expect(page.data[0]).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'two' }] });
  });
});

describe('the model routes', () => {
  it('GET /v1/models lists the configured models', async () => {
    const page = await server.client.models.list();
    expect(page.data.map((model) => model.id)).toEqual(MODELS);
    for (const model of page.data) {
      expect(model).toEqual({ id: model.id, object: 'model', created: expect.any(Number), owned_by: expect.any(String) });
    }
  });

  it.each(MODELS)('GET /v1/models/%s returns that model', async (id) => {
    const model = await server.client.models.retrieve(id);
    const listed = (await server.client.models.list()).data.find((candidate) => candidate.id === id);
    expect(model).toEqual(listed);
  });
});

describe('after every error above', () => {
  it('the same server still serves requests, programs included', async () => {
    const response = await server.client.responses.create({
      model: MODEL,
      input: inlineProgram("text('still ' + 'serving')"),
      tools: [{ type: 'programmatic_tool_calling' }],
    });
    expect(response.status).toBe('completed');
    expect(response.output.map((item) => item.type)).toEqual(['program', 'program_output', 'message']);
    expect(response.output_text).toBe('still serving');
    const health = await fetch(`${rootURL(server)}/health`);
    expect(health.status).toBe(200);
  });
});
