import type { FastifyInstance } from 'fastify';
import { WorkerPool, type ProgramEngine } from '../../../runtime/index.ts';
import { StoreUnavailableError, type ResponseStore } from '../../platform/stores/response-store.ts';

/**
 * `GET /health`: whether this instance can serve, with the paused programs held and, with
 * worker processes, their pids. A store it cannot reach makes it 503 `unavailable`, saying why:
 * a load balancer then sends requests elsewhere, and a user sees why every request would fail.
 */
export function registerHealthRoutes(app: FastifyInstance, runtime: ProgramEngine, store: ResponseStore): void {
  app.get('/health', async (_request, reply) => {
    let storeProblem: string | undefined;
    try {
      await store.check?.();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      storeProblem = error.message;
    }
    return reply.status(storeProblem === undefined ? 200 : 503).send({
      status: storeProblem === undefined ? 'ok' : 'unavailable',
      store: storeProblem === undefined ? { status: 'ok' } : { status: 'unavailable', error: storeProblem },
      paused_programs: runtime.stats().paused,
      ...(runtime instanceof WorkerPool ? { workers: runtime.pids } : {}),
    });
  });
}
