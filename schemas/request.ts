import { z } from 'zod';
import { InputItem } from './items.ts';
import { Tool, ToolChoice } from './tools.ts';

/** The hosted API's bounds on `metadata`, wherever a body has it. */
export const METADATA_LIMITS = { keys: 16, keyChars: 64, valueChars: 512 } as const;

/** Metadata: at most 16 string pairs, keys up to 64 characters, values up to 512. */
export const Metadata = z
  .record(z.string().max(METADATA_LIMITS.keyChars), z.string().max(METADATA_LIMITS.valueChars))
  .refine((value) => Object.keys(value).length <= METADATA_LIMITS.keys, { message: `at most ${METADATA_LIMITS.keys} keys` });

/** `reasoning`: accepted and echoed; the stand-in does not reason. */
export const ReasoningConfig = z.looseObject({
  effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']).nullish(),
  summary: z.enum(['auto', 'concise', 'detailed']).nullish(),
  generate_summary: z.enum(['auto', 'concise', 'detailed']).nullish(),
  context: z.enum(['auto', 'current_turn', 'all_turns']).nullish(),
});

/** `text`: the output format, accepted and echoed (the stand-in writes plain text). */
export const TextConfig = z.strictObject({
  format: z
    .discriminatedUnion('type', [
      z.strictObject({ type: z.literal('text') }),
      z.strictObject({ type: z.literal('json_object') }),
      z.strictObject({
        type: z.literal('json_schema'),
        name: z.string().min(1).max(64),
        schema: z.record(z.string(), z.unknown()),
        description: z.string().optional(),
        strict: z.boolean().nullish(),
      }),
    ])
    .optional(),
  verbosity: z.enum(['low', 'medium', 'high']).nullish(),
});

/**
 * A message without `type` (the SDK's EasyInputMessage) is a message: give it the type so one
 * discriminated union reads every item.
 */
export const InputItemWithDefaultType = z.preprocess((value) => {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  const typed = value as Record<string, unknown>;
  if (!('type' in typed) && 'role' in typed) return { type: 'message', ...typed };
  // An item reference's type is optional and nullable in the SDK's types: `{id}` alone is one.
  if ((typed.type === undefined || typed.type === null) && 'id' in typed && !('role' in typed)) return { ...typed, type: 'item_reference' };
  return value;
}, InputItem);

/**
 * `POST /v1/responses`. Every parameter of the SDK 7.60.0 create params is accepted; those the
 * emulator does not act on are echoed on the Response where it has a field for them
 * (docs/DEVIATIONS.md). Parameters outside this list are rejected, as the hosted API does.
 */
/** Processing tiers (openai 7.x adds `fast` and `ultrafast`); echoed on the Response, `auto` as `default`. */
export const ServiceTier = z.enum(['auto', 'default', 'flex', 'scale', 'priority', 'fast', 'ultrafast']);

/** The Cyber access programs a request may ask for (`access_programs.cyber`), echoed on its Response. */
export const CyberAccessProgram = z.enum(['standard', 'daybreak_blue', 'daybreak_red']);

export const CreateResponseRequest = z.strictObject({
  model: z.string().min(1),
  access_programs: z.strictObject({ cyber: CyberAccessProgram.optional() }).optional(),
  background_options: z.strictObject({ completion_window: z.enum(['soonest', '2h', '8h']).optional(), continuation_id: z.string().optional() }).optional(),
  image: z.strictObject({ context_compression: z.enum(['auto', 'enabled', 'disabled']).optional() }).optional(),
  max_tool_calls: z.number().int().min(1).nullish(),
  input: z.union([z.string(), z.array(InputItemWithDefaultType)]).optional(),
  instructions: z.string().nullish(),
  tools: z.array(Tool).optional(),
  tool_choice: ToolChoice.optional(),
  parallel_tool_calls: z.boolean().nullish(),
  store: z.boolean().nullish(),
  previous_response_id: z.string().min(1).nullish(),
  metadata: Metadata.nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_obfuscation: z.boolean().optional() }).nullish(),
  background: z.boolean().nullish(),
  max_output_tokens: z.number().int().min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  truncation: z.enum(['auto', 'disabled']).nullish(),
  user: z.string().optional(),
  safety_identifier: z.string().nullish(),
  service_tier: ServiceTier.nullish(),
  prompt_cache_key: z.string().nullish(),
  prompt_cache_retention: z.enum(['in_memory', '24h']).nullish(),
  prompt_cache_options: z.looseObject({}).optional(),
  reasoning: ReasoningConfig.nullish(),
  text: TextConfig.optional(),
  include: z.array(z.string()).nullish(),
  conversation: z.union([z.string(), z.looseObject({ id: z.string() })]).nullish(),
  context_management: z.array(z.looseObject({})).nullish(),
  moderation: z.looseObject({}).nullish(),
  prompt: z.looseObject({ id: z.string() }).nullish(),
});
export type CreateResponseRequest = z.infer<typeof CreateResponseRequest>;

/**
 * `include`, accepted on the routes that list or retrieve items and not acted on (the emulator
 * always includes what it has). The SDK writes an array as `include[]=…`, a single value may
 * come as `include=…`.
 */
export const IncludeQuery = {
  include: z.union([z.string(), z.array(z.string())]).optional(),
  'include[]': z.union([z.string(), z.array(z.string())]).optional(),
};

/** `GET /v1/responses/{id}/input_items` query. */
export const InputItemsQuery = z.strictObject({
  after: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
  ...IncludeQuery,
});
export type InputItemsQuery = z.infer<typeof InputItemsQuery>;

/** `GET /v1/responses/{id}` query: `stream=true` replays the stored response's events. */
export const RetrieveResponseQuery = z.strictObject({
  stream: z
    .enum(['true', 'false'])
    .transform((value) => value === 'true')
    .optional(),
  starting_after: z.coerce.number().int().min(-1).optional(),
  ...IncludeQuery,
  include_obfuscation: z.enum(['true', 'false']).optional(),
});

/** `POST /v1/responses/compact` (the SDK 7.60.0's ResponseCompactParams). */
export const CompactRequest = z.strictObject({
  model: z.string().min(1).nullable(),
  input: CreateResponseRequest.shape.input.nullable(),
  instructions: z.string().nullish(),
  previous_response_id: z.string().min(1).nullish(),
  prompt_cache_key: z.string().nullish(),
  prompt_cache_options: z.looseObject({}).nullish(),
  prompt_cache_retention: z.enum(['in_memory', '24h']).nullish(),
  service_tier: z.enum(['auto', 'default', 'flex', 'priority', 'fast']).nullish(),
  image: CreateResponseRequest.shape.image,
});
export type CompactRequest = z.infer<typeof CompactRequest>;

/** `POST /v1/responses/input_tokens` (the SDK 7.60.0's InputTokenCountParams). */
export const InputTokensRequest = z.strictObject({
  model: z.string().nullish(),
  input: CreateResponseRequest.shape.input.nullable(),
  instructions: z.string().nullish(),
  tools: z.array(Tool).nullish(),
  tool_choice: ToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  previous_response_id: z.string().min(1).nullish(),
  conversation: CreateResponseRequest.shape.conversation,
  reasoning: ReasoningConfig.nullish(),
  text: TextConfig.nullish(),
  truncation: z.enum(['auto', 'disabled']).optional(),
  personality: z.string().optional(),
});
export type InputTokensRequest = z.infer<typeof InputTokensRequest>;
