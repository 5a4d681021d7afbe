import type { ConversationItem } from '../../../schemas/items.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { ResponseStore } from '../../platform/stores/response-store.ts';
import { refuseDuplicateItems } from './duplicate-items.ts';

/**
 * Input items with every `item_reference` read as the stored item it names: the output item of a
 * stored response, as that response holds it (the Vercel AI SDK sends its `store: true`
 * conversation's programs, outputs, messages and reasoning this way). Done before anything else
 * reads the input, so that the rest of the engine sees the items themselves, and a response
 * stores them, not the references (a referenced response deleted later takes nothing from it).
 * Then no two items may share an id (duplicate-items.ts): a reference to an item also sent whole
 * is a duplicate too, and a request cannot multiply one stored item.
 *
 * An id no stored response emitted is refused with the hosted error: 404, its message word for
 * word. The items the references name come to at most `maxBytes` of JSON (what the request's
 * body could have carried, PTC_BODY_LIMIT_BYTES), counted before any is parsed: a small request
 * cannot make the server read a large history into memory.
 */
export async function withReferencesResolved(
  store: ResponseStore,
  items: readonly ConversationItem[],
  listParam: 'input' | 'items',
  maxBytes: number,
): Promise<ConversationItem[]> {
  // A reference repeated is refused as any repeated item is, before anything is read.
  refuseDuplicateItems(items, listParam);
  const references = items.flatMap((item) => (item.type === 'item_reference' ? [item.id] : []));
  if (references.length === 0) return [...items];
  const sizes = store.outputItemBytes ? await store.outputItemBytes(references) : new Map<string, number>();
  const unknown = items.findIndex((item) => item.type === 'item_reference' && !sizes.has(item.id));
  if (unknown >= 0) throw itemNotFound(items[unknown]!.id, `${listParam}[${unknown}]`);
  let bytes = 0;
  for (const size of sizes.values()) bytes += size;
  if (bytes > maxBytes) {
    throw new ApiError(
      'request_too_large',
      `The items ${listParam}'s item_reference entries name come to ${bytes} bytes of JSON, more than the limit of ${maxBytes} bytes for a request (PTC_BODY_LIMIT_BYTES): reference fewer items, or continue with previous_response_id.`,
      listParam,
    );
  }
  const texts = store.outputItems ? await store.outputItems(references) : new Map<string, string>();
  return items.map((item, index) => {
    if (item.type !== 'item_reference') return item;
    const text = texts.get(item.id);
    // Deleted since it was measured.
    if (text === undefined) throw itemNotFound(item.id, `${listParam}[${index}]`);
    return JSON.parse(text) as ConversationItem;
  });
}

function itemNotFound(id: string, param: string): ApiError {
  return new ApiError(
    'item_not_found',
    `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
    param,
  );
}
