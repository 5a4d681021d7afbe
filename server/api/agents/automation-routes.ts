import type { FastifyInstance } from 'fastify';
import {
  AgentListQuery,
  AutomationListQuery,
  CreateAutomationRequest,
  UpdateAutomationRequest,
  type AgentObject,
  type AutomationInvocation,
  type AutomationObject,
  type AutomationTarget,
  type AutomationTargetParam,
} from '../../../schemas/agents.ts';
import { ApiError } from '../../platform/api-error.ts';
import { newSortableId } from '../../platform/ids.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';
import type { RecordStore } from '../../platform/stores/record-store.ts';
import type { AgentHarness } from './harness.ts';
import { cursorPage } from '../http/list-page.ts';
import { agentNotFound, newSessionRecord, resolveAgent, sessionAgent, sessionNotFound } from './new-session.ts';

type AutomationParams = { Params: { automation_id: string } };
type InvocationParams = { Params: { automation_id: string; invocation_id: string } };

function automationNotFound(id: string): ApiError {
  return new ApiError('automation_not_found', `Automation with id '${id}' not found.`, 'automation_id');
}

/**
 * Automations (`client.beta.agents.automations`): their definitions round-trip, pause and resume,
 * and `invocations.create` runs one now, for real: a new session with the target's input, or
 * the instructions as a message into the target's session. The clock never fires them: the
 * emulator has no scheduler (docs/DEVIATIONS.md#the-agents-api).
 */
export function registerAutomationRoutes(app: FastifyInstance, records: RecordStore, harness: AgentHarness): void {
  const found = async (id: string): Promise<AutomationObject> => {
    const automation = await records.get<AutomationObject>('automation', id);
    if (!automation) throw automationNotFound(id);
    return automation;
  };

  /** A target as it is kept and returned, its agent and session checked now. */
  const targetOf = async (target: AutomationTargetParam): Promise<AutomationTarget> => {
    if (target.type === 'existing_session') {
      if (!(await harness.load(target.session_id))) throw sessionNotFound(target.session_id, 'target.session_id');
      return { type: target.type, session_id: target.session_id, instructions: target.instructions };
    }
    const resolved = await resolveAgent(records, { agentId: target.agent_id, agent: target.agent, environment: target.environment }, 'target.');
    const agent = target.agent ? (({ name: _name, ...settings }) => settings)(sessionAgent(resolved.agent)) : null;
    return {
      type: target.type,
      agent,
      agent_id: target.agent_id ?? null,
      environment: { type: 'none' },
      input: target.input.map((message) => ({ content: message.content, role: 'user', type: 'message' })),
      metadata: target.metadata ?? {},
      vault_ids: target.vault_ids ?? [],
    };
  };

  app.post('/v1/agents/automations', async (request): Promise<AutomationObject> => {
    const body = parseOrThrow(CreateAutomationRequest, request.body ?? {});
    const common = {
      id: newSortableId('auto'),
      object: 'agent.automation' as const,
      name: body.name,
      created_at: Math.floor(Date.now() / 1000),
      created_by: { type: 'developer' as const },
      metadata: body.metadata ?? {},
      target: await targetOf(body.target),
      pause_reason: null,
    };
    const automation: AutomationObject =
      body.type === 'periodic'
        ? { ...common, type: 'periodic', expression: body.expression, timezone: body.timezone, status: 'active' }
        : { ...common, type: 'once', run_at: body.run_at, status: 'active' };
    await records.put('automation', automation.id, automation);
    return automation;
  });

  app.get('/v1/agents/automations', async (request) => {
    const query = parseOrThrow(AutomationListQuery, request.query);
    const automations = (await records.list<AutomationObject>('automation')).filter(
      (automation) => query.session_id === undefined || (automation.target.type === 'existing_session' && automation.target.session_id === query.session_id),
    );
    return cursorPage(automations, query, 'automation', true);
  });

  app.get<AutomationParams>('/v1/agents/automations/:automation_id', async (request) => found(request.params.automation_id));

  app.post<AutomationParams>('/v1/agents/automations/:automation_id', async (request): Promise<AutomationObject> => {
    const body = parseOrThrow(UpdateAutomationRequest, request.body ?? {});
    const automation = await found(request.params.automation_id);
    if (automation.type === 'periodic' && body.run_at !== undefined)
      throw new ApiError('invalid_value', "Invalid parameter 'run_at': a periodic automation runs on its 'expression', not at one time.", 'run_at');
    if (automation.type === 'once' && (body.expression !== undefined || body.timezone !== undefined)) {
      throw new ApiError(
        'invalid_value',
        `Invalid parameter '${body.expression !== undefined ? 'expression' : 'timezone'}': a one-time automation runs at its 'run_at'.`,
        body.expression !== undefined ? 'expression' : 'timezone',
      );
    }
    const updated = {
      ...automation,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
      ...(body.target !== undefined ? { target: await targetOf(body.target) } : {}),
      ...(body.expression !== undefined ? { expression: body.expression } : {}),
      ...(body.timezone !== undefined ? { timezone: body.timezone } : {}),
      ...(body.run_at !== undefined ? { run_at: body.run_at } : {}),
    } as AutomationObject;
    await records.put('automation', updated.id, updated);
    return updated;
  });

  app.delete<AutomationParams>('/v1/agents/automations/:automation_id', async (request) => {
    const id = request.params.automation_id;
    await found(id);
    await records.deleteChildren('automation_invocation', id);
    await records.delete('automation', id);
    return { id, deleted: true, object: 'agent.automation.deleted' as const };
  });

  for (const [action, status] of [
    ['pause', 'paused'],
    ['resume', 'active'],
  ] as const) {
    app.post<AutomationParams>(`/v1/agents/automations/:automation_id/${action}`, async (request): Promise<AutomationObject> => {
      const automation = await found(request.params.automation_id);
      if (automation.status === 'completed')
        throw new ApiError('invalid_value', `Automation '${automation.id}' has completed: it cannot ${action}.`, 'automation_id');
      const updated = { ...automation, status } as AutomationObject;
      await records.put('automation', updated.id, updated);
      return updated;
    });
  }

  app.post<AutomationParams>('/v1/agents/automations/:automation_id/invocations', async (request): Promise<AutomationInvocation> => {
    const automation = await found(request.params.automation_id);
    const invocation: AutomationInvocation = {
      id: newSortableId('autoinv'),
      object: 'agent.automation.invocation',
      automation_id: automation.id,
      created_at: Math.floor(Date.now() / 1000),
      scheduled_at: null,
      session_id: null,
      status: 'completed',
      skip_reason: null,
      error: null,
      source: { type: 'manual' },
    };
    try {
      invocation.session_id = await invoke(automation.target);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      // What the target could not do is the invocation's outcome, not this request's.
      Object.assign(invocation, { status: 'failed', error: { code: error.code, message: error.message } });
      if (automation.target.type === 'existing_session') invocation.session_id = automation.target.session_id;
    }
    await records.put('automation_invocation', invocation.id, invocation, automation.id);
    return invocation;
  });

  /** Runs a target now; the session it ran in. */
  const invoke = async (target: AutomationTarget): Promise<string> => {
    if (target.type === 'existing_session') {
      if (!(await harness.load(target.session_id))) throw sessionNotFound(target.session_id);
      await harness.post(target.session_id, [
        { type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text: target.instructions }] }] },
      ]);
      return target.session_id;
    }
    // The agent as it was resolved when the target was set, on the saved agent it names (which
    // must still exist).
    const base = target.agent_id === null ? undefined : await records.get<AgentObject>('agent', target.agent_id);
    if (target.agent_id !== null && !base) throw agentNotFound(target.agent_id, 'target.agent_id');
    const agent = target.agent ? { name: base?.name ?? null, metadata: {}, ...target.agent } : base!;
    const record = newSessionRecord(
      { environment: target.environment, metadata: target.metadata, vaultIds: target.vault_ids },
      { ...(base ? { base } : {}), agent },
    );
    await harness.create(
      record,
      target.input.map((message) => ({ role: message.role, content: message.content })),
    );
    return record.session.id;
  };

  app.get<AutomationParams>('/v1/agents/automations/:automation_id/invocations', async (request) => {
    const query = parseOrThrow(AgentListQuery, request.query);
    await found(request.params.automation_id);
    return cursorPage(
      await records.list<AutomationInvocation>('automation_invocation', request.params.automation_id),
      query,
      'invocation of this automation',
      true,
    );
  });

  app.get<InvocationParams>('/v1/agents/automations/:automation_id/invocations/:invocation_id', async (request) => {
    await found(request.params.automation_id);
    const invocation = await records.get<AutomationInvocation>('automation_invocation', request.params.invocation_id);
    if (!invocation || invocation.automation_id !== request.params.automation_id) {
      throw new ApiError(
        'automation_not_found',
        `Invocation with id '${request.params.invocation_id}' not found in automation '${request.params.automation_id}'.`,
        'invocation_id',
      );
    }
    return invocation;
  });
}
