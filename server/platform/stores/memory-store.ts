import { MemoryConversationStore } from './memory-conversations.ts';
import { MemoryRecordStore } from './record-store.ts';
import { UNFINISHED_STATUSES, type ResponseStore, type StoredResponse } from './response-store.ts';

/** Responses in this process's memory: gone on restart. Values are copied in and out. */
export class MemoryResponseStore implements ResponseStore {
  readonly #responses = new Map<string, string>();
  /** The response that last emitted each output item, and the item's JSON, by item id. */
  readonly #itemOwners = new Map<string, { readonly owner: string; readonly json: string }>();
  /** The ids of each stored response's output items, so a put or delete need not parse its body again. */
  readonly #itemsOf = new Map<string, readonly string[]>();
  /** Each stored response's status, so a conditional put need not parse its body. */
  readonly #statuses = new Map<string, string>();
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
    this.#statuses.set(id, stored.response.status);
    const itemIds = stored.response.output.map((item) => item.id);
    this.#itemsOf.set(id, itemIds);
    for (const item of stored.response.output) this.#itemOwners.set(item.id, { owner: id, json: JSON.stringify(item) });
  }

  async putIfUnfinished(stored: StoredResponse): Promise<boolean> {
    const status = this.#statuses.get(stored.response.id);
    if (status === undefined || !UNFINISHED_STATUSES.has(status)) return false;
    await this.put(stored);
    return true;
  }

  async delete(id: string): Promise<boolean> {
    this.#forgetItems(id);
    this.#statuses.delete(id);
    return this.#responses.delete(id);
  }

  async outputItems(ids: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    for (const itemId of ids) {
      const item = this.#itemOwners.get(itemId);
      if (item) found.set(itemId, item.json);
    }
    return found;
  }

  async outputItemBytes(ids: readonly string[]): Promise<Map<string, number>> {
    const found = new Map<string, number>();
    for (const itemId of ids) {
      const item = this.#itemOwners.get(itemId);
      if (item) found.set(itemId, Buffer.byteLength(item.json));
    }
    return found;
  }

  async close(): Promise<void> {
    this.#responses.clear();
    this.#itemOwners.clear();
    this.#itemsOf.clear();
    this.#statuses.clear();
    this.conversations.clear();
  }

  /** Drops the index entries that still point at this response (a newer one may own an item now). */
  #forgetItems(id: string): void {
    for (const itemId of this.#itemsOf.get(id) ?? []) if (this.#itemOwners.get(itemId)?.owner === id) this.#itemOwners.delete(itemId);
    this.#itemsOf.delete(id);
  }
}
