import type { ConversationItem } from '../schemas/items.ts';
import type { CreateResponseRequest } from '../schemas/request.ts';
import { ApiError } from './api-error.ts';
import type { ConversationStore } from './stores/conversation-store.ts';
import type { ResponseStore } from './stores/response-store.ts';

/**
 * How long a response may hold its conversation's lock: long enough for any turn the server
 * runs, short enough that a process that died holding it frees the conversation soon after.
 * A response that runs longer lets the next request into the conversation meanwhile.
 */
export const CONVERSATION_LOCK_MS = 60_000;

/** The conversations of the server's store, or the 400 saying its store keeps none. */
export function conversationsOf(store: ResponseStore): ConversationStore {
  if (!store.conversations) {
    throw new ApiError('conversations_unsupported', "This server's response store keeps no conversations (a store given to buildServer() without a `conversations` member).", null);
  }
  return store.conversations;
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
    throw new ApiError('duplicate_item_id', `Duplicate item id '${items[index]!.id}': conversation '${conversationId}' already holds an item with it.`, `${param}[${index}].id`);
  }
}

/** The hosted refusal of `conversation` and `previous_response_id` in one request. */
export function bothConversationAndPrevious(): ApiError {
  return new ApiError('mutually_exclusive_parameters', "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.", 'conversation');
}
