import http from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { FIXED_LIMITS } from '../schemas/fixed-limits.ts';
import { expectErrorResponse, rejectionOf } from './support/api-errors.ts';
import { inlineProgram, programOutputOf } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// A large body is parsed in a thread beside the server's loop (server/api/http/json-body.ts): JSON.parse
// of millions of short strings takes seconds, which no request may hold the loop for.

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

const origin = (): URL => new URL(server.baseURL);

/** POSTs `body` to /v1/responses with node:http, which says when the body is all written; the answer as a fetch Response. */
function post(body: Buffer): Promise<{ written: Promise<void>; answer: Promise<Response> }> {
  return new Promise((resolve, reject) => {
    let written!: () => void;
    const writtenPromise = new Promise<void>((done) => (written = done));
    const answer = new Promise<Response>((done, fail) => {
      const request = http.request(
        {
          host: origin().hostname,
          port: origin().port,
          method: 'POST',
          path: '/v1/responses',
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          const headers = Object.entries(response.headers).flatMap(([name, value]) => (typeof value === 'string' ? [[name, value] as [string, string]] : []));
          response.on('end', () => done(new Response(Buffer.concat(chunks), { status: response.statusCode!, headers })));
        },
      );
      request.on('error', fail);
      request.end(body, written);
    });
    resolve({ written: writtenPromise, answer });
  });
}

it('while a body of three million short strings is parsed, the server answers others; the broken body is then a 400', async () => {
  // 27 MiB that JSON.parse spends seconds on before it finds the body cut short.
  const strings = Array.from({ length: 3_000_000 }, (_, index) => `"${index}"`).join(',');
  const body = Buffer.from(`{"model":"m","input":"hi","metadata":{"x":[${strings}]`);
  const { written, answer } = await post(body);
  await written;
  let answeredFirst: string | undefined;
  const health = fetch(`${origin().origin}/health`).then((response) => {
    answeredFirst ??= 'health';
    return response.status;
  });
  const big = answer.then((result) => {
    answeredFirst ??= 'big body';
    return result;
  });
  expect(await health).toBe(200);
  const result = await big;
  expect(answeredFirst).toBe('health');
  await expectErrorResponse(result, { code: 'invalid_json', param: null, mentions: ['JSON'] });
}, 120_000);

it('a large body is served as a small one is, and refused for the same faults', async () => {
  const filler = 'x'.repeat(200_000);
  const ok = await server.client.responses.create({
    model: 'm',
    store: false,
    input: inlineProgram(`text("${filler}".length + " chars")`),
    tools: [{ type: 'programmatic_tool_calling' }],
  });
  expect(programOutputOf(ok)).toMatchObject({ status: 'completed', result: '200000 chars' });

  const poisoned = await post(Buffer.from(`{"model":"m","input":"${filler}","metadata":{"__proto__":{"polluted":"yes"}}}`));
  await expectErrorResponse(await poisoned.answer, { code: 'invalid_json', param: null, mentions: ['prototype'] });
  expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();

  const deep = await post(Buffer.from(`{"model":"m","input":"${filler}","metadata":${'['.repeat(200)}${']'.repeat(200)}}`));
  await expectErrorResponse(await deep.answer, { code: 'invalid_json', param: null, mentions: ['deeper than 128 levels'] });
});

it('metadata past the hosted 16 keys is refused as soon as the body is parsed, with the 400 validation gives a small body, wherever metadata is', async () => {
  const keys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`k${index}`, 'v']));
  const expected = { code: 'invalid_value', param: 'metadata', mentions: ["Invalid value for 'metadata': at most 16 keys."] } as const;
  // 17 keys in a small body (parsed on the loop), and 1,000,000 (13 MiB, parsed in the thread).
  const small = await post(Buffer.from(JSON.stringify({ model: 'm', input: 'hi', metadata: keys(17) })));
  await expectErrorResponse(await small.answer, expected);
  const huge = await post(Buffer.from(JSON.stringify({ model: 'm', input: 'hi', metadata: keys(1_000_000) })));
  await expectErrorResponse(await huge.answer, expected);
  // Sixteen are accepted.
  const sixteen = await server.client.responses.create({ model: 'm', input: 'hi', store: false, metadata: keys(16) });
  expect(Object.keys(sixteen.metadata ?? {})).toHaveLength(16);
  // On the Agents API, in a session's inline agent: the same bound, named where it is.
  const session = await fetch(`${server.baseURL}/agents/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agent: { model: 'm', metadata: keys(200_000) }, environment: { type: 'none' } }),
  });
  await expectErrorResponse(session, { code: 'invalid_value', param: 'agent.metadata', mentions: ['at most 16 keys'] });
}, 120_000);

/** The first event a WebSocket `response.create` gets. */
async function firstSocketEvent(event: Record<string, unknown>): Promise<{ type: string; error?: { code?: string; param?: string | null; message?: string } }> {
  const socket = new WebSocket(`${server.baseURL.replace(/^http/, 'ws')}/responses`);
  try {
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const first = new Promise<string>((resolve, reject) => {
      socket.once('message', (data) => resolve(String(data)));
      socket.once('close', (code) => reject(new Error(`closed ${code}`)));
    });
    socket.send(JSON.stringify({ type: 'response.create', ...event }));
    return JSON.parse(await first) as { type: string };
  } finally {
    socket.terminate();
  }
}

it("every string is held to the hosted API's 10,485,760 characters as soon as the body is parsed, named where it is, over HTTP, a WebSocket and the Agents API", async () => {
  const limit = FIXED_LIMITS.stringChars.value;
  expect(limit).toBe(10_485_760);
  const message = `Invalid 'input[0].content[0].text': string too long. Expected a string with maximum length ${limit}, but got a string with length ${limit + 1} instead.`;
  const tooLong = [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: 'x'.repeat(limit + 1) }] }];
  const error = await rejectionOf(server.client.responses.create({ model: 'm', input: tooLong, store: false }));
  expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  expect(error).toMatchObject({ status: 400, code: 'string_above_max_length', param: 'input[0].content[0].text', message: `400 ${message}` });
  const overSocket = await firstSocketEvent({ model: 'm', input: tooLong, store: false });
  expect(overSocket).toMatchObject({ type: 'error', error: { code: 'string_above_max_length', param: 'input[0].content[0].text', message } });
  const agent = await fetch(`${server.baseURL}/agents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', instructions: 'y'.repeat(limit + 5) }),
  });
  await expectErrorResponse(agent, { code: 'string_above_max_length', param: 'instructions', mentions: [`got a string with length ${limit + 5}`] });
  // At the limit, a string is taken, and its tokens counted.
  const atLimit = await server.client.responses.create({
    model: 'm',
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'x'.repeat(limit) }] }],
    store: false,
  });
  expect(atLimit.status).toBe('completed');
  expect(atLimit.usage!.input_tokens).toBeGreaterThan(limit / 16);
}, 120_000);

it('a body holding more JSON values than the fixed limit is refused as soon as it is parsed, naming the member that holds them; one at the limit is served', async () => {
  const limit = 200_000; // PTC_MAX_BODY_VALUES's default
  // 13 values around the examples: the body, model, input, store, tools, the tool, its type, name and strict, parameters, its type, properties, examples.
  const body = (examples: number) => ({
    model: 'm',
    input: 'hi',
    store: false,
    tools: [{ type: 'function', name: 'f', strict: false, parameters: { type: 'object', properties: {}, examples: new Array(examples).fill(0) } }],
  });
  const atLimit = await post(Buffer.from(JSON.stringify(body(limit - 13))));
  expect((await atLimit.answer).status).toBe(200);
  const past = await post(Buffer.from(JSON.stringify(body(limit - 12))));
  await expectErrorResponse(await past.answer, {
    code: 'too_many_values',
    param: 'tools',
    mentions: [`more than ${limit} JSON values (PTC_MAX_BODY_VALUES)`, "within 'tools'"],
  });
  // Over a WebSocket, the same.
  const overSocket = await firstSocketEvent({ ...body(limit) });
  expect(overSocket).toMatchObject({ type: 'error', error: { code: 'too_many_values', param: 'tools' } });
}, 120_000);

it("PTC_MAX_INPUT_ITEMS holds for a large body as for a small one: refused in the parsing thread, with the route's own message", async () => {
  const items = (count: number) => Array.from({ length: count }, () => ({ role: 'user', content: 'x' }));
  const tooMany = Buffer.from(JSON.stringify({ model: 'm', store: false, input: items(5_001) }));
  expect(tooMany.length).toBeGreaterThan(64 * 1024);
  await expectErrorResponse(await (await post(tooMany)).answer, {
    code: 'too_many_input_items',
    param: 'input',
    message: 'input has 5001 items; a request may carry at most 5000 (PTC_MAX_INPUT_ITEMS). Continue a long conversation with previous_response_id.',
  });
  const tokens = await fetch(`${server.baseURL}/responses/input_tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: tooMany });
  await expectErrorResponse(tokens, { code: 'too_many_input_items', param: 'input' });
  const overSocket = await firstSocketEvent({ model: 'm', store: false, input: items(5_001) });
  expect(overSocket).toMatchObject({ type: 'error', error: { code: 'too_many_input_items', param: 'input' } });
  const enough = await server.client.responses.create({ model: 'm', store: false, input: items(5_000) as OpenAI.Responses.ResponseInput });
  expect(enough.status).toBe('completed');
}, 120_000);
