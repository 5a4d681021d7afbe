import type { ResponseStore, StoredResponse } from './response-store.ts';

/** Responses in this process's memory: gone on restart. Values are copied in and out. */
export class MemoryResponseStore implements ResponseStore {
  readonly #responses = new Map<string, string>();

  async get(id: string): Promise<StoredResponse | undefined> {
    const json = this.#responses.get(id);
    return json === undefined ? undefined : (JSON.parse(json) as StoredResponse);
  }

  async put(stored: StoredResponse): Promise<void> {
    this.#responses.set(stored.response.id, JSON.stringify(stored));
  }

  async delete(id: string): Promise<boolean> {
    return this.#responses.delete(id);
  }

  async close(): Promise<void> {
    this.#responses.clear();
  }
}
