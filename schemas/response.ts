import { z } from 'zod';
import { OutputItem, type ConversationItem } from './items.ts';
import { CyberAccessProgram, ReasoningConfig, ServiceTier, TextConfig } from './request.ts';
import { ResponseTool, ToolChoice } from './tools.ts';
import { Usage } from './usage.ts';

/** `Response.error.code`: the values the SDK 7.60.0 declares. */
export const ResponseErrorCode = z.enum([
  'server_error',
  'rate_limit_exceeded',
  'invalid_prompt',
  'data_residency_mismatch',
  'bio_policy',
  'vector_store_timeout',
  'invalid_image',
  'invalid_image_format',
  'invalid_base64_image',
  'invalid_image_url',
  'image_too_large',
  'image_too_small',
  'image_parse_error',
  'image_content_policy_violation',
  'invalid_image_mode',
  'image_file_too_large',
  'unsupported_image_media_type',
  'empty_image_file',
  'failed_to_download_image',
  'image_file_not_found',
]);

/** `Response.tool_usage` of openai 7.x: always present on hosted responses, even in `response.created`. */
export const ToolUsage = z.strictObject({
  image_gen: z.strictObject({
    input_tokens: z.number().int(),
    input_tokens_details: z.strictObject({ image_tokens: z.number().int(), text_tokens: z.number().int() }),
    output_tokens: z.number().int(),
    output_tokens_details: z.strictObject({ image_tokens: z.number().int(), text_tokens: z.number().int() }),
    total_tokens: z.number().int(),
  }),
  web_search: z.strictObject({ num_requests: z.number().int() }),
});
export type ToolUsage = z.infer<typeof ToolUsage>;

/**
 * The Response object as it travels on the wire. `output_text` is absent on purpose: the SDK
 * computes it client-side (`addOutputText`), as it does for the hosted API.
 */
export const ResponseObject = z.strictObject({
  id: z.string(),
  object: z.literal('response'),
  /** The access program the request chose (openai 7.x); null for the implicit Standard. */
  access_programs: z.strictObject({ cyber: CyberAccessProgram }).nullable(),
  created_at: z.number().int(),
  completed_at: z.number().int().nullable(),
  status: z.enum(['completed', 'failed', 'in_progress', 'cancelled', 'queued', 'incomplete']),
  background: z.boolean(),
  error: z.strictObject({ code: ResponseErrorCode, message: z.string() }).nullable(),
  incomplete_details: z.strictObject({ reason: z.enum(['max_output_tokens', 'content_filter']) }).nullable(),
  instructions: z.string().nullable(),
  max_output_tokens: z.number().nullable(),
  max_tool_calls: z.number().int().nullable(),
  metadata: z.record(z.string(), z.string()),
  model: z.string(),
  output: z.array(OutputItem),
  parallel_tool_calls: z.boolean(),
  previous_response_id: z.string().nullable(),
  reasoning: z.strictObject({ effort: ReasoningConfig.shape.effort.unwrap(), summary: ReasoningConfig.shape.summary.unwrap() }),
  service_tier: ServiceTier,
  temperature: z.number(),
  text: TextConfig,
  tool_choice: ToolChoice,
  /** What the hosted tools billed (image generation, web search): the emulator runs neither, so zeros. */
  tool_usage: ToolUsage,
  tools: z.array(ResponseTool),
  top_logprobs: z.number(),
  top_p: z.number(),
  truncation: z.enum(['auto', 'disabled']),
  user: z.string().optional(),
  safety_identifier: z.string().nullable(),
  prompt_cache_key: z.string().nullable(),
  /** The conversation the response was made in; absent when it was made in none. */
  conversation: z.strictObject({ id: z.string() }).optional(),
  /** Absent until the response finishes. */
  usage: Usage.optional(),
});
export type ResponseObject = z.infer<typeof ResponseObject>;

export const DeletedResponse = z.strictObject({
  id: z.string(),
  object: z.literal('response.deleted'),
  deleted: z.literal(true),
});
export type DeletedResponse = z.infer<typeof DeletedResponse>;

/** OpenAI's error envelope, on every 4xx and 5xx. */
export const ErrorEnvelope = z.strictObject({
  error: z.strictObject({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string().nullable(),
  }),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

export const ModelObject = z.strictObject({
  id: z.string(),
  object: z.literal('model'),
  created: z.number().int(),
  owned_by: z.string(),
});
export type ModelObject = z.infer<typeof ModelObject>;

/** A cursor page (`/v1/models`, `/v1/responses/{id}/input_items`). */
export function listPage<T extends z.ZodType>(item: T) {
  return z.strictObject({
    object: z.literal('list'),
    data: z.array(item),
    first_id: z.string().nullable().optional(),
    last_id: z.string().nullable().optional(),
    has_more: z.boolean().optional(),
  });
}

/** The compaction item `POST /v1/responses/compact` ends its output with (server/engine/conversation/compaction.ts). */
export const EmittedCompaction = z.strictObject({
  type: z.literal('compaction'),
  id: z.string(),
  encrypted_content: z.string(),
});
export type EmittedCompaction = z.infer<typeof EmittedCompaction>;

/** `POST /v1/responses/compact`: the history's user messages (as `input_items` lists them), then one compaction item. */
export interface CompactedResponse {
  readonly id: string;
  readonly object: 'response.compaction';
  readonly created_at: number;
  readonly output: readonly (ConversationItem | EmittedCompaction)[];
  readonly usage: z.infer<typeof Usage>;
}

/** `POST /v1/responses/input_tokens`. */
export interface InputTokenCount {
  readonly object: 'response.input_tokens';
  readonly input_tokens: number;
}
