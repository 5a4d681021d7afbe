import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * The HTTP request a piece of work is done for. The stand-in model is asked deep inside a
 * turn, with no handle on the request; a replay's divergence must still reach that request's
 * journal entry and log. (A background turn runs in its creating request's scope: its
 * divergences reach the log, and that request's entry only if it is still open.)
 */
const scope = new AsyncLocalStorage<FastifyRequest>();

export function scopeRequests(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => scope.run(request, done));
}

export function currentRequest(): FastifyRequest | undefined {
  return scope.getStore();
}
