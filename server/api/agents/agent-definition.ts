import type { AgentDefinition, AgentTool, AgentToolParam, CreateAgentRequest, InlineAgent, UpdateAgentRequest } from '../../../schemas/agents.ts';
import type { ResponseTool } from '../../../schemas/tools.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';
import { ApiError } from '../../platform/api-error.ts';

/** The most bytes of compact JSON an agent's tool list may come to (the SDK's types: 3 MiB). */
const MAX_TOOL_LIST_BYTES = FIXED_LIMITS.agentToolListBytes.value;

/** The settings an agent starts with where its create request names none (as the SDK's types read them back). */
const DEFAULTS: Omit<AgentDefinition, 'model'> = {
  name: null,
  instructions: null,
  metadata: {},
  multi_agent: { enabled: false, max_concurrent_subagents: null },
  reasoning: { effort: null, summary: null },
  service_tier: 'auto',
  text: { format: { type: 'text' }, verbosity: 'medium' },
  tools: [],
};

/**
 * An agent's tools as they are kept and returned, refusing by name what the emulator does not
 * run: only function tools (the client runs them) and the `programmatic_tool_calling` entry.
 */
export function agentTools(tools: readonly AgentToolParam[], param: string): AgentTool[] {
  const bytes = Buffer.byteLength(JSON.stringify(tools));
  if (bytes > MAX_TOOL_LIST_BYTES) {
    throw new ApiError(
      'invalid_value',
      `The tool list at ${param} comes to ${bytes} bytes of compact UTF-8 JSON; an agent's tools must fit within 3 MiB (${MAX_TOOL_LIST_BYTES} bytes).`,
      param,
    );
  }
  const names = new Set<string>();
  let ptcEntries = 0;
  return tools.map((tool, index): AgentTool => {
    const at = `${param}[${index}]`;
    if (tool.type === 'function') {
      if (names.has(tool.name))
        throw new ApiError('invalid_value', `Duplicate tool name '${tool.name}' at ${at}.name: an agent's function tools need distinct names.`, `${at}.name`);
      names.add(tool.name);
      if (tool.defer_loading) throw notEmulated(`'defer_loading' on an agent's function tool (tool search)`, `${at}.defer_loading`);
      return {
        type: 'function',
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        defer_loading: false,
        ...(tool.async !== undefined ? { async: tool.async } : {}),
      };
    }
    if (tool.type === 'programmatic_tool_calling') {
      ptcEntries += 1;
      if (ptcEntries > 1) throw new ApiError('invalid_value', `Duplicate 'programmatic_tool_calling' entry at ${at}: an agent has at most one.`, at);
      // Absent `enabled` keeps it on (the PTC guide, "API de Agentes").
      return { type: 'programmatic_tool_calling', enabled: tool.enabled !== false };
    }
    throw notEmulated(`agent tools of type '${tool.type}' (only 'function' and 'programmatic_tool_calling' run here)`, `${at}.type`);
  });
}

export function notEmulated(what: string, param: string | null): ApiError {
  return new ApiError('agents_not_emulated', `ptc-emulator does not emulate ${what}; see docs/DEVIATIONS.md#the-agents-api.`, param);
}

/** The settings of a create request, or an update's or an inline agent's over `base`. */
export function agentDefinition(
  params: CreateAgentRequest | UpdateAgentRequest | InlineAgent,
  base: AgentDefinition | undefined,
  param: string,
): AgentDefinition {
  const start: AgentDefinition = base ?? { ...DEFAULTS, model: '' };
  const model = params.model ?? start.model;
  if (model === '')
    throw new ApiError(
      'missing_required_parameter',
      `Missing required parameter: '${param === 'agent' ? 'agent.model' : 'model'}' (a session without 'agent_id' needs the agent's model).`,
      param === 'agent' ? 'agent.model' : 'model',
    );
  const prefix = param === '' ? '' : `${param}.`;
  if (params.multi_agent?.enabled) throw notEmulated('multi-agent sessions (subagents)', `${prefix}multi_agent.enabled`);
  // The SDK's types: an omitted setting keeps what the agent has; null resets it to its default
  // (clears the tools and metadata, blocking compaction, the model's own reasoning effort, tier auto).
  return {
    name: params.name === undefined ? start.name : params.name,
    model,
    instructions: params.instructions === undefined ? start.instructions : params.instructions,
    metadata: params.metadata === undefined ? start.metadata : (params.metadata ?? {}),
    multi_agent:
      params.multi_agent === undefined ? start.multi_agent : { enabled: false, max_concurrent_subagents: params.multi_agent?.max_concurrent_subagents ?? null },
    reasoning: params.reasoning === undefined ? start.reasoning : { effort: params.reasoning?.effort ?? null, summary: params.reasoning?.summary ?? null },
    service_tier: params.service_tier === undefined ? start.service_tier : (params.service_tier ?? DEFAULTS.service_tier),
    text:
      params.text === undefined
        ? start.text
        : params.text === null
          ? DEFAULTS.text
          : { format: params.text.format ?? start.text.format, verbosity: params.text.verbosity ?? start.text.verbosity },
    tools: params.tools === undefined ? start.tools : agentTools(params.tools ?? [], `${prefix}tools`),
    ...(params.compaction !== undefined
      ? { compaction: { async: params.compaction?.async ?? false } }
      : start.compaction
        ? { compaction: start.compaction }
        : {}),
    ...(params.experimental
      ? { experimental: { time_awareness: params.experimental.time_awareness ?? false } }
      : start.experimental
        ? { experimental: start.experimental }
        : {}),
  };
}

/** Whether programmatic tool calling is on: it is unless the agent's entry says `enabled: false`. */
export function programmaticEnabled(agent: Pick<AgentDefinition, 'tools'>): boolean {
  return !agent.tools.some((tool) => tool.type === 'programmatic_tool_calling' && !tool.enabled);
}

/**
 * The Responses tools the harness gives the stand-in for an agent: each function tool callable
 * directly, and from a program while PTC is on (the hosted harness's `exec` tool is our
 * `programmatic_tool_calling` tool).
 */
export function responsesTools(agent: Pick<AgentDefinition, 'tools'>): ResponseTool[] {
  const ptc = programmaticEnabled(agent);
  const tools: ResponseTool[] = [];
  for (const tool of agent.tools) {
    if (tool.type !== 'function') continue;
    tools.push({
      type: 'function',
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      strict: false,
      allowed_callers: ptc ? ['direct', 'programmatic'] : ['direct'],
    });
  }
  if (ptc) tools.push({ type: 'programmatic_tool_calling' });
  return tools;
}
