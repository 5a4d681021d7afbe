import type { FastifyInstance } from 'fastify';
import {
  CreateConversationRequest,
  CreateItemsRequest,
  ItemQuery,
  ListItemsQuery,
  UpdateConversationRequest,
  type ConversationObject,
  type DeletedConversation,
} from '../../../schemas/conversation.ts';
import type { ConversationItem } from '../../../schemas/items.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { SealingKeys } from '../../../runtime/index.ts';
import {
  CONVERSATION_LOCK_MS,
  conversationLocked,
  conversationNotFound,
  conversationsOf,
  refuseHeldIds,
  refuseUnfitItems,
} from '../../engine/conversation/stored-conversations.ts';
import { inputItems } from '../../engine/conversation/history.ts';
import { withReferencesResolved } from '../../engine/conversation/item-references.ts';
import { newId } from '../../platform/ids.ts';
import { listedItem } from '../http/listed-item.ts';
import { listOf } from '../http/list-page.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';
import { UnknownCursorError, type ConversationStore } from '../../platform/stores/conversation-store.ts';
import type { ResponseStore } from '../../platform/stores/response-store.ts';

type ConversationParams = { Params: { conversation_id: string } };
type ItemParams = { Params: { conversation_id: string; item_id: string } };

/** A list of items as the Conversations API returns one. */
function itemList(items: readonly ConversationItem[], hasMore: boolean) {
  return listOf(items.map(listedItem), hasMore);
}

/**
 * The Conversations API (`client.conversations.*` of the SDK 7.60.0): conversations with
 * metadata, and their items as the Responses API lists them, paged by cursor.
 */
export function registerConversationRoutes(app: FastifyInstance, store: ResponseStore, sealingKeys: SealingKeys, maxReferencedBytes: number): void {
  /** Items a request adds, with ids, each fit to join a conversation. */
  const newItems = async (items: Parameters<typeof inputItems>[0]): Promise<ConversationItem[]> => {
    const withIds = await withReferencesResolved(store, inputItems(items), 'items', maxReferencedBytes);
    refuseUnfitItems(withIds, 'items', sealingKeys);
    return withIds;
  };

  const found = async (conversations: ConversationStore, id: string): Promise<ConversationObject> => {
    const conversation = await conversations.get(id);
    if (!conversation) throw conversationNotFound(id);
    return conversation;
  };

  app.post('/v1/conversations', async (request): Promise<ConversationObject> => {
    const conversations = conversationsOf(store);
    // The SDK sends no body at all for `create()` without arguments.
    const body = parseOrThrow(CreateConversationRequest, request.body ?? {});
    const conversation: ConversationObject = {
      id: newId('conv'),
      object: 'conversation',
      created_at: Math.floor(Date.now() / 1000),
      metadata: body.metadata ?? {},
    };
    await conversations.create(conversation, await newItems(body.items ?? []));
    return conversation;
  });

  app.get<ConversationParams>('/v1/conversations/:conversation_id', async (request) => found(conversationsOf(store), request.params.conversation_id));

  app.post<ConversationParams>('/v1/conversations/:conversation_id', async (request): Promise<ConversationObject> => {
    const conversations = conversationsOf(store);
    const body = parseOrThrow(UpdateConversationRequest, request.body ?? {});
    const updated = await conversations.update(request.params.conversation_id, body.metadata ?? {});
    if (!updated) throw conversationNotFound(request.params.conversation_id);
    return updated;
  });

  app.delete<ConversationParams>('/v1/conversations/:conversation_id', async (request): Promise<DeletedConversation> => {
    const id = request.params.conversation_id;
    if (!(await conversationsOf(store).delete(id))) throw conversationNotFound(id);
    return { id, object: 'conversation.deleted', deleted: true };
  });

  app.post<ConversationParams>('/v1/conversations/:conversation_id/items', async (request) => {
    const conversations = conversationsOf(store);
    parseOrThrow(ItemQuery, request.query);
    const id = request.params.conversation_id;
    const body = parseOrThrow(CreateItemsRequest, request.body ?? {});
    await found(conversations, id);
    const items = await newItems(body.items);
    // Not while a response is being made in the conversation: its items would land before the
    // response's, which never saw them, and an id the response adds too would be overwritten.
    const release = await conversations.lock(id, CONVERSATION_LOCK_MS);
    if (!release) throw conversationLocked();
    try {
      refuseHeldIds(
        id,
        await conversations.existingIds(
          id,
          items.map((item) => item.id),
        ),
        items,
        'items',
      );
      if (!(await conversations.append(id, items))) throw conversationNotFound(id);
    } finally {
      await release().catch(() => undefined);
    }
    return itemList(items, false);
  });

  app.get<ConversationParams>('/v1/conversations/:conversation_id/items', async (request) => {
    const conversations = conversationsOf(store);
    const query = parseOrThrow(ListItemsQuery, request.query);
    const id = request.params.conversation_id;
    let page;
    try {
      page = await conversations.page(id, { limit: query.limit, order: query.order, ...(query.after !== undefined ? { after: query.after } : {}) });
    } catch (error) {
      if (!(error instanceof UnknownCursorError)) throw error;
      throw new ApiError('invalid_value', `Invalid value for 'after': no item '${query.after}' in conversation '${id}'.`, 'after');
    }
    if (!page) throw conversationNotFound(id);
    return itemList(page.data, page.has_more);
  });

  app.get<ItemParams>('/v1/conversations/:conversation_id/items/:item_id', async (request) => {
    const conversations = conversationsOf(store);
    parseOrThrow(ItemQuery, request.query);
    const { conversation_id: id, item_id: itemId } = request.params;
    const item = await conversations.item(id, itemId);
    if (item) return listedItem(item);
    await found(conversations, id);
    throw itemNotFound(id, itemId);
  });

  app.delete<ItemParams>('/v1/conversations/:conversation_id/items/:item_id', async (request): Promise<ConversationObject> => {
    const conversations = conversationsOf(store);
    const { conversation_id: id, item_id: itemId } = request.params;
    const conversation = await found(conversations, id);
    if (!(await conversations.deleteItem(id, itemId))) throw itemNotFound(id, itemId);
    return conversation;
  });
}

function itemNotFound(conversationId: string, itemId: string): ApiError {
  return new ApiError('conversation_item_not_found', `Item with id '${itemId}' not found in conversation '${conversationId}'.`, 'item_id');
}
