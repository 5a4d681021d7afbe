import type { ConversationItem } from '../../../schemas/items.ts';
import { ApiError } from '../../platform/api-error.ts';

/**
 * Refuses items of one request that share an id, with the hosted message: an id names one item
 * (a response lists its input items by id, a conversation keeps one item per id). Read after
 * item references are resolved, so a reference to an item also sent whole is one too. Items sent
 * without an id were given a fresh one and never collide.
 */
export function refuseDuplicateItems(items: readonly ConversationItem[], listParam: 'input' | 'items'): void {
  const seen = new Set<string>();
  items.forEach((item, index) => {
    if (seen.has(item.id)) {
      throw new ApiError(
        'duplicate_item_id',
        `Duplicate item found with id ${item.id}. Remove duplicate items from your input and try again.`,
        `${listParam}[${index}].id`,
      );
    }
    seen.add(item.id);
  });
}
