import { ApiError } from '../api-error.ts';

export interface ListQuery {
  readonly after?: string | undefined;
  readonly limit: number;
  readonly order: 'asc' | 'desc';
}

/**
 * A cursor page as the Agents API lists: `after` an id, in `order`; the SDK reads `has_more` and
 * the ids. With `sortable` ids (newSortableId), an `after` that is no longer listed (deleted
 * since) pages on from where it was; otherwise it is a 400 naming it.
 */
export function cursorPage<T extends { id: string }>(oldestFirst: readonly T[], query: ListQuery, what: string, sortable = false) {
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
      throw new ApiError('invalid_value', `Invalid value for 'after': no ${what} has id '${after}'.`, 'after');
    }
  }
  return listOf(ordered.slice(start, start + query.limit), start + query.limit < ordered.length);
}

/** A page as the Agents API's lists answer it. */
export function listOf<T extends { id: string }>(data: readonly T[], hasMore: boolean) {
  return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}

/** Whether `id` has the shape of the listed ids (same prefix and length), so comparing them means something. */
function sortsLike(id: string, listed: string | undefined): boolean {
  if (listed === undefined) return /^[a-z]+_[0-9a-f]{48}$/.test(id);
  return id.length === listed.length && id.slice(0, id.indexOf('_')) === listed.slice(0, listed.indexOf('_'));
}

/** The `metadata[key]=value` filters of a list query (the SDK sends metadata so), and the rest of it. */
export function metadataFilters(query: Record<string, unknown>): { filters: [string, string][]; rest: Record<string, unknown> } {
  const filters: [string, string][] = [];
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    const match = /^metadata\[(.+)\]$/.exec(key);
    if (match) filters.push([match[1]!, String(value)]);
    else rest[key] = value;
  }
  return { filters, rest };
}

/** Whether a record's metadata holds every filter. */
export function matchesMetadata(metadata: Record<string, string>, filters: readonly [string, string][]): boolean {
  return filters.every(([key, value]) => metadata[key] === value);
}
