/** Fields the SDK adds client-side when it parses a response (`maybeParseResponse`); the wire has none. */
const CLIENT_PARSE_FIELDS = new Set(['output_parsed', 'parsed_arguments', 'parsed']);

/**
 * A plain JSON copy without the SDK's client-side parse fields: what the wire carried, and what
 * openai 7.x's `toResponseInputItems` makes of a parsed response's output.
 */
export function withoutParseFields<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (key, field: unknown) => (CLIENT_PARSE_FIELDS.has(key) ? undefined : field))) as T;
}
