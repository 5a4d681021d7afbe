import type { FastifyInstance } from 'fastify';
import { DOCS_URL, PACKAGE } from '../package-info.ts';

/**
 * `GET /` and `GET /v1`: a person (or a misconfigured base URL) reaching the server's root is
 * told what answers here and where the API is, rather than `unknown_url`.
 */
export function registerIndexRoutes(app: FastifyInstance): void {
  const answer = (request: { protocol: string; host: string }) => ({
    object: 'ptc_emulator',
    name: PACKAGE.name,
    version: PACKAGE.version,
    base_url: `${request.protocol}://${request.host}/v1`,
    docs: DOCS_URL,
    endpoints: [
      'POST /v1/responses',
      'GET /v1/responses/{id}',
      'DELETE /v1/responses/{id}',
      'POST /v1/responses/{id}/cancel',
      'GET /v1/responses/{id}/input_items',
      'POST /v1/responses/input_tokens',
      'POST /v1/responses/compact',
      'POST /v1/conversations',
      'GET /v1/conversations/{id}',
      'POST /v1/conversations/{id}',
      'DELETE /v1/conversations/{id}',
      'POST /v1/conversations/{id}/items',
      'GET /v1/conversations/{id}/items',
      'GET /v1/conversations/{id}/items/{item_id}',
      'DELETE /v1/conversations/{id}/items/{item_id}',
      'POST /v1/agents',
      'GET /v1/agents',
      'GET /v1/agents/{id}',
      'POST /v1/agents/{id}',
      'DELETE /v1/agents/{id}',
      'POST /v1/agents/sessions',
      'GET /v1/agents/sessions',
      'GET /v1/agents/sessions/{id}',
      'POST /v1/agents/sessions/{id}',
      'DELETE /v1/agents/sessions/{id}',
      'GET /v1/agents/sessions/{id}/items',
      'GET /v1/agents/sessions/{id}/turns',
      'GET /v1/agents/sessions/{id}/turns/{turn_id}',
      'GET /v1/agents/sessions/{id}/turns/{turn_id}/items',
      'POST /v1/agents/sessions/{id}/events',
      'GET /v1/agents/sessions/{id}/events',
      'POST /v1/vaults',
      'GET /v1/vaults',
      'GET /v1/models',
      'GET /v1/emulator/journal',
      'DELETE /v1/emulator/journal',
      'GET /v1/emulator/explore',
      'DELETE /v1/emulator/explore',
      'GET /health',
      'GET /metrics',
    ],
  });
  app.get('/', async (request) => answer(request));
  app.get('/v1', async (request) => answer(request));
}
