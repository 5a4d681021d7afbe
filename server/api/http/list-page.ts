import { ApiError } from '../../platform/api-error.ts';

export interface ListQuery {
  readonly after?: string | undefined;
  readonly limit: number;
  readonly order: 'asc' | 'desc';
}

/**
 * One page of a list held whole, oldest first: `after` an id, in `order`. With `sortable` ids
 * (newSortableId), an `after` that is no longer listed (deleted since) pages on from where it
 * was; otherwise it is `unknownAfter`'s error.
 */
export function pageOf<T extends { id: string }>(
  oldestFirst: readonly T[],
  query: ListQuery,
  unknownAfter: (after: string) => ApiError,
  sortable = false,
): { data: T[]; has_more: boolean } {
  const ordered = query.order === 'asc' ? oldestFirst : [...oldestFirst].reverse();
  let start = 0;
  const { after } = query;
  if (after !== undefined) {
    const index = ordered.findIndex((entry) => entry.id === after);
    if (index >= 0) start = index + 1;
    else if (sortable && sortsLike(after, ordered[0]?.id)) {
      const next = ordered.findIndex((entry) => (query.order === 'asc' ? entry.id > after : entry.id < after));
      start = next < 0 ? ordered.length : next;
    } else {
      throw unknownAfter(after);
    }
  }
  return { data: ordered.slice(start, start + query.limit), has_more: start + query.limit < ordered.length };
}

/** A cursor page of a list held whole, as the Agents API answers it; an unknown `after` is a 400 naming `what` was looked for. */
export function cursorPage<T extends { id: string }>(oldestFirst: readonly T[], query: ListQuery, what: string, sortable = false) {
  const page = pageOf(
    oldestFirst,
    query,
    (after) => new ApiError('invalid_value', `Invalid value for 'after': no ${what} has id '${after}'.`, 'after'),
    sortable,
  );
  return listOf(page.data, page.has_more);
}

/** A page as the API's lists answer it (the SDK's cursor pages read `has_more` and the ids). */
export function listOf<T extends { id: string }>(data: readonly T[], hasMore: boolean) {
  return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}

/** Whether `id` has the shape of the listed ids (same prefix and length), so comparing them means something. */
function sortsLike(id: string, listed: string | undefined): boolean {
  if (listed === undefined) return /^[a-z]+_[0-9a-f]{48}$/.test(id);
  return id.length === listed.length && id.slice(0, id.indexOf('_')) === listed.slice(0, listed.indexOf('_'));
}
