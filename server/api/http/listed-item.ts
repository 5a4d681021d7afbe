import type { ConversationItem } from '../../../schemas/items.ts';
import { TOOL_KINDS } from '../../engine/conversation/tool-kinds.ts';

const { function: FUNCTION, custom: CUSTOM, shell: SHELL, apply_patch: APPLY_PATCH } = TOOL_KINDS;

/**
 * Input items as `GET /v1/responses/{id}/input_items` lists them. A client may send an item in
 * its short form (a message's content as a string; an output without `status`; a shell call
 * without `environment`), but the API lists every item whole: the fields the SDK's `ResponseItem`
 * types require are filled with what the short form means.
 */
export function listedItem(item: ConversationItem): ConversationItem {
  // Some short forms have no `status` field at all (a custom_tool_call), which the listed type requires.
  const completed = <T extends object>(value: T): T & { status: unknown } => ({ ...value, status: (value as { status?: unknown }).status ?? 'completed' });
  switch (item.type) {
    case 'message': {
      const status = item.status ?? 'completed';
      if (typeof item.content !== 'string') return { ...item, status };
      const part =
        item.role === 'assistant' ? { type: 'output_text' as const, text: item.content, annotations: [] } : { type: 'input_text' as const, text: item.content };
      return { ...item, content: [part], status };
    }
    case FUNCTION.call.type:
    case FUNCTION.output.type:
    case CUSTOM.call.type:
    case CUSTOM.output.type:
    case APPLY_PATCH.call.type:
      return completed(item);
    case SHELL.call.type:
      return {
        ...completed(item),
        action: { ...item.action, timeout_ms: item.action.timeout_ms ?? null, max_output_length: item.action.max_output_length ?? null },
        environment: item.environment ?? null,
      };
    case SHELL.output.type:
      return { ...completed(item), max_output_length: item.max_output_length ?? null };
    case 'tool_search_call':
    case 'tool_search_output':
      // A search the client does not say otherwise of ran on the server, as the API's default.
      return { ...completed(item), call_id: item.call_id ?? null, execution: item.execution ?? 'server' };
    default:
      return item;
  }
}
