import type { FastifyInstance } from 'fastify';
import type { ModelObject } from '../../../schemas/response.ts';
import { ApiError } from '../../platform/api-error.ts';

/** `GET /v1/models`: the names the emulator lists. Requests may still name any model. */
export function registerModelRoutes(app: FastifyInstance, models: readonly string[], startedAt: number): void {
  const listed = (id: string): ModelObject => ({ id, object: 'model', created: startedAt, owned_by: 'ptc-emulator' });

  app.get('/v1/models', async () => ({ object: 'list', data: models.map(listed) }));

  app.get<{ Params: { id: string } }>('/v1/models/:id', async (request) => {
    const { id } = request.params;
    if (!models.includes(id)) throw new ApiError('model_not_found', `The model '${id}' does not exist.`, 'model');
    return listed(id);
  });
}
