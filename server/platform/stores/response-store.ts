import type { ConversationItem } from '../../../schemas/items.ts';
import type { ResponseObject } from '../../../schemas/response.ts';
import type { ConversationStore } from './conversation-store.ts';
import type { RecordStore } from './record-store.ts';
import type { SessionEventLog } from './session-event-log.ts';
import { EmulatorError } from '../../../runtime/index.ts';

/** A response kept for `store: true`: the Response itself and the input items of its request. */
export interface StoredResponse {
  readonly response: ResponseObject;
  /** This request's own input items (with ids), oldest first; earlier turns live on earlier responses. */
  readonly inputItems: readonly ConversationItem[];
}

/** The store cannot be reached (Redis down, say): the request may succeed later. */
export class StoreUnavailableError extends EmulatorError {
  override readonly name = 'StoreUnavailableError';
  readonly code = 'PTC_ERR_STORE_UNAVAILABLE';
}

/**
 * Where `store: true` responses live. Asynchronous so durable stores fit behind it; every
 * implementation must return what was put, unchanged, until it is deleted.
 */
export interface ResponseStore {
  get(id: string): Promise<StoredResponse | undefined>;
  put(stored: StoredResponse): Promise<void>;
  /**
   * Puts it only while the response stored under its id is unfinished (`queued` or
   * `in_progress`), as one step against every other write of it: false, and nothing put, when it
   * has finished or gone meanwhile. What a background response's job and its cancellation write
   * with, so that a cancel on one instance and the job's result on another never overwrite each
   * other. Absent: a store one process uses, where a read and a put in that process suffice
   * (putIfUnfinished() below).
   */
  putIfUnfinished?(stored: StoredResponse): Promise<boolean>;
  /** True when something was deleted. */
  delete(id: string): Promise<boolean>;
  /**
   * Output items of stored responses, by item id, each as the JSON text of the item (kept beside
   * its response, so that reading one item never reads its response): for each id asked for
   * that a stored response emitted, the item as the newest such response holds it; other ids are
   * absent. The text lets a caller bound what it parses. Deleting a response takes away the
   * items it was the newest to emit. Absent: a store that finds none (an `mcp_call` resent
   * without its output is then refused, as with `store: false`, and an `item_reference` is not found).
   */
  outputItems?(ids: readonly string[]): Promise<Map<string, string>>;
  /**
   * The bytes of JSON outputItems would return for each of these ids that it finds (for an item
   * indexed by an earlier version, the bytes of the response it is read from), measured without
   * reading the items into this process: what a caller checks against its limit first. Present
   * with outputItems.
   */
  outputItemBytes?(ids: readonly string[]): Promise<Map<string, number>>;
  /**
   * The conversations kept beside the responses (the Conversations API). Absent: a store that
   * keeps none; the server then answers the Conversations API, and `conversation` on a
   * response, with a 400 saying so.
   */
  readonly conversations?: ConversationStore;
  /**
   * The Agents API's agents, sessions and other resources. Absent: a store that keeps none; the
   * server then answers the Agents API with a 400 saying so.
   */
  readonly records?: RecordStore;
  /**
   * The live events of Agents API sessions, shared by every instance of the store. Absent: the
   * server hands them to the streams open in its own process (a store only one process uses).
   */
  readonly sessionEvents?: SessionEventLog;
  /**
   * Resolves when the store can serve now; rejects with StoreUnavailableError saying why when it
   * cannot (what `GET /health` reports). Absent: a store that is always there.
   */
  check?(): Promise<void>;
  close(): Promise<void>;
}

/** The statuses of a response that is still being made (a background one). */
export const UNFINISHED_STATUSES: ReadonlySet<string> = new Set(['queued', 'in_progress']);

/** The store's putIfUnfinished, or, for a store without one, a read and a put. */
export async function putIfUnfinished(store: ResponseStore, stored: StoredResponse): Promise<boolean> {
  if (store.putIfUnfinished) return store.putIfUnfinished(stored);
  const now = await store.get(stored.response.id);
  if (!now || !UNFINISHED_STATUSES.has(now.response.status)) return false;
  await store.put(stored);
  return true;
}
