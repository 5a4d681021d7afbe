import type { ConversationItem } from '../../../schemas/items.ts';
import type { ConversationObject } from '../../../schemas/conversation.ts';
import { EmulatorError } from '../../../runtime/index.ts';

/** One page of a conversation's items, in the order asked for. */
export interface ItemPage {
  readonly data: readonly ConversationItem[];
  /** More items follow the last one in this order. */
  readonly has_more: boolean;
}

export interface ItemPageQuery {
  /** An item id of this conversation: the page starts after it. */
  readonly after?: string;
  readonly limit: number;
  readonly order: 'asc' | 'desc';
}

/** `after` names no item of the conversation. */
export class UnknownCursorError extends EmulatorError {
  override readonly name = 'UnknownCursorError';
  readonly code = 'PTC_ERR_UNKNOWN_CURSOR';
}

/**
 * Where conversations (the Conversations API, and `conversation` on `POST /v1/responses`)
 * live, beside the responses of the same store. A conversation is its object and an ordered
 * list of items, each with an id unique within it. Every method that takes a conversation id
 * answers `undefined` or `false` for one that does not exist (never created, or deleted);
 * failures to reach the store are StoreUnavailableError, as for responses.
 */
export interface ConversationStore {
  /** Creates a conversation holding `items` (oldest first). Its id is new. */
  create(conversation: ConversationObject, items: readonly ConversationItem[]): Promise<void>;
  get(id: string): Promise<ConversationObject | undefined>;
  /** Replaces the metadata; the conversation as it is now. */
  update(id: string, metadata: ConversationObject['metadata']): Promise<ConversationObject | undefined>;
  /** Deletes the conversation and its items; true when there was one. */
  delete(id: string): Promise<boolean>;
  /**
   * Adds items after the last one, in order, all or none. False when the conversation does not
   * exist. The caller has checked that no id is already in it (`itemIds`).
   */
  append(id: string, items: readonly ConversationItem[]): Promise<boolean>;
  /** Every item, oldest first: the history a response in this conversation continues. */
  items(id: string): Promise<ConversationItem[] | undefined>;
  /** The ids among `itemIds` that the conversation already holds. */
  existingIds(id: string, itemIds: readonly string[]): Promise<Set<string>>;
  /** A page of items; throws UnknownCursorError when `after` is not an item of it. */
  page(id: string, query: ItemPageQuery): Promise<ItemPage | undefined>;
  item(id: string, itemId: string): Promise<ConversationItem | undefined>;
  /** True when the item was there. */
  deleteItem(id: string, itemId: string): Promise<boolean>;
  /**
   * Takes the conversation's lock for a response being made in it, for at most `ttlMs` (so a
   * process that died holding it cannot lock the conversation for ever). Resolves to the
   * function that releases it, or undefined when another response holds it now. Shared by
   * every instance on the same store.
   */
  lock(id: string, ttlMs: number): Promise<(() => Promise<void>) | undefined>;
}
