import type { FastifyInstance } from 'fastify';
import type { ProgramEngine } from '../../runtime/program-runtime.ts';
import { WorkerPool } from '../../runtime/worker/worker-pool.ts';

/** `GET /health`: liveness, with the paused programs held and, with worker processes, their pids. */
export function registerHealthRoutes(app: FastifyInstance, runtime: ProgramEngine): void {
  app.get('/health', async () => ({
    status: 'ok',
    paused_programs: runtime.stats().paused,
    ...(runtime instanceof WorkerPool ? { workers: runtime.pids } : {}),
  }));
}
