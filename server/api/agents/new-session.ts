import type { AgentDefinition, AgentObject, InlineAgent } from '../../../schemas/agents.ts';
import { ApiError } from '../../platform/api-error.ts';
import { newSortableId } from '../../platform/ids.ts';
import type { RecordStore } from '../../platform/stores/record-store.ts';
import { agentDefinition, notEmulated } from './agent-definition.ts';
import type { SessionRecord } from './session-record.ts';

export function agentNotFound(id: string, param = 'agent_id'): ApiError {
  return new ApiError('agent_not_found', `Agent with id '${id}' not found.`, param);
}

export function sessionNotFound(id: string, param = 'session_id'): ApiError {
  return new ApiError('session_not_found', `Session with id '${id}' not found.`, param);
}

/** What a session (or an automation's new session) is made of: the agent, where it runs, and what it keeps. */
export interface SessionPlan {
  readonly agentId?: string | null | undefined;
  readonly agent?: InlineAgent | null | undefined;
  readonly environment: { readonly type: string };
  readonly metadata?: Record<string, string> | null | undefined;
  readonly vaultIds?: readonly string[] | null | undefined;
  readonly promptCacheTtl?: '30m' | '12h' | undefined;
  readonly review?: 'none' | 'auto_review' | undefined;
}

/**
 * The agent a session runs: the saved one `agentId` names, with the inline `agent`'s settings
 * over it; `base` is the saved agent. `at` prefixes the params named in errors (`target.`).
 */
export async function resolveAgent(
  records: RecordStore,
  plan: Pick<SessionPlan, 'agentId' | 'agent' | 'environment'>,
  at = '',
): Promise<{ base?: AgentObject; agent: AgentDefinition }> {
  if (plan.environment.type !== 'none')
    throw notEmulated(`environments of type '${plan.environment.type}' (sessions run with environment.type 'none')`, `${at}environment.type`);
  let base: AgentObject | undefined;
  if (plan.agentId) {
    base = await records.get<AgentObject>('agent', plan.agentId);
    if (!base) throw agentNotFound(plan.agentId, `${at}agent_id`);
  } else if (!plan.agent) {
    throw new ApiError(
      'missing_required_parameter',
      `Missing required parameter: '${at}agent_id' or '${at}agent' (a saved agent's id, or the agent's settings with its model).`,
      `${at}agent_id`,
    );
  }
  return { ...(base ? { base } : {}), agent: plan.agent ? agentDefinition(plan.agent, base, `${at}agent`) : base! };
}

/** What a session keeps of its agent: the settings, not the saved agent's metadata or times. */
export function sessionAgent(agent: AgentDefinition): Omit<AgentDefinition, 'metadata'> {
  const { name, model, instructions, multi_agent, reasoning, service_tier, text, tools, compaction, experimental } = agent;
  return {
    name,
    model,
    instructions,
    multi_agent,
    reasoning,
    service_tier,
    text,
    tools,
    ...(compaction ? { compaction } : {}),
    ...(experimental ? { experimental } : {}),
  };
}

/** A new idle session's record, for the agent `resolveAgent` gave. */
export function newSessionRecord(plan: SessionPlan, resolved: { base?: AgentObject; agent: AgentDefinition }): SessionRecord {
  const now = Math.floor(Date.now() / 1000);
  return {
    session: {
      id: newSortableId('sess'),
      object: 'agent.session',
      created_at: now,
      last_active_at: now,
      agent: { id: resolved.base?.id ?? newSortableId('agent'), ...sessionAgent(resolved.agent) },
      environment: { type: 'none' },
      error: null,
      metadata: plan.metadata ?? {},
      required_actions: [],
      status: 'idle',
      usage: null,
      vault_ids: [...(plan.vaultIds ?? [])],
      prompt_cache_options: plan.promptCacheTtl ? { ttl: plan.promptCacheTtl } : null,
      review: plan.review ?? 'none',
    },
    turns: [],
    last_response_id: null,
    settled_response_id: null,
    active_turn_id: null,
    runner: null,
    pending: [],
    answered: [],
    steering: [],
    next_output_index: 0,
    idempotency_keys: [],
  };
}
