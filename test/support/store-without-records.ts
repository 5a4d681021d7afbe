import type { ResponseStore } from '../../server/platform/stores/response-store.ts';

/**
 * A response store of a user's own making, in memory, with responses only: no records (the
 * Agents API's, webhook endpoints), so the routes that need them answer that they are unsupported.
 */
export function storeWithoutRecords(): ResponseStore {
  const responses = new Map<string, unknown>();
  return {
    get: async (id: string) => responses.get(id) as never,
    put: async (stored: { response: { id: string } }) => void responses.set(stored.response.id, stored),
    delete: async (id: string) => responses.delete(id),
    close: async () => {},
  } as ResponseStore;
}
