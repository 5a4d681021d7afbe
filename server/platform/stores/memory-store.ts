import type { ConversationItem } from '../../../schemas/items.ts';
import { MemoryConversationStore } from './memory-conversations.ts';
import { MemoryRecordStore } from './record-store.ts';
import type { ResponseStore, StoredResponse } from './response-store.ts';

/** Responses in this process's memory: gone on restart. Values are copied in and out. */
export class MemoryResponseStore implements ResponseStore {
  readonly #responses = new Map<string, string>();
  /** The response that last emitted each output item, by item id. */
  readonly #itemOwners = new Map<string, string>();
  /** The ids of each stored response's output items, so a put or delete need not parse its body again. */
  readonly #itemsOf = new Map<string, readonly string[]>();
  readonly conversations = new MemoryConversationStore();
  readonly records = new MemoryRecordStore();

  async get(id: string): Promise<StoredResponse | undefined> {
    const json = this.#responses.get(id);
    return json === undefined ? undefined : (JSON.parse(json) as StoredResponse);
  }

  async put(stored: StoredResponse): Promise<void> {
    const { id } = stored.response;
    // A response put again keeps only the items it holds now.
    this.#forgetItems(id);
    this.#responses.set(id, JSON.stringify(stored));
    const itemIds = stored.response.output.map((item) => item.id);
    this.#itemsOf.set(id, itemIds);
    for (const itemId of itemIds) this.#itemOwners.set(itemId, id);
  }

  async delete(id: string): Promise<boolean> {
    this.#forgetItems(id);
    return this.#responses.delete(id);
  }

  async outputItems(ids: readonly string[]): Promise<Map<string, ConversationItem>> {
    const found = new Map<string, ConversationItem>();
    // Each owner's body is parsed once, however many of its items are asked for.
    const outputs = new Map<string, Map<string, ConversationItem>>();
    for (const itemId of ids) {
      const owner = this.#itemOwners.get(itemId);
      if (owner === undefined) continue;
      let output = outputs.get(owner);
      if (!output) {
        output = new Map(((await this.get(owner))?.response.output ?? []).map((item) => [item.id, item as ConversationItem]));
        outputs.set(owner, output);
      }
      const item = output.get(itemId);
      if (item) found.set(itemId, item);
    }
    return found;
  }

  async close(): Promise<void> {
    this.#responses.clear();
    this.#itemOwners.clear();
    this.#itemsOf.clear();
    this.conversations.clear();
  }

  /** Drops the index entries that still point at this response (a newer one may own an item now). */
  #forgetItems(id: string): void {
    for (const itemId of this.#itemsOf.get(id) ?? []) if (this.#itemOwners.get(itemId) === id) this.#itemOwners.delete(itemId);
    this.#itemsOf.delete(id);
  }
}
