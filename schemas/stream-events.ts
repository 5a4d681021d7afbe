import { z } from 'zod';
import { EmittedMessage, EmittedReasoning, OutputItem } from './items.ts';
import { ResponseObject } from './response.ts';

/**
 * The Server-Sent Events of `stream: true`, exactly as the SDK 7.60.0 types them (the type test
 * checks each against `ResponseStreamEvent`). Programs travel only as `output_item.added/.done`.
 */
const sequence_number = z.number().int().min(0);
const OutputText = EmittedMessage.shape.content.element;
const SummaryText = EmittedReasoning.shape.summary.element;

const lifecycle = <T extends string>(type: T) => z.strictObject({ type: z.literal(type), sequence_number, response: ResponseObject });

export const StreamEvent = z.discriminatedUnion('type', [
  lifecycle('response.created'),
  lifecycle('response.queued'),
  lifecycle('response.in_progress'),
  lifecycle('response.completed'),
  lifecycle('response.incomplete'),
  lifecycle('response.failed'),
  z.strictObject({ type: z.literal('response.output_item.added'), sequence_number, output_index: z.number().int(), item: OutputItem }),
  z.strictObject({ type: z.literal('response.output_item.done'), sequence_number, output_index: z.number().int(), item: OutputItem }),
  z.strictObject({
    type: z.literal('response.content_part.added'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    content_index: z.number().int(),
    part: OutputText,
  }),
  z.strictObject({
    type: z.literal('response.content_part.done'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    content_index: z.number().int(),
    part: OutputText,
  }),
  z.strictObject({
    type: z.literal('response.output_text.delta'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    content_index: z.number().int(),
    delta: z.string(),
    logprobs: z.array(z.never()),
  }),
  z.strictObject({
    type: z.literal('response.output_text.done'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    content_index: z.number().int(),
    text: z.string(),
    logprobs: z.array(z.never()),
  }),
  z.strictObject({
    type: z.literal('response.function_call_arguments.delta'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    delta: z.string(),
  }),
  z.strictObject({
    type: z.literal('response.function_call_arguments.done'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    arguments: z.string(),
  }),
  ...(
    [
      'response.code_interpreter_call.in_progress',
      'response.code_interpreter_call.interpreting',
      'response.code_interpreter_call.completed',
      'response.mcp_call.in_progress',
      'response.mcp_call.completed',
      'response.mcp_call.failed',
      'response.mcp_list_tools.in_progress',
      'response.mcp_list_tools.completed',
      'response.mcp_list_tools.failed',
    ] as const
  ).map((type) => z.strictObject({ type: z.literal(type), sequence_number, output_index: z.number().int(), item_id: z.string() })),
  z.strictObject({
    type: z.literal('response.code_interpreter_call_code.delta'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    delta: z.string(),
  }),
  z.strictObject({
    type: z.literal('response.code_interpreter_call_code.done'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    code: z.string(),
  }),
  z.strictObject({
    type: z.literal('response.mcp_call_arguments.delta'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    delta: z.string(),
  }),
  z.strictObject({
    type: z.literal('response.mcp_call_arguments.done'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    arguments: z.string(),
  }),
  z.strictObject({
    type: z.literal('response.custom_tool_call_input.delta'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    delta: z.string(),
  }),
  z.strictObject({
    type: z.literal('response.custom_tool_call_input.done'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    input: z.string(),
  }),
  z.strictObject({
    type: z.literal('response.reasoning_summary_part.added'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    summary_index: z.number().int(),
    part: SummaryText,
  }),
  z.strictObject({
    type: z.literal('response.reasoning_summary_part.done'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    summary_index: z.number().int(),
    part: SummaryText,
  }),
  z.strictObject({
    type: z.literal('response.reasoning_summary_text.delta'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    summary_index: z.number().int(),
    delta: z.string(),
  }),
  z.strictObject({
    type: z.literal('response.reasoning_summary_text.done'),
    sequence_number,
    output_index: z.number().int(),
    item_id: z.string(),
    summary_index: z.number().int(),
    text: z.string(),
  }),
  z.strictObject({ type: z.literal('error'), sequence_number, code: z.string().nullable(), message: z.string(), param: z.string().nullable() }),
]);
export type StreamEvent = z.infer<typeof StreamEvent>;

/** An event before its sequence number is assigned (by the writer, counting from 0). */
export type UnnumberedStreamEvent = StreamEvent extends infer Event ? (Event extends StreamEvent ? Omit<Event, 'sequence_number'> : never) : never;
