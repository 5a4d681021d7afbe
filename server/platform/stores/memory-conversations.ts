import type { ConversationObject } from '../../../schemas/conversation.ts';
import type { ConversationItem } from '../../../schemas/items.ts';
import { UnknownCursorError, type ConversationStore, type ItemPage, type ItemPageQuery } from './conversation-store.ts';

interface Held {
  conversation: ConversationObject;
  /** Items as JSON, oldest first, by id (a Map keeps insertion order). */
  readonly items: Map<string, string>;
  /** Until when the lock is held (ms since the epoch); 0 when free. */
  lockedUntil: number;
  lockToken: symbol | undefined;
}

/** Conversations in this process's memory, gone on restart. Values are copied in and out. */
export class MemoryConversationStore implements ConversationStore {
  readonly #conversations = new Map<string, Held>();

  async create(conversation: ConversationObject, items: readonly ConversationItem[]): Promise<void> {
    this.#conversations.set(conversation.id, {
      conversation: structuredClone(conversation),
      items: new Map(items.map((item) => [item.id, JSON.stringify(item)])),
      lockedUntil: 0,
      lockToken: undefined,
    });
  }

  async get(id: string): Promise<ConversationObject | undefined> {
    const held = this.#conversations.get(id);
    return held && structuredClone(held.conversation);
  }

  async update(id: string, metadata: ConversationObject['metadata']): Promise<ConversationObject | undefined> {
    const held = this.#conversations.get(id);
    if (!held) return undefined;
    held.conversation = { ...held.conversation, metadata: { ...metadata } };
    return structuredClone(held.conversation);
  }

  async delete(id: string): Promise<boolean> {
    return this.#conversations.delete(id);
  }

  async append(id: string, items: readonly ConversationItem[]): Promise<boolean> {
    const held = this.#conversations.get(id);
    if (!held) return false;
    for (const item of items) held.items.set(item.id, JSON.stringify(item));
    return true;
  }

  async items(id: string): Promise<ConversationItem[] | undefined> {
    const held = this.#conversations.get(id);
    return held && [...held.items.values()].map((json) => JSON.parse(json) as ConversationItem);
  }

  async existingIds(id: string, itemIds: readonly string[]): Promise<Set<string>> {
    const held = this.#conversations.get(id);
    return new Set(held ? itemIds.filter((itemId) => held.items.has(itemId)) : []);
  }

  async page(id: string, query: ItemPageQuery): Promise<ItemPage | undefined> {
    const held = this.#conversations.get(id);
    if (!held) return undefined;
    const ids = [...held.items.keys()];
    if (query.order === 'desc') ids.reverse();
    let start = 0;
    if (query.after !== undefined) {
      const index = ids.indexOf(query.after);
      if (index < 0) throw new UnknownCursorError(query.after);
      start = index + 1;
    }
    const data = ids.slice(start, start + query.limit).map((itemId) => JSON.parse(held.items.get(itemId)!) as ConversationItem);
    return { data, has_more: start + query.limit < ids.length };
  }

  async item(id: string, itemId: string): Promise<ConversationItem | undefined> {
    const json = this.#conversations.get(id)?.items.get(itemId);
    return json === undefined ? undefined : (JSON.parse(json) as ConversationItem);
  }

  async deleteItem(id: string, itemId: string): Promise<boolean> {
    return this.#conversations.get(id)?.items.delete(itemId) ?? false;
  }

  async lock(id: string, ttlMs: number): Promise<(() => Promise<void>) | undefined> {
    const held = this.#conversations.get(id);
    if (!held) return async () => {};
    const now = Date.now();
    if (held.lockedUntil > now) return undefined;
    const token = Symbol(id);
    held.lockedUntil = now + ttlMs;
    held.lockToken = token;
    return async () => {
      // Released by its holder only: a lock that expired may have been taken by another response.
      if (held.lockToken !== token) return;
      held.lockedUntil = 0;
      held.lockToken = undefined;
    };
  }

  clear(): void {
    this.#conversations.clear();
  }
}
