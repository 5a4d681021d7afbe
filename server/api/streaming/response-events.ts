import type { OutputItem } from '../../../schemas/items.ts';
import type { ResponseObject } from '../../../schemas/response.ts';
import type { UnnumberedStreamEvent } from '../../../schemas/stream-events.ts';
import { MCP_APPROVAL, TOOL_KINDS } from '../../engine/conversation/tool-kinds.ts';

const { function: FUNCTION, custom: CUSTOM, shell: SHELL, apply_patch: APPLY_PATCH, code_interpreter: CODE_INTERPRETER, mcp: MCP } = TOOL_KINDS;

/** Splits streamed text into deltas; their concatenation must be the text. */
export type Chunker = (text: string) => readonly string[];

const TERMINAL = {
  completed: 'response.completed',
  incomplete: 'response.incomplete',
  failed: 'response.failed',
  cancelled: 'response.failed',
} as const;

/** The response before any output: what `response.created` and `.in_progress` carry. */
export function openingSnapshot(response: ResponseObject, status: 'queued' | 'in_progress'): ResponseObject {
  const { usage: _usage, ...rest } = response;
  return { ...rest, status, output: [], completed_at: null, error: null, incomplete_details: null };
}

function itemEvents(item: OutputItem, output_index: number, chunks: Chunker): UnnumberedStreamEvent[] {
  const events: UnnumberedStreamEvent[] = [];
  switch (item.type) {
    case FUNCTION.call.type:
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, arguments: '', status: 'in_progress' } });
      for (const delta of chunks(item.arguments)) events.push({ type: 'response.function_call_arguments.delta', output_index, item_id: item.id, delta });
      events.push({ type: 'response.function_call_arguments.done', output_index, item_id: item.id, arguments: item.arguments });
      break;
    case CUSTOM.call.type:
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, input: '' } });
      for (const delta of chunks(item.input)) events.push({ type: 'response.custom_tool_call_input.delta', output_index, item_id: item.id, delta });
      events.push({ type: 'response.custom_tool_call_input.done', output_index, item_id: item.id, input: item.input });
      break;
    case 'message':
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', content: [] } });
      for (const [content_index, part] of item.content.entries()) {
        const base = { output_index, item_id: item.id, content_index };
        events.push({ type: 'response.content_part.added', ...base, part: { ...part, text: '' } });
        for (const delta of chunks(part.text)) events.push({ type: 'response.output_text.delta', ...base, delta, logprobs: [] });
        events.push({ type: 'response.output_text.done', ...base, text: part.text, logprobs: [] });
        events.push({ type: 'response.content_part.done', ...base, part });
      }
      break;
    case 'reasoning':
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, summary: [] } });
      for (const [summary_index, part] of item.summary.entries()) {
        const base = { output_index, item_id: item.id, summary_index };
        events.push({ type: 'response.reasoning_summary_part.added', ...base, part: { ...part, text: '' } });
        for (const delta of chunks(part.text)) events.push({ type: 'response.reasoning_summary_text.delta', ...base, delta });
        events.push({ type: 'response.reasoning_summary_text.done', ...base, text: part.text });
        events.push({ type: 'response.reasoning_summary_part.done', ...base, part });
      }
      break;
    case SHELL.call.type:
    case APPLY_PATCH.call.type:
      // Whole items: the SDK has no delta events for them.
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress' } });
      break;
    case CODE_INTERPRETER.call.type: {
      const base = { output_index, item_id: item.id };
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, code: '', outputs: null, status: 'in_progress' } });
      events.push({ type: 'response.code_interpreter_call.in_progress', ...base });
      for (const delta of chunks(item.code)) events.push({ type: 'response.code_interpreter_call_code.delta', ...base, delta });
      events.push({ type: 'response.code_interpreter_call_code.done', ...base, code: item.code });
      events.push({ type: 'response.code_interpreter_call.interpreting', ...base });
      // The SDK has no failed event for a run: a failed one ends at output_item.done, its status `failed`.
      if (item.status === 'completed') events.push({ type: 'response.code_interpreter_call.completed', ...base });
      break;
    }
    case MCP.call.type: {
      const base = { output_index, item_id: item.id };
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, arguments: '', output: null, error: null, status: 'in_progress' } });
      events.push({ type: 'response.mcp_call.in_progress', ...base });
      for (const delta of chunks(item.arguments)) events.push({ type: 'response.mcp_call_arguments.delta', ...base, delta });
      events.push({ type: 'response.mcp_call_arguments.done', ...base, arguments: item.arguments });
      events.push({ type: item.status === 'failed' ? 'response.mcp_call.failed' : 'response.mcp_call.completed', ...base });
      break;
    }
    case 'mcp_list_tools': {
      const base = { output_index, item_id: item.id };
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, tools: [], error: null } });
      events.push({ type: 'response.mcp_list_tools.in_progress', ...base });
      events.push({ type: item.error === null ? 'response.mcp_list_tools.completed' : 'response.mcp_list_tools.failed', ...base });
      break;
    }
    case 'program':
      // As the hosted stream has it: added without its code (the fingerprint already there), done whole.
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, code: '' } });
      break;
    case SHELL.output.type:
    case MCP_APPROVAL.request.type:
    case 'tool_search_call':
    case 'tool_search_output':
    case 'program_output':
      // These travel whole: the SDK has no delta events for them.
      events.push({ type: 'response.output_item.added', output_index, item });
      break;
    default:
      // Every item type has its events: a new one fails to compile here until it has.
      item satisfies never;
  }
  events.push({ type: 'response.output_item.done', output_index, item });
  return events;
}

/**
 * Every event of a finished response's stream, in order: `response.created` (and `.queued` for a
 * background response), `.in_progress`, each item's added / deltas / done, and exactly one
 * terminal event carrying the full response. A pure function of the response, so a stored
 * response's stream can be replayed with the same sequence numbers.
 */
export function responseEvents(response: ResponseObject, chunks: Chunker): UnnumberedStreamEvent[] {
  const events: UnnumberedStreamEvent[] = [];
  if (response.background) {
    events.push({ type: 'response.created', response: openingSnapshot(response, 'queued') });
    events.push({ type: 'response.queued', response: openingSnapshot(response, 'queued') });
  } else {
    events.push({ type: 'response.created', response: openingSnapshot(response, 'in_progress') });
  }
  events.push({ type: 'response.in_progress', response: openingSnapshot(response, 'in_progress') });
  // One push per event: a long text has one delta per token, too many to spread as arguments.
  for (const [index, item] of response.output.entries()) {
    for (const event of itemEvents(item, index, chunks)) events.push(event);
  }
  if (response.status === 'queued' || response.status === 'in_progress') return events;
  if (response.error) events.push({ type: 'error', code: response.error.code, message: response.error.message, param: null });
  events.push({ type: TERMINAL[response.status], response });
  return events;
}
