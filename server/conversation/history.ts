import type { ConversationItem, InputItem } from '../../schemas/items.ts';
import type { CreateResponseRequest } from '../../schemas/request.ts';
import { ApiError } from '../api-error.ts';
import { newId } from '../ids.ts';
import type { ResponseStore } from '../stores/response-store.ts';
import { MCP_APPROVAL, TOOL_KINDS } from './tool-kinds.ts';

/** The id prefix of each item type a client may send without an id (the same as the emulator's own items'). */
const ID_PREFIX: Readonly<Record<string, string>> = {
  message: 'msg',
  // The calls of the kinds the client answers, their outputs, and its answers to approval requests.
  ...Object.fromEntries(
    Object.values(TOOL_KINDS)
      .filter((kind) => kind.owner === 'client')
      .flatMap((kind) => [kind.call, kind.output])
      .map((item) => [item.type, item.idPrefix]),
  ),
  [MCP_APPROVAL.response.type]: MCP_APPROVAL.response.idPrefix,
  tool_search_call: 'tsc',
  tool_search_output: 'tso',
  program: 'prog',
  program_output: 'prog_out',
  reasoning: 'rs',
};

/** The request's `input` as items, each with an id (a string input is one user message). */
export function inputItems(input: CreateResponseRequest['input']): ConversationItem[] {
  if (input === undefined) return [];
  const items: InputItem[] = typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : input;
  return items.map((item) => ({ ...item, id: item.id ?? newId(ID_PREFIX[item.type] ?? 'item') }) as ConversationItem);
}

/**
 * The conversation a request continues: every stored response of its `previous_response_id`
 * chain, oldest first, each as its input items followed by its output items.
 */
export async function storedHistory(store: ResponseStore, previousResponseId: string | null | undefined): Promise<ConversationItem[]> {
  if (!previousResponseId) return [];
  const turns: ConversationItem[][] = [];
  let id: string | null = previousResponseId;
  while (id) {
    const stored = await store.get(id);
    if (!stored) {
      throw new ApiError(
        'previous_response_not_found',
        id === previousResponseId
          ? `Previous response with id '${id}' not found.`
          : `Previous response with id '${id}' (earlier in the chain of '${previousResponseId}') not found.`,
        'previous_response_id',
      );
    }
    turns.push([...stored.inputItems, ...(stored.response.output as ConversationItem[])]);
    id = stored.response.previous_response_id;
  }
  return turns.reverse().flat();
}

/**
 * The conversation with the output of each `mcp_call` a paused program made that came back
 * without it (the SDK's input type makes it optional, and the Agents SDK leaves it out) taken
 * from the stored response that emitted the call, where one is stored (the same call: the same
 * program, server, tool and arguments). Only calls of programs
 * still running need it: their replay gives the program that output. What is still missing
 * after this is refused when the program resumes (`missing_required_parameter`).
 */
export async function withStoredMcpOutputs(store: ResponseStore, items: readonly ConversationItem[]): Promise<readonly ConversationItem[]> {
  const closed = new Set(items.flatMap((item) => (item.type === 'program_output' ? [item.call_id] : [])));
  const wanted = items.flatMap((item) =>
    item.type === TOOL_KINDS.mcp.call.type && item.output == null && !item.error && item.caller?.type === 'program' && !closed.has(item.caller.caller_id) ? [item.id] : [],
  );
  if (wanted.length === 0 || !store.outputItems) return items;
  const found = await store.outputItems([...new Set(wanted)]);
  if (found.size === 0) return items;
  return items.map((item) => {
    const stored = found.get(item.id);
    if (item.type !== TOOL_KINDS.mcp.call.type || item.output != null || item.error || stored?.type !== TOOL_KINDS.mcp.call.type) return item;
    // The stores find items by id alone, in any conversation: only the same call of the same
    // program fills the output (program call_ids are random), so no request can draw another
    // conversation's MCP output into its own (its usage would show it), nor learn that an id exists.
    const same =
      stored.caller?.type === 'program' &&
      item.caller?.type === 'program' &&
      stored.caller.caller_id === item.caller.caller_id &&
      stored.server_label === item.server_label &&
      stored.name === item.name &&
      stored.arguments === item.arguments;
    if (!same) return item;
    // Only what was left out: the rest of the item is checked against its sealed id as sent.
    return { ...item, output: stored.output ?? null, error: item.error ?? stored.error ?? null };
  });
}
