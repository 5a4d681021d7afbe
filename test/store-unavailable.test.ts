import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { closedPort } from './support/ports.ts';
import { inlineProgram, programOutputOf } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// PTC_STORE=redis with nothing listening where Redis should be: the server says so on /health
// and answers a request that needs the store 503 store_unavailable, not 500; a request that
// needs no store is served as usual.

let server: RunningServer;
let redisUrl: string;
beforeAll(async () => {
  redisUrl = `redis://127.0.0.1:${await closedPort()}`;
  server = await startServer({ config: { store: 'redis', redisUrl } });
});
afterAll(() => server.close());

it('GET /health is 503 unavailable and says why', async () => {
  const health = await fetch(`${server.baseURL.replace(/\/v1$/, '')}/health`);
  expect(health.status).toBe(503);
  const body = (await health.json()) as { status: string; store: { status: string; error: string } };
  expect(body.status).toBe('unavailable');
  expect(body.store.status).toBe('unavailable');
  expect(body.store.error).toMatch(/Redis ping failed/);
});

it('a request that stores its response is answered 503 store_unavailable', async () => {
  const error = await rejectionOf(server.client.responses.create({ model: 'm', input: 'hello' }));
  expectSdkError(error, { code: 'store_unavailable', param: null, mentions: ['Redis', 'Retry later'] });
});

it('a request naming a previous response is answered 503 store_unavailable', async () => {
  const error = await rejectionOf(server.client.responses.create({ model: 'm', input: 'hello', previous_response_id: 'resp_123', store: false }));
  expectSdkError(error, { code: 'store_unavailable', param: null });
});

it('a request that needs no store is served', async () => {
  const response = await server.client.responses.create({
    model: 'm',
    store: false,
    input: inlineProgram('text("fine")'),
    tools: [{ type: 'programmatic_tool_calling' }],
  });
  expect(programOutputOf(response)).toMatchObject({ status: 'completed', result: 'fine' });
});
