import type { OutputItem } from '../../schemas/items.ts';
import type { CreateResponseRequest } from '../../schemas/request.ts';
import { conversationIdOf } from './conversation/stored-conversations.ts';
import type { ResponseObject, ToolUsage } from '../../schemas/response.ts';
import type { Usage } from '../../schemas/usage.ts';
import type { ResponseTool, Tool } from '../../schemas/tools.ts';

/**
 * Function tools as the hosted API echoes them: `parameters` and `strict` always present
 * (strict defaults to true in the Responses API).
 */
/**
 * A tool without the secrets an MCP server's definition carries (`authorization`, `headers`):
 * like the hosted API, the emulator never returns or keeps them (responses, the store, the
 * journal); a client sends them with every request.
 */
export function withoutSecrets<T extends Tool>(tool: T): T {
  if (tool.type !== 'mcp') return tool;
  const { authorization: _authorization, headers: _headers, ...rest } = tool;
  return rest as T;
}

export function echoTool(tool: Tool): ResponseTool {
  if (tool.type === 'mcp') return withoutSecrets(tool);
  if (tool.type !== 'function') return tool;
  return { ...tool, parameters: tool.parameters ?? null, strict: tool.strict ?? true };
}

/** The tier a Response shows: `auto` (or none) as `default`, and `fast` as `priority`, as the SDK's docs say the hosted API shows it. */
function serviceTierOf(asked: CreateResponseRequest['service_tier']): ResponseObject['service_tier'] {
  if (!asked || asked === 'auto') return 'default';
  return asked === 'fast' ? 'priority' : asked;
}

export interface ResponseState {
  readonly status: ResponseObject['status'];
  readonly output?: OutputItem[];
  readonly usage?: Usage;
  readonly error?: ResponseObject['error'];
}

/** The hosted tools that bill by use (image generation, web search) never run here: a fresh zero count for each Response. */
function noToolUsage(): ToolUsage {
  return {
    image_gen: {
      input_tokens: 0,
      input_tokens_details: { image_tokens: 0, text_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { image_tokens: 0, text_tokens: 0 },
      total_tokens: 0,
    },
    web_search: { num_requests: 0 },
  };
}

const FINISHED: ReadonlySet<ResponseObject['status']> = new Set(['completed', 'incomplete', 'failed', 'cancelled']);

/** The Response object in a given state, echoing the request's parameters. */
export function buildResponse(id: string, request: CreateResponseRequest, createdAt: number, state: ResponseState): ResponseObject {
  const conversationId = conversationIdOf(request);
  return {
    id,
    object: 'response',
    access_programs: request.access_programs?.cyber ? { cyber: request.access_programs.cyber } : null,
    created_at: createdAt,
    completed_at: FINISHED.has(state.status) ? Math.floor(Date.now() / 1000) : null,
    status: state.status,
    background: request.background ?? false,
    error: state.error ?? null,
    incomplete_details: state.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    max_tool_calls: request.max_tool_calls ?? null,
    metadata: request.metadata ?? {},
    model: request.model,
    output: state.output ?? [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: request.reasoning?.summary ?? null },
    service_tier: serviceTierOf(request.service_tier),
    temperature: request.temperature ?? 1,
    text: { format: { type: 'text' }, verbosity: 'medium', ...request.text },
    tool_choice: request.tool_choice ?? 'auto',
    tool_usage: noToolUsage(),
    tools: (request.tools ?? []).map(echoTool),
    top_logprobs: request.top_logprobs ?? 0,
    top_p: request.top_p ?? 1,
    truncation: request.truncation ?? 'disabled',
    ...(request.user !== undefined ? { user: request.user } : {}),
    safety_identifier: request.safety_identifier ?? null,
    prompt_cache_key: request.prompt_cache_key ?? null,
    ...(conversationId !== undefined ? { conversation: { id: conversationId } } : {}),
    ...(state.usage ? { usage: state.usage } : {}),
  };
}
