import type { ConversationItem, InputItem } from '../../../schemas/items.ts';
import type { CreateResponseRequest } from '../../../schemas/request.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { SealingKeys } from '../../../runtime/index.ts';
import {
  bothConversationAndPrevious,
  CONVERSATION_LOCK_MS,
  conversationIdOf,
  conversationLocked,
  conversationNotFound,
  conversationsOf,
  refuseHeldIds,
  refuseUnfitItems,
} from './stored-conversations.ts';
import { newId } from '../../platform/ids.ts';
import type { ResponseStore } from '../../platform/stores/response-store.ts';
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
  // The hosted service's prefixes for them (recorded responses show `cm_` and `cmo_`).
  program: 'cm',
  program_output: 'cmo',
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
    const madeIn = stored.response.conversation?.id;
    if (madeIn !== undefined) {
      // Its own input and output are only part of what it continued: the rest is the conversation's.
      throw new ApiError(
        'invalid_value',
        `Response '${id}' was made in conversation '${madeIn}': continue it with conversation: '${madeIn}', not previous_response_id (to compact it, send the conversation's items as input).`,
        'previous_response_id',
      );
    }
    turns.push([...stored.inputItems, ...(stored.response.output as ConversationItem[])]);
    id = stored.response.previous_response_id;
  }
  return turns.reverse().flat();
}

/** A response being made in a conversation: its lock is held until `release`. */
export interface ConversationTurn {
  readonly id: string;
  /** The conversation's items, oldest first: what the response continues. */
  readonly history: readonly ConversationItem[];
  release(): Promise<void>;
}

/**
 * Enters the conversation a request names, if it names one: checks it exists and that no new
 * item repeats an id it holds, and takes its lock (a second response in the same conversation
 * meanwhile gets `conversation_locked`, as from the hosted API).
 */
export async function enterConversation(
  store: ResponseStore,
  body: CreateResponseRequest,
  newInput: readonly ConversationItem[],
  keys: SealingKeys,
): Promise<ConversationTurn | undefined> {
  const id = conversationIdOf(body);
  if (id === undefined) return undefined;
  if (body.previous_response_id) {
    throw bothConversationAndPrevious();
  }
  if (body.store === false) {
    throw new ApiError(
      'invalid_value',
      "conversation needs store: true: the response's input and output are added to the conversation, which store: false forbids.",
      'store',
    );
  }
  const conversations = conversationsOf(store);
  const release = await conversations.lock(id, CONVERSATION_LOCK_MS);
  if (!release) throw conversationLocked();
  try {
    const history = await conversations.items(id);
    if (!history) throw conversationNotFound(id, 'conversation');
    refuseUnfitItems(newInput, 'input', keys);
    refuseHeldIds(id, new Set(history.map((item) => item.id)), newInput, 'input');
    // A lock that cannot be released (the store went away) lapses after CONVERSATION_LOCK_MS:
    // that must not fail a response already made and added to the conversation.
    return { id, history, release: () => release().catch(() => undefined) };
  } catch (error) {
    await release();
    throw error;
  }
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
    item.type === TOOL_KINDS.mcp.call.type && item.output == null && !item.error && item.caller?.type === 'program' && !closed.has(item.caller.caller_id)
      ? [item.id]
      : [],
  );
  if (wanted.length === 0 || !store.outputItems) return items;
  const texts = await store.outputItems([...new Set(wanted)]);
  if (texts.size === 0) return items;
  const found = new Map([...texts].map(([id, text]) => [id, JSON.parse(text) as ConversationItem]));
  return items.map((item) => {
    const stored = found.get(item.id);
    if (item.type !== TOOL_KINDS.mcp.call.type || item.output != null || item.error || stored?.type !== TOOL_KINDS.mcp.call.type) return item;
    // The stores find items by id alone, in any conversation: only the same call of the same
    // program fills the output (program call_ids are random), so an output left out is never
    // filled from another conversation's call. (An item_reference names an item by its id on
    // purpose, and reads it from any stored response: item-references.ts.)
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

/**
 * The history a request continues without making a response in it (`input_tokens`,
 * `compact`): the conversation's items, or the `previous_response_id` chain. No lock is taken.
 */
export async function historyOf(
  store: ResponseStore,
  body: { conversation?: CreateResponseRequest['conversation']; previous_response_id?: string | null },
): Promise<readonly ConversationItem[]> {
  const id = conversationIdOf(body);
  if (id === undefined) return storedHistory(store, body.previous_response_id);
  if (body.previous_response_id) {
    throw bothConversationAndPrevious();
  }
  const history = await conversationsOf(store).items(id);
  if (!history) throw conversationNotFound(id, 'conversation');
  return history;
}
