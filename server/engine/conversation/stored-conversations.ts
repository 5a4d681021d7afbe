import type { ConversationItem } from '../../../schemas/items.ts';
import type { CreateResponseRequest } from '../../../schemas/request.ts';
import type { SealingKeys } from '../../../runtime/index.ts';
import { expandCompactions } from './compaction.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { ConversationStore } from '../../platform/stores/conversation-store.ts';
import type { ResponseStore } from '../../platform/stores/response-store.ts';

/**
 * How long a response may hold its conversation's lock: long enough for any turn the server
 * runs, short enough that a process that died holding it frees the conversation soon after.
 * A response that runs longer lets the next request into the conversation meanwhile.
 */
export const CONVERSATION_LOCK_MS = 60_000;

/** The conversations of the server's store, or the 400 saying its store keeps none. */
export function conversationsOf(store: ResponseStore): ConversationStore {
  if (!store.conversations) {
    throw new ApiError(
      'conversations_unsupported',
      "This server's response store keeps no conversations (a store given to buildServer() without a `conversations` member).",
      null,
    );
  }
  return store.conversations;
}

/** The hosted refusal of a request while a response is being made in the conversation. */
export function conversationLocked(): ApiError {
  return new ApiError('conversation_locked', 'Another process is currently operating on this conversation. Please retry in a few seconds.', 'conversation');
}

/** The 404 for an id that names no conversation; `param` is where the id came from. */
export function conversationNotFound(id: string, param = 'conversation_id'): ApiError {
  return new ApiError('conversation_not_found', `Conversation with id '${id}' not found.`, param);
}

/** The conversation a response request names, as `"conv_…"` or `{id}`. */
export function conversationIdOf(body: Pick<CreateResponseRequest, 'conversation'>): string | undefined {
  const { conversation } = body;
  if (conversation == null) return undefined;
  return typeof conversation === 'string' ? conversation : conversation.id;
}

/** Refuses items whose ids the conversation already holds (`held`), naming the first as `param[i]`. */
export function refuseHeldIds(conversationId: string, held: ReadonlySet<string>, items: readonly ConversationItem[], param: string): void {
  const index = items.findIndex((item) => held.has(item.id));
  if (index >= 0) {
    throw new ApiError(
      'duplicate_item_id',
      `Duplicate item id '${items[index]!.id}': conversation '${conversationId}' already holds an item with it.`,
      `${param}[${index}].id`,
    );
  }
}

/** The hosted refusal of `conversation` and `previous_response_id` in one request. */
export function bothConversationAndPrevious(): ApiError {
  return new ApiError(
    'mutually_exclusive_parameters',
    "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.",
    'conversation',
  );
}

/**
 * The longest item id a conversation keeps: its items are addressed by id in URL paths
 * (`/v1/conversations/{id}/items/{item_id}`), which must be able to name every one.
 */
export const MAX_CONVERSATION_ITEM_ID_CHARS = 256;

/**
 * Refuses items that cannot join a conversation as they are, naming the first at `param[i]`:
 * an id empty or longer than MAX_CONVERSATION_ITEM_ID_CHARS, a compaction item the emulator did
 * not seal (it would make every later response in the conversation fail). An id repeated within
 * them was refused before, with every request's input (duplicate-items.ts).
 */
export function refuseUnfitItems(items: readonly ConversationItem[], param: string, keys: SealingKeys): void {
  items.forEach((item, index) => {
    if (item.id.length === 0 || item.id.length > MAX_CONVERSATION_ITEM_ID_CHARS) {
      throw new ApiError(
        'invalid_value',
        `Invalid id at ${param}[${index}]: a conversation's item ids are 1 to ${MAX_CONVERSATION_ITEM_ID_CHARS} characters, this one has ${item.id.length}.`,
        `${param}[${index}].id`,
      );
    }
  });
  expandCompactions(items, keys, (index) => `${param}[${index}]`);
}
