// The `metadata[key]=value` filters of the Agents API's lists (sessions, vaults, credentials).

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
