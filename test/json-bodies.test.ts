import http from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorResponse } from './support/api-errors.ts';
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
