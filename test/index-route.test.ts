import type { FastifyInstance, HTTPMethods } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../server/app.ts';

/** GET / lists what answers on the server: the routes it registered, not a list kept by hand beside them. */
describe('GET / and GET /v1', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildServer({ logger: false, env: {}, config: { store: 'memory', workers: 0 } });
  });
  afterAll(() => app.close());

  it('list every route of the API, each one the server answers', async () => {
    const reply = await app.inject({ method: 'GET', url: '/' });
    const { endpoints } = reply.json() as { endpoints: string[] };
    expect(endpoints).toEqual(
      expect.arrayContaining([
        'POST /v1/responses',
        'WS /v1/responses',
        'GET /v1/responses/{id}',
        'POST /v1/agents/automations',
        'POST /v1/agents/automations/{automation_id}/invocations',
        'POST /v1/vaults/{vault_id}/credentials',
        'GET /v1/emulator/explore',
        'GET /health',
        'GET /metrics',
      ]),
    );
    for (const endpoint of endpoints) {
      const [method, path] = endpoint.split(' ') as [string, string];
      if (method === 'WS') continue;
      expect(app.hasRoute({ method: method as HTTPMethods, url: path.replace(/\{(\w+)\}/g, ':$1') }), endpoint).toBe(true);
    }
    expect(new Set(endpoints).size).toBe(endpoints.length);
    expect((await app.inject({ method: 'GET', url: '/v1' })).json()).toEqual(reply.json());
  });
});
