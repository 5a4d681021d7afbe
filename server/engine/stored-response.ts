import { ApiError } from '../platform/api-error.ts';
import type { ResponseStore, StoredResponse } from '../platform/stores/response-store.ts';

/** The 404 for an id that names no stored response: never stored, deleted, or `store: false`. */
export function responseNotFound(id: string): ApiError {
  return new ApiError('response_not_found', `Response with id '${id}' not found.`, 'response_id');
}

/** The stored response `id` names, or the 404 that says it names none. */
export async function storedOrNotFound(store: ResponseStore, id: string): Promise<StoredResponse> {
  const stored = await store.get(id);
  if (!stored) throw responseNotFound(id);
  return stored;
}
