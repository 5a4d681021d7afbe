import type { ConversationItem } from '../../schemas/items.ts';
import { MemoryConversationStore } from './memory-conversations.ts';
import type { ResponseStore, StoredResponse } from './response-store.ts';

/** Responses in this process's memory: gone on restart. Values are copied in and out. */
export class MemoryResponseStore implements ResponseStore {
  readonly #responses = new Map<string, string>();
  /** The response that last emitted each output item, by item id. */
  readonly #itemOwners = new Map<string, string>();
  readonly conversations = new MemoryConversationStore();

  async get(id: string): Promise<StoredResponse | undefined> {
    const json = this.#responses.get(id);
    return json === undefined ? undefined : (JSON.parse(json) as StoredResponse);
  }

  async put(stored: StoredResponse): Promise<void> {
    const { id } = stored.response;
    // A response put again keeps only the items it holds now.
    const before = await this.get(id);
    if (before) this.#forgetItems(before);
    this.#responses.set(id, JSON.stringify(stored));
    for (const item of stored.response.output) this.#itemOwners.set(item.id, id);
  }

  async delete(id: string): Promise<boolean> {
    const stored = await this.get(id);
    if (stored) this.#forgetItems(stored);
    return this.#responses.delete(id);
  }

  async outputItems(ids: readonly string[]): Promise<Map<string, ConversationItem>> {
    const found = new Map<string, ConversationItem>();
    for (const itemId of ids) {
      const owner = this.#itemOwners.get(itemId);
      const item = owner === undefined ? undefined : (await this.get(owner))?.response.output.find((candidate) => candidate.id === itemId);
      if (item) found.set(itemId, item as ConversationItem);
    }
    return found;
  }

  async close(): Promise<void> {
    this.#responses.clear();
    this.#itemOwners.clear();
    this.conversations.clear();
  }

  /** Drops the index entries that still point at this response (a newer one may own an item now). */
  #forgetItems(stored: StoredResponse): void {
    for (const item of stored.response.output) if (this.#itemOwners.get(item.id) === stored.response.id) this.#itemOwners.delete(item.id);
  }
}
