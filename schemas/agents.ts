import { z } from 'zod';
import { Metadata } from './request.ts';
import { JsonSchemaObject, ToolName } from './tools.ts';
import { FIXED_LIMITS } from './fixed-limits.ts';

// The Agents API's wire (`client.beta.agents` of openai 7.60.0, `OpenAI-Beta: agents=v1`):
// agents, sessions, their turns, items and events. Requests are checked strictly; what the
// emulator does not run is refused by name where it is read (server/api/agents/).

// ---- tools ---------------------------------------------------------------------------------

/** A function tool of an agent: the client runs it (`agent.session.input.tool_result`). */
export const AgentFunctionTool = z.strictObject({
  type: z.literal('function'),
  name: ToolName,
  description: z.string(),
  parameters: JsonSchemaObject,
  async: z.boolean().optional(),
  defer_loading: z.boolean().optional(),
});

/** On unless `enabled` is false (the PTC guide, "API de Agentes"). */
export const AgentPtcTool = z.strictObject({
  type: z.literal('programmatic_tool_calling'),
  enabled: z.boolean().optional(),
});

/** The other tool types of the SDK: accepted by the schema, refused by name (not emulated). */
export const AgentOtherTool = z.looseObject({
  type: z.enum(['tool_search', 'mcp', 'web_search', 'computer_use', 'automations']),
});

export const AgentToolParam = z.discriminatedUnion('type', [AgentFunctionTool, AgentPtcTool, AgentOtherTool]);
export type AgentToolParam = z.infer<typeof AgentToolParam>;

/** An agent's tools as the API returns them: function tools with `defer_loading`, the PTC entry with `enabled`. */
export type AgentTool =
  | { type: 'function'; name: string; description: string; parameters: Record<string, unknown>; defer_loading: boolean; async?: boolean }
  | { type: 'programmatic_tool_calling'; enabled: boolean };

// ---- agents --------------------------------------------------------------------------------

const ReasoningEffort = z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);
const Reasoning = z.strictObject({ effort: ReasoningEffort.nullish(), summary: z.enum(['concise', 'detailed', 'auto']).nullish() });
const TextFormat = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text') }),
  z.strictObject({ type: z.literal('json_schema'), schema: JsonSchemaObject }),
]);
const Text = z.strictObject({ format: TextFormat.nullish(), verbosity: z.enum(['low', 'medium', 'high']).nullish() });
const ServiceTier = z.enum(['auto', 'default', 'flex', 'priority', 'fast', 'ultrafast']);
const MultiAgent = z.strictObject({ enabled: z.boolean(), max_concurrent_subagents: z.number().int().positive().optional() });

/** The settings an agent holds, every one optional (an update names only what changes). */
const AgentSettings = {
  name: z.string().max(256).nullish(),
  instructions: z.string().nullish(),
  metadata: Metadata.nullish(),
  tools: z.array(AgentToolParam).max(128).nullish(),
  reasoning: Reasoning.nullish(),
  text: Text.nullish(),
  service_tier: ServiceTier.nullish(),
  multi_agent: MultiAgent.nullish(),
  compaction: z.strictObject({ async: z.boolean().nullish() }).nullish(),
  experimental: z.strictObject({ time_awareness: z.boolean().optional() }).optional(),
};

/** `POST /v1/agents`. */
export const CreateAgentRequest = z.strictObject({ model: z.string().min(1), ...AgentSettings });
export type CreateAgentRequest = z.infer<typeof CreateAgentRequest>;

/** `POST /v1/agents/{agent_id}`. */
export const UpdateAgentRequest = z.strictObject({ model: z.string().min(1).optional(), ...AgentSettings });
export type UpdateAgentRequest = z.infer<typeof UpdateAgentRequest>;

/** What an agent is: the `Agent` object without its identity and times. */
export interface AgentDefinition {
  name: string | null;
  model: string;
  instructions: string | null;
  metadata: Record<string, string>;
  multi_agent: { enabled: boolean; max_concurrent_subagents: number | null };
  reasoning: { effort: z.infer<typeof ReasoningEffort> | null; summary: 'concise' | 'detailed' | 'auto' | null };
  service_tier: z.infer<typeof ServiceTier>;
  text: { format: z.infer<typeof TextFormat>; verbosity: 'low' | 'medium' | 'high' };
  tools: AgentTool[];
  compaction?: { async: boolean };
  experimental?: { time_awareness: boolean };
}

export interface AgentObject extends AgentDefinition {
  id: string;
  object: 'agent';
  created_at: number;
  updated_at: number;
}

// ---- sessions ------------------------------------------------------------------------------

const InputContent = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('input_text'), text: z.string() }),
  z.strictObject({ type: z.literal('input_image'), image_url: z.string() }),
]);
export type InputContent = z.infer<typeof InputContent>;

/** A user message into a session; `type` may be left out (the SDK's helper does). */
export const SessionInputMessage = z.strictObject({
  role: z.literal('user'),
  content: z.array(InputContent).min(1),
  type: z.literal('message').optional(),
});
export type SessionInputMessage = z.infer<typeof SessionInputMessage>;

/** The most user messages one event or one session create may carry. */
export const MAX_INPUT_MESSAGES = FIXED_LIMITS.agentInputMessages.value;
const SessionInput = z.union([z.string(), z.array(SessionInputMessage).min(1).max(MAX_INPUT_MESSAGES)]);

/** `environment` of a session: `none` is run; the others are refused by name (server/api/agents/). */
export const EnvironmentParam = z.looseObject({ type: z.enum(['none', 'openai_hosted', 'self_hosted']) });

/** An agent given inline on a session: its settings, overriding those of `agent_id`. */
const InlineAgent = z.strictObject({ model: z.string().min(1).optional(), ...AgentSettings });
export type InlineAgent = z.infer<typeof InlineAgent>;

const PromptCacheOptions = z.strictObject({ ttl: z.enum(['30m', '12h']).optional() });
const Review = z.enum(['none', 'auto_review']);

/** `POST /v1/agents/sessions`. */
export const CreateSessionRequest = z.strictObject({
  environment: EnvironmentParam,
  agent: InlineAgent.nullish(),
  agent_id: z.string().min(1).nullish(),
  input: SessionInput.nullish(),
  metadata: Metadata.nullish(),
  prompt_cache_options: PromptCacheOptions.nullish(),
  review: Review.optional(),
  stream: z.boolean().nullish(),
  stream_options: z.strictObject({ include_obfuscation: z.boolean().optional() }).nullish(),
  vault_ids: z.array(z.string()).nullish(),
});
export type CreateSessionRequest = z.infer<typeof CreateSessionRequest>;

/** `POST /v1/agents/sessions/{session_id}`. */
export const UpdateSessionRequest = z.strictObject({
  agent: z
    .strictObject({
      model: z.string().min(1).optional(),
      reasoning: z.strictObject({ effort: ReasoningEffort.nullish() }).nullish(),
      service_tier: ServiceTier.nullish(),
      tools: z.array(AgentToolParam).max(128).nullish(),
    })
    .nullish(),
  metadata: Metadata.nullish(),
  prompt_cache_options: PromptCacheOptions.nullish(),
  review: Review.optional(),
});
export type UpdateSessionRequest = z.infer<typeof UpdateSessionRequest>;

export type SessionStatus = 'idle' | 'in_progress' | 'requires_action' | 'failed';
export type TurnStatus = 'queued' | 'in_progress' | 'waiting' | 'completed' | 'failed' | 'cancelled';

/** `usage` of a turn and a session. */
export interface TokenUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface RequiredFunctionCall {
  type: 'function_call';
  call_id: string;
  name: string;
  arguments: string;
  turn_id: string;
}

export interface SessionObject {
  id: string;
  object: 'agent.session';
  created_at: number;
  last_active_at: number;
  agent: Omit<AgentDefinition, 'metadata'> & { id: string };
  environment: { type: 'none' };
  error: string | null;
  metadata: Record<string, string>;
  required_actions: RequiredFunctionCall[];
  status: SessionStatus;
  usage: TokenUsage | null;
  vault_ids: string[];
  prompt_cache_options: { ttl: '30m' | '12h' } | null;
  review: 'none' | 'auto_review';
}

/** The codes of a failed turn's `error` the emulator uses (a subset of the SDK's). */
export type TurnErrorCode = 'invalid_request' | 'server_overloaded' | 'internal_error' | 'request_timeout';

export interface TurnObject {
  id: string;
  object: 'agent.session.turn';
  agent_id: string;
  session_id: string;
  subagent_id: null;
  status: TurnStatus;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  error: { code: TurnErrorCode; message: string } | null;
  usage: TokenUsage | null;
}

// ---- items ---------------------------------------------------------------------------------

export type CallStatus = 'in_progress' | 'completed' | 'failed' | 'incomplete';

export type SessionItem =
  | { type: 'message'; id: string; role: 'user'; content: InputContent[]; phase: null; status: 'completed'; turn_id: string }
  | {
      type: 'message';
      id: string;
      role: 'assistant';
      content: { type: 'output_text'; text: string }[];
      phase: 'commentary' | 'final_answer' | null;
      status: 'in_progress' | 'completed' | 'incomplete';
      turn_id: string;
    }
  | {
      type: 'reasoning';
      id: string;
      status: 'in_progress' | 'completed' | 'incomplete' | null;
      summary: { type: 'summary_text'; text: string }[];
      turn_id: string;
    }
  | { type: 'function_call'; id: string; call_id: string; name: string; arguments: string; status: CallStatus; turn_id: string }
  | {
      type: 'function_call_output';
      id: string;
      call_id: string;
      output: string | InputContent[] | null;
      error: string | null;
      status: CallStatus;
      turn_id: string;
    };

// ---- events --------------------------------------------------------------------------------

/** `POST /v1/agents/sessions/{session_id}/events`: what the client sends into a session. */
export const SessionInputEvent = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('agent.session.input.message'), input: z.array(SessionInputMessage).min(1).max(MAX_INPUT_MESSAGES) }),
  z.strictObject({
    type: z.literal('agent.session.input.tool_result'),
    turn_id: z.string().min(1),
    call_id: z.string().min(1),
    success: z.boolean(),
    output: z.union([z.string(), z.array(InputContent)]).nullish(),
    error: z.string().nullish(),
  }),
  z.strictObject({ type: z.literal('agent.session.input.cancel') }),
  z.looseObject({ type: z.literal('agent.session.input.mcp_approval_request_result') }),
  z.looseObject({ type: z.literal('agent.session.input.computer_use_approval_request_result') }),
]);
export type SessionInputEvent = z.infer<typeof SessionInputEvent>;

/** The most events one `POST …/events` may carry. */
export const MAX_EVENTS_PER_REQUEST = FIXED_LIMITS.agentEventsPerPost.value;
export const CreateEventsRequest = z.strictObject({ events: z.array(SessionInputEvent).min(1).max(MAX_EVENTS_PER_REQUEST) });

/** What a session streams, without its `event_id` (given as it is sent). */
export type SessionEventBody =
  | {
      type: 'agent.session.created' | 'agent.session.in_progress' | 'agent.session.idle' | 'agent.session.requires_action' | 'agent.session.failed';
      session: SessionObject;
    }
  | { type: 'agent.session.turn.created' | 'agent.session.turn.in_progress'; session_id: string; turn_id: string; turn: TurnObject }
  | {
      type: 'agent.session.turn.completed' | 'agent.session.turn.failed' | 'agent.session.turn.cancelled';
      session_id: string;
      turn_id: string;
      turn: TurnObject;
      usage: TokenUsage | null;
    }
  | { type: 'agent.session.turn.item.added'; session_id: string; turn_id: string; item: SessionItem; output_index: number | null }
  | { type: 'agent.session.turn.item.done'; session_id: string; turn_id: string; item: SessionItem; output_index: number }
  | {
      type: 'agent.session.turn.content_part.added' | 'agent.session.turn.content_part.done';
      session_id: string;
      turn_id: string;
      item_id: string;
      output_index: number;
      content_index: number;
      part: { type: 'output_text'; text: string };
    }
  | {
      type: 'agent.session.turn.output_text.delta';
      session_id: string;
      turn_id: string;
      item_id: string;
      output_index: number;
      content_index: number;
      delta: string;
    }
  | {
      type: 'agent.session.turn.output_text.done';
      session_id: string;
      turn_id: string;
      item_id: string;
      output_index: number;
      content_index: number;
      text: string;
    };

export type SessionEvent = SessionEventBody & { event_id: string };

// ---- lists ---------------------------------------------------------------------------------

/** The query of every Agents API list: a cursor page. */
export const AgentListQuery = z.strictObject({
  after: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
});

/** `GET …/subagents`, `…/traces`, `…/artifacts` (artifacts by `environment_id` too). */
export const SessionResourceListQuery = AgentListQuery.extend({ environment_id: z.string().optional() });

/** `GET /v1/agents/sessions`: also by agent (and by metadata, `metadata[key]=value`, read apart). */
export const SessionListQuery = z.strictObject({
  after: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
  agent_id: z.string().optional(),
});

/** `GET …/events`. */
export const EventStreamQuery = z.strictObject({ include_obfuscation: z.enum(['true', 'false']).optional() });

// ---- vaults --------------------------------------------------------------------------------

/** `GET /v1/vaults` and `…/credentials` (their `metadata[key]` filters read apart); `status` is accepted, nothing is archived. */
const VaultStatus = z.enum(['active', 'archived']);
export const VaultListQuery = z.strictObject({
  after: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
  status: z.union([VaultStatus, z.array(VaultStatus)]).optional(),
  'status[]': z.union([VaultStatus, z.array(VaultStatus)]).optional(),
});

export const CreateVaultRequest = z.strictObject({ name: z.string().max(256).optional(), metadata: Metadata.nullish() });
export const UpdateVaultRequest = z.strictObject({ name: z.string().max(256).nullish(), metadata: Metadata.optional() });

const Networking = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('unrestricted') }),
  z.strictObject({ type: z.literal('limited'), allowed_hosts: z.array(z.string()) }),
]);
const SecretEndpointAuth = (type: 'client_secret_basic' | 'client_secret_post') => z.strictObject({ type: z.literal(type), client_secret: z.string().min(1) });
const ServerUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
const Secret = z.string().min(1);
const ExpiresAt = z.iso.datetime({ offset: true, error: 'expected an ISO 8601 date-time, e.g. "2026-12-31T23:59:00Z"' });

/** A credential's `auth` on create: what it is, with its secret (never kept). */
export const CredentialAuthCreate = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('mcp_oauth'),
    access_token: Secret,
    mcp_server_url: ServerUrl,
    expires_at: ExpiresAt.nullish(),
    refresh: z
      .strictObject({
        client_id: z.string().min(1),
        refresh_token: Secret,
        token_endpoint: ServerUrl,
        token_endpoint_auth: z.discriminatedUnion('type', [
          z.strictObject({ type: z.literal('none') }),
          SecretEndpointAuth('client_secret_basic'),
          SecretEndpointAuth('client_secret_post'),
        ]),
        resource: z.string().nullish(),
        scope: z.string().nullish(),
      })
      .nullish(),
  }),
  z.strictObject({ type: z.literal('static_bearer'), token: Secret, mcp_server_url: ServerUrl }),
  z.strictObject({
    type: z.literal('environment_variable'),
    networking: Networking,
    secret_name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected an environment variable name' }),
    secret_value: Secret,
  }),
]);
export type CredentialAuthCreate = z.infer<typeof CredentialAuthCreate>;

/** A credential's `auth` on update: a new secret (and, for OAuth, its expiry and refresh settings). */
export const CredentialAuthRotate = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('mcp_oauth'),
    access_token: Secret.nullish(),
    expires_at: ExpiresAt.nullish(),
    refresh: z
      .strictObject({
        refresh_token: Secret.nullish(),
        scope: z.string().nullish(),
        token_endpoint_auth: z
          .discriminatedUnion('type', [
            z.strictObject({ type: z.literal('client_secret_basic'), client_secret: z.string().nullish() }),
            z.strictObject({ type: z.literal('client_secret_post'), client_secret: z.string().nullish() }),
          ])
          .nullish(),
      })
      .nullish(),
  }),
  z.strictObject({ type: z.literal('static_bearer'), token: Secret }),
  z.strictObject({ type: z.literal('environment_variable'), secret_value: Secret }),
]);
export type CredentialAuthRotate = z.infer<typeof CredentialAuthRotate>;

export const CreateCredentialRequest = z.strictObject({ name: z.string().min(1).max(256), auth: CredentialAuthCreate, metadata: Metadata.nullish() });
export const UpdateCredentialRequest = z.strictObject({ auth: CredentialAuthRotate.optional(), metadata: Metadata.nullish() });

/** A credential's `auth` as it is returned: no secret. */
export type CredentialAuth =
  | {
      type: 'mcp_oauth';
      mcp_server_url: string;
      expires_at: string | null;
      refresh: {
        client_id: string;
        resource: string | null;
        scope: string | null;
        token_endpoint: string;
        token_endpoint_auth: { type: 'none' | 'client_secret_basic' | 'client_secret_post' };
      } | null;
    }
  | { type: 'static_bearer'; mcp_server_url: string }
  | { type: 'environment_variable'; secret_name: string; networking: z.infer<typeof Networking> };

// ---- automations ---------------------------------------------------------------------------

/** What an automation does when it fires: a new session with this input, or a message into a session. */
export const AutomationTargetParam = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('new_session'),
    environment: EnvironmentParam,
    input: z.array(SessionInputMessage).min(1).max(MAX_INPUT_MESSAGES),
    agent: InlineAgent.optional(),
    agent_id: z.string().min(1).optional(),
    metadata: Metadata.nullish(),
    vault_ids: z.array(z.string()).nullish(),
  }),
  z.strictObject({ type: z.literal('existing_session'), session_id: z.string().min(1), instructions: z.string().min(1) }),
]);
export type AutomationTargetParam = z.infer<typeof AutomationTargetParam>;

const AutomationName = z.string().min(1).max(256);
/** Each field of a cron expression: its range, and the names it may use (months, days of the week). */
const CRON_FIELDS = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31 },
  { min: 1, max: 12, names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'], first: 1 },
  { min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'], first: 0 },
] as const;

/** Whether one field of a cron expression fits its range: `*`, values, ranges, lists and `/` steps. */
function cronFieldFits(text: string, field: (typeof CRON_FIELDS)[number]): boolean {
  const value = (token: string): number | undefined => {
    const named = 'names' in field ? (field.names as readonly string[]).indexOf(token.toUpperCase()) : -1;
    if (named >= 0 && 'first' in field) return named + field.first;
    if (!/^\d{1,2}$/.test(token)) return undefined;
    const number = Number(token);
    return number >= field.min && number <= field.max ? number : undefined;
  };
  return text.split(',').every((part) => {
    const [range, step, ...extra] = part.split('/');
    if (extra.length > 0 || (step !== undefined && !/^[1-9]\d{0,1}$/.test(step))) return false;
    if (range === '*') return true;
    const [from, to, ...more] = range!.split('-');
    if (more.length > 0) return false;
    const start = value(from!);
    if (start === undefined) return false;
    if (to === undefined) return step === undefined;
    const end = value(to);
    return end !== undefined && start <= end;
  });
}

/** A cron expression: five fields (minute hour day-of-month month day-of-week), each in its range. */
const CronExpression = z.string().refine(
  (expression) => {
    const fields = expression.trim().split(/\s+/);
    return fields.length === 5 && fields.every((text, index) => cronFieldFits(text, CRON_FIELDS[index]!));
  },
  { error: 'expected a cron expression of five fields (minute hour day-of-month month day-of-week) in their ranges, e.g. "0 9 * * 1"' },
);

/** An IANA time zone name (`Europe/Paris`, `UTC`), as Node's ICU knows them; not an offset. */
const TimeZone = z.string().refine(
  (zone) => {
    if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(zone)) return false;
    try {
      new Intl.DateTimeFormat('en', { timeZone: zone });
      return true;
    } catch {
      return false;
    }
  },
  { error: 'expected an IANA time zone, e.g. "Europe/Paris"' },
);

/** When a one-time automation runs: a time to come (Unix seconds). */
const RunAt = z
  .number()
  .int()
  .refine((seconds) => seconds > Date.now() / 1000, { error: 'expected a time to come, in Unix seconds' });

/** `GET /v1/agents/automations`: also those whose target is a session. */
export const AutomationListQuery = AgentListQuery.extend({ session_id: z.string().optional() });

/** `POST /v1/agents/automations`. */
export const CreateAutomationRequest = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('periodic'),
    name: AutomationName,
    expression: CronExpression,
    timezone: TimeZone,
    target: AutomationTargetParam,
    metadata: Metadata.optional(),
  }),
  z.strictObject({ type: z.literal('once'), name: AutomationName, run_at: RunAt, target: AutomationTargetParam, metadata: Metadata.optional() }),
]);
export type CreateAutomationRequest = z.infer<typeof CreateAutomationRequest>;

/** `POST /v1/agents/automations/{id}`. */
export const UpdateAutomationRequest = z.strictObject({
  name: AutomationName.optional(),
  expression: CronExpression.optional(),
  timezone: TimeZone.optional(),
  run_at: RunAt.optional(),
  target: AutomationTargetParam.optional(),
  metadata: Metadata.optional(),
});
export type UpdateAutomationRequest = z.infer<typeof UpdateAutomationRequest>;

/** An automation's target as it is returned. */
export type AutomationTarget =
  | {
      type: 'new_session';
      agent: Omit<AgentDefinition, 'name' | 'metadata'> | null;
      agent_id: string | null;
      environment: { type: 'none' };
      input: { content: InputContent[]; role: 'user'; type: 'message' }[];
      metadata: Record<string, string>;
      vault_ids: string[];
    }
  | { type: 'existing_session'; session_id: string; instructions: string };

export type AutomationObject = {
  id: string;
  object: 'agent.automation';
  name: string;
  created_at: number;
  created_by: { type: 'developer' };
  metadata: Record<string, string>;
  target: AutomationTarget;
  pause_reason: null;
} & (
  | { type: 'periodic'; expression: string; timezone: string; status: 'active' | 'paused' }
  | { type: 'once'; run_at: number; status: 'active' | 'paused' | 'completed' }
);

export interface AutomationInvocation {
  id: string;
  object: 'agent.automation.invocation';
  automation_id: string;
  created_at: number;
  scheduled_at: null;
  session_id: string | null;
  status: 'completed' | 'failed';
  skip_reason: null;
  error: { code: string; message: string } | null;
  source: { type: 'manual' };
}
