import type { FastifyInstance } from 'fastify';
import { DOCS_URL, PACKAGE } from '../../platform/package-info.ts';

/** A route as the index lists it: `GET /v1/responses/{id}`. */
function endpointOf(method: string, url: string): string {
  return `${method} ${url.replace(/:(\w+)/g, '{$1}')}`;
}

/**
 * `GET /` and `GET /v1`: a person (or a misconfigured base URL) reaching the server's root is
 * told what answers here and where the API is, rather than `unknown_url`. The endpoints are the
 * routes the server registered (the API under `/v1`, `/health`, `/metrics`), collected as they
 * are added: call this before any other route is registered.
 */
export function registerIndexRoutes(app: FastifyInstance): void {
  const endpoints = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (!(route.url.startsWith('/v1/') || route.url === '/health' || route.url === '/metrics')) return;
    // A WebSocket route (the Responses API's WebSocket mode) is listed as such, not as a GET.
    const socket = route as { websocket?: boolean; wsHandler?: unknown };
    const methods = socket.websocket || socket.wsHandler ? ['WS'] : [route.method].flat();
    for (const method of methods) if (method !== 'HEAD') endpoints.add(endpointOf(method, route.url));
  });
  const answer = (request: { protocol: string; host: string }) => ({
    object: 'ptc_emulator',
    name: PACKAGE.name,
    version: PACKAGE.version,
    base_url: `${request.protocol}://${request.host}/v1`,
    docs: DOCS_URL,
    endpoints: [...endpoints],
  });
  app.get('/', async (request) => answer(request));
  app.get('/v1', async (request) => answer(request));
}
