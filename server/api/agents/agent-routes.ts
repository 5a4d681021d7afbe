import type { FastifyInstance } from 'fastify';
import { AgentListQuery, CreateAgentRequest, UpdateAgentRequest, type AgentObject } from '../../../schemas/agents.ts';
import { newSortableId } from '../../platform/ids.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';
import type { RecordStore } from '../../platform/stores/record-store.ts';
import { agentDefinition } from './agent-definition.ts';
import { cursorPage } from '../http/list-page.ts';
import { agentNotFound } from './new-session.ts';

type AgentParams = { Params: { agent_id: string } };

/** The Agents API's agents (`client.beta.agents.*`): saved definitions a session may start from. */
export function registerAgentRoutes(app: FastifyInstance, records: () => RecordStore): void {
  const found = async (id: string): Promise<AgentObject> => {
    const agent = await records().get<AgentObject>('agent', id);
    if (!agent) throw agentNotFound(id);
    return agent;
  };

  app.post('/v1/agents', async (request): Promise<AgentObject> => {
    const body = parseOrThrow(CreateAgentRequest, request.body ?? {});
    const now = Math.floor(Date.now() / 1000);
    const agent: AgentObject = { id: newSortableId('agent'), object: 'agent', created_at: now, updated_at: now, ...agentDefinition(body, undefined, '') };
    await records().put('agent', agent.id, agent);
    return agent;
  });

  app.get('/v1/agents', async (request) => cursorPage(await records().list<AgentObject>('agent'), parseOrThrow(AgentListQuery, request.query), 'agent', true));

  app.get<AgentParams>('/v1/agents/:agent_id', async (request) => found(request.params.agent_id));

  app.post<AgentParams>('/v1/agents/:agent_id', async (request): Promise<AgentObject> => {
    const body = parseOrThrow(UpdateAgentRequest, request.body ?? {});
    const agent = await found(request.params.agent_id);
    const { id, object, created_at } = agent;
    const updated: AgentObject = { id, object, created_at, updated_at: Math.floor(Date.now() / 1000), ...agentDefinition(body, agent, '') };
    await records().put('agent', id, updated);
    return updated;
  });

  app.delete<AgentParams>('/v1/agents/:agent_id', async (request) => {
    const id = request.params.agent_id;
    if (!(await records().delete('agent', id))) throw agentNotFound(id);
    return { id, deleted: true, object: 'agent.deleted' as const };
  });
}
