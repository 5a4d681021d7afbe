import type { FastifyInstance } from 'fastify';
import type { ProgramRuntime } from '../../runtime/program-runtime.ts';

/** `GET /health`: liveness, with the number of paused programs held. */
export function registerHealthRoutes(app: FastifyInstance, runtime: ProgramRuntime): void {
  app.get('/health', async () => ({ status: 'ok', paused_programs: runtime.stats().paused }));
}
