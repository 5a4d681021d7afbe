import { contentWords, nameParts, stem, type MessageText } from './message-text.ts';
import { isNode, resolved, typesOf, type SchemaNode } from './schema-nodes.ts';

/**
 * Where the autopilot finds an argument in the user's words, as a model would: a property named
 * `sku` takes `sku_123` from "demand for sku_123"; `city` takes "New York" from "the city New
 * York" and "Paris" from "the weather in Paris"; `title` takes "Design review" from `titled
 * "Design review"`; `flight_id` takes `AF123` from "flight AF123"; a `format: date` property (or
 * one named `date`) takes the message's date, "March 14, 2025" or "tomorrow" included; an enum
 * takes the member the message names; a number takes the figure beside the property's name
 * ("5 nights", "limit 20"), and a count (`limit`, `top`) the message's only figure; a list of
 * emails every address; a free-text property (`query`, …) a quoted phrase, what follows "for"
 * or "about", or the message. A token one property took is not taken again by another's format,
 * pattern or enum ("from CDG to JFK": `origin` CDG, `destination` JFK).
 */

/** A lookup table a schema's words index: `format: "constructor"` must find nothing, not Object's. */
function withoutPrototype<Value>(entries: Record<string, Value>): Readonly<Record<string, Value>> {
  return Object.assign(Object.create(null) as Record<string, Value>, entries);
}

/** Tokens shaped as each string `format` is; a token that fits fills a property of that format. */
const FORMAT_SHAPES: Readonly<Record<string, RegExp>> = withoutPrototype({
  date: /^\d{4}-\d{2}-\d{2}$/,
  'date-time': /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/i,
  time: /^\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$/i,
  email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
  uri: /^[a-z][a-z0-9+.-]*:\/\/\S+$/i,
  url: /^[a-z][a-z0-9+.-]*:\/\/\S+$/i,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  ipv4: /^(?:\d{1,3}\.){3}\d{1,3}$/,
  ipv6: /^[0-9a-f:]+:[0-9a-f:]*$/i,
  hostname: /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/i,
});

/** Words of a property's name that say its format when the schema does not. */
const NAMED_FORMATS: Readonly<Record<string, string>> = withoutPrototype({
  email: 'email',
  emails: 'email',
  mail: 'email',
  date: 'date',
  day: 'date',
  url: 'uri',
  uri: 'uri',
  link: 'uri',
  website: 'uri',
  uuid: 'uuid',
  ip: 'ipv4',
  timestamp: 'date-time',
});

/** Property names whose value is a piece of free text: they take a quoted phrase, or the message. */
const FREE_TEXT = new Set([
  'query',
  'q',
  'question',
  'prompt',
  'text',
  'message',
  'input',
  'content',
  'search',
  'instructions',
  'request',
  'task',
  'body',
  'note',
  'comment',
  'keywords',
  'topic',
]);

/** Names of places: they take a capitalised word after "in", "to", "from", "at" or "near". */
const PLACES = new Set(['city', 'town', 'place', 'location', 'destination', 'origin', 'country', 'region', 'state', 'address', 'where', 'airport']);

/** Last parts of names of identifiers: `flight_id` takes the token after "flight". */
const IDENTIFIER_SUFFIXES = new Set(['id', 'code', 'number', 'no', 'num', 'ref', 'reference', 'key', 'handle', 'slug']);

/** Names of counts: they take the message's only figure, or a small one. */
const COUNTS = new Set(['limit', 'count', 'top', 'max', 'size', 'n', 'k', 'results', 'page_size', 'per_page', 'first', 'last', 'take']);

/** Words that may stand between a property's name and its value: "city: Paris", "limit of 20". */
const LINKING = new Set(['is', 'of', 'for', '=', ':', '#', 'to', 'at', 'in', 'as', 'the', 'no', 'number', 'id', 'a', 'an', 'named', 'called', 'titled']);

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/** The longest free text the autopilot passes as one value. */
const MAX_FREE_TEXT = 2_000;

export interface TextValue {
  readonly value: unknown;
  /** How it was found, for the program's comments: `message`, `format`, `enum`, `name`. */
  readonly source: string;
}

/** What one call's properties have taken of the message: a token taken once is not taken again by a pattern, format or enum. */
export type TakenTokens = Set<string>;

interface Keys {
  /** The name and its parts: a token keyed by one of them (`sku_123`) is the value. */
  readonly strong: string[];
  /** The words a value may follow ("city Paris"): the name, or its last part when a word of its own, or the noun before an identifier suffix. */
  readonly leading: string[];
  /** The description's words (weaker). */
  readonly weak: string[];
  readonly parts: string[];
}

function keysOf(name: string, description: unknown): Keys {
  const parts = nameParts(name);
  const strong = [...new Set([name.toLowerCase(), ...parts.filter((part) => part.length >= 2)])];
  const last = parts.at(-1);
  const leading = new Set([name.toLowerCase()]);
  if (last !== undefined && (parts.length === 1 || (last.length >= 3 && !IDENTIFIER_SUFFIXES.has(last)))) leading.add(last);
  // `flight_id`, `order_number`: the noun before the suffix names the thing ("flight AF123").
  if (parts.length >= 2 && IDENTIFIER_SUFFIXES.has(last!)) leading.add(parts.at(-2)!);
  const weak = typeof description === 'string' ? [...contentWords(description.slice(0, 500))].filter((word) => word.length >= 3 && !strong.includes(word)) : [];
  return { strong, leading: [...leading], weak, parts };
}

function matchesKey(word: string, keys: readonly string[]): boolean {
  const lower = word.toLowerCase().replace(/[:=]$/, '');
  return keys.some((key) => key === lower || stem(key) === stem(lower) || (key.length >= 4 && lower.startsWith(key) && lower.length <= key.length + 2));
}

/** A token that starts with a key and goes on after a separator or a digit: `sku_123` for `sku`, `ORD-7` for `ord`. */
function keyedToken(tokens: readonly string[], keys: readonly string[], taken: TakenTokens): string | undefined {
  for (const token of tokens) {
    if (taken.has(token)) continue;
    const lower = token.toLowerCase();
    for (const key of keys) {
      if (key.length < 2 || lower.length <= key.length || !lower.startsWith(key)) continue;
      if (/[_\-#:/.0-9]/.test(lower[key.length]!) && /[A-Za-z0-9]/.test(lower.slice(key.length))) return token;
    }
  }
  return undefined;
}

/** The tokens after a key ("city Paris", "city: New York", "limit of 20"), linking words skipped; capitalised words run on. */
function afterKey(tokens: readonly string[], keys: readonly string[], accept: (token: string) => boolean, taken: TakenTokens): string | undefined {
  for (const [index, token] of tokens.entries()) {
    if (!matchesKey(token, keys)) continue;
    for (let next = index + 1; next < Math.min(tokens.length, index + 4); next++) {
      const candidate = tokens[next]!;
      if (LINKING.has(candidate.toLowerCase())) continue;
      if (taken.has(candidate) || !accept(candidate)) break;
      return candidate;
    }
  }
  return undefined;
}

/** A run of capitalised words starting at `start` ("New York"), at most four. */
function capitalisedRun(tokens: readonly string[], start: number): string | undefined {
  const run: string[] = [];
  for (let index = start; index < tokens.length && run.length < 4; index++) {
    const token = tokens[index]!;
    // The first word capitalised (`Paris`, `NYC`); the next ones capitalised words, not codes (`New York`, not `Kyoto JP`).
    if (!(run.length === 0 ? /^\p{Lu}[\p{L}'.-]*$/u : /^\p{Lu}\p{Ll}[\p{L}'.-]*$/u).test(token)) break;
    run.push(token);
  }
  return run.length > 0 ? run.join(' ') : undefined;
}

/** A phrase in quotes right after a key (`titled "Design review"`, `note 'called about refund'`). */
function quotedAfterKey(text: string, keys: readonly string[]): string | undefined {
  for (const key of keys) {
    if (key.length < 2) continue;
    const pattern = new RegExp(
      `\\b${key.replace(/[^a-z0-9]/gi, '')}\\w{0,3}\\b[\\s:=]*(?:(?:is|of|as|called|named|titled|to|a|an)\\s+)?(?:"([^"\\n]{1,500})"|“([^”\\n]{1,500})”|'([^'\\n]{1,500})')`,
      'i',
    );
    const match = pattern.exec(text);
    if (match) return match[1] ?? match[2] ?? match[3];
  }
  return undefined;
}

/** A place: a capitalised run after "in", "to", "from", "at" or "near" ("the weather in Paris"). */
function placeIn(tokens: readonly string[], taken: TakenTokens): string | undefined {
  for (const [index, token] of tokens.entries()) {
    if (!['in', 'to', 'from', 'at', 'near', 'for'].includes(token.toLowerCase())) continue;
    const place = capitalisedRun(tokens, index + 1);
    if (place !== undefined && !taken.has(place)) return place;
  }
  return undefined;
}

function isNumberToken(token: string): boolean {
  return /^-?\d+(?:\.\d+)?$/.test(token);
}

/** A number token just before a key ("5 units", "20 results"). */
function numberBeforeKey(tokens: readonly string[], keys: readonly string[]): string | undefined {
  for (const [index, token] of tokens.entries()) {
    if (index === 0 || !matchesKey(token, keys)) continue;
    const before = tokens[index - 1]!;
    if (isNumberToken(before)) return before;
  }
  return undefined;
}

function isoDate(year: number, month: number, day: number): string | undefined {
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  return date.toISOString().slice(0, 10);
}

/** The message's date as `YYYY-MM-DD`: ISO, "March 14, 2025", "14 March 2025", "3/14/2025", "today", "tomorrow", "yesterday". */
export function dateIn(message: MessageText, now = Date.now()): string | undefined {
  const iso = message.tokens.find((token) => FORMAT_SHAPES.date!.test(token));
  if (iso) return iso;
  const text = message.text.toLowerCase();
  const month = MONTHS.map((name) => `${name}|${name.slice(0, 3)}`).join('|');
  const named = new RegExp(
    `\\b(?:(${month})\\.?\\s+(\\d{1,2})(?:st|nd|rd|th)?,?\\s+(\\d{4})|(\\d{1,2})(?:st|nd|rd|th)?\\s+(${month})\\.?,?\\s+(\\d{4}))\\b`,
  ).exec(text);
  if (named) {
    const monthName = named[1] ?? named[5]!;
    const index = MONTHS.findIndex((name) => name.startsWith(monthName.slice(0, 3)));
    const found = isoDate(Number(named[3] ?? named[6]), index + 1, Number(named[2] ?? named[4]));
    if (found) return found;
  }
  const slashed = /\b(\d{1,2})\/(\d{1,2})\/(\d{4})\b/.exec(text);
  if (slashed) {
    const found = isoDate(Number(slashed[3]), Number(slashed[1]), Number(slashed[2])) ?? isoDate(Number(slashed[3]), Number(slashed[2]), Number(slashed[1]));
    if (found) return found;
  }
  const relative = /\b(today|tomorrow|yesterday)\b/.exec(text);
  if (relative)
    return new Date(now + { today: 0, tomorrow: 1, yesterday: -1 }[relative[1] as 'today' | 'tomorrow' | 'yesterday'] * 86_400_000).toISOString().slice(0, 10);
  return undefined;
}

function patternOf(node: SchemaNode): RegExp | undefined {
  const pattern = node['pattern'];
  if (typeof pattern !== 'string' || pattern.length > 1_000) return undefined;
  try {
    return new RegExp(pattern, 'u');
  } catch {
    return undefined;
  }
}

/** The shape of a node's format: its own, or the one its name says. */
function formatOf(node: SchemaNode, keys: Keys): string | undefined {
  if (typeof node['format'] === 'string') return node['format'];
  return keys.parts.map((part) => NAMED_FORMATS[part]).find((format) => format !== undefined);
}

/** Whether a string fits a node's own string constraints (length, format, pattern) as far as they can be checked here. */
function fitsString(value: string, node: SchemaNode): boolean {
  const { minLength, maxLength, format } = node;
  if (typeof minLength === 'number' && value.length < minLength) return false;
  if (typeof maxLength === 'number' && value.length > maxLength) return false;
  const shape = typeof format === 'string' ? FORMAT_SHAPES[format] : undefined;
  if (shape && !shape.test(value)) return false;
  const pattern = patternOf(node);
  return !pattern || pattern.test(value.slice(0, 10_000));
}

/** The enum (or const) member the message names, matched without regard to case; one another property took is passed over. */
function enumMember(node: SchemaNode, message: MessageText, taken: TakenTokens): TextValue | undefined {
  const members = Array.isArray(node['enum']) ? node['enum'] : 'const' in node ? [node['const']] : undefined;
  if (!members) return undefined;
  const lowerText = message.text.toLowerCase();
  const tokens = new Map(message.tokens.filter((token) => !taken.has(token)).map((token) => [token.toLowerCase(), token]));
  for (const member of members.slice(0, 1_000)) {
    if (typeof member === 'string' && member.length > 0) {
      const lower = member.toLowerCase();
      const token = tokens.get(lower);
      if (token !== undefined) return taking(taken, token, { value: member, source: 'enum' });
      if (lower.includes(' ') && lowerText.includes(lower)) return { value: member, source: 'enum' };
    } else if (typeof member === 'number' && tokens.has(String(member))) {
      return taking(taken, String(member), { value: member, source: 'enum' });
    }
  }
  return undefined;
}

function taking(taken: TakenTokens, token: string, value: TextValue): TextValue {
  taken.add(token);
  return value;
}

/** A free-text value: a quoted phrase, what follows "for" or "about" to the end of its sentence, or the message. */
function freeText(message: MessageText): string {
  if (message.quoted[0] !== undefined) return message.quoted[0];
  const after = /\b(?:for|about|on|regarding)\s+([^.!?\n]{3,})/i.exec(message.text);
  return (after?.[1] ?? message.text).trim().slice(0, MAX_FREE_TEXT);
}

/** A string value the message gives a node, or undefined. */
function stringFromText(name: string, node: SchemaNode, message: MessageText, keys: Keys, taken: TakenTokens, optional: boolean): TextValue | undefined {
  const fits = (token: string): boolean => fitsString(token, node);
  const format = formatOf(node, keys);
  // Identifiers look like ones: a digit or a separator in them, never an address.
  const identifier = IDENTIFIER_SUFFIXES.has(keys.parts.at(-1) ?? '');
  const looksRight = (token: string): boolean =>
    fits(token) && !LINKING.has(token.toLowerCase()) && (!identifier || (/[\d_-]/.test(token) && !token.includes('@')));

  // The word the property is named by: `sku_123` for `sku`; a quoted phrase after it; the token (or capitalised run) after it.
  const keyed = keyedToken(message.tokens, keys.strong, taken);
  if (keyed && looksRight(keyed)) return taking(taken, keyed, { value: keyed, source: 'name' });
  const quoted = quotedAfterKey(message.text, keys.leading);
  if (quoted !== undefined && fits(quoted)) return { value: quoted, source: 'name' };
  const following = afterKey(message.tokens, keys.leading, looksRight, taken);
  if (following !== undefined) {
    const index = message.tokens.indexOf(following);
    const run = capitalisedRun(message.tokens, index);
    const value = run?.includes(' ') && fits(run) ? run : following;
    return taking(taken, following, { value, source: 'name' });
  }
  // A token of the property's format (its own, or the one its name says) or pattern.
  if (format === 'date') {
    const date = dateIn(message);
    if (date !== undefined && fits(date)) return { value: date, source: 'format' };
  }
  const shape = format === undefined ? undefined : FORMAT_SHAPES[format];
  const pattern = patternOf(node);
  if (shape || pattern) {
    const fitting = message.tokens.find((token) => !taken.has(token) && fits(token) && (!shape || shape.test(token)));
    if (fitting) return taking(taken, fitting, { value: fitting, source: shape ? 'format' : 'pattern' });
  }
  if (keys.parts.some((part) => PLACES.has(part))) {
    const place = placeIn(message.tokens, taken);
    if (place !== undefined && fits(place)) return taking(taken, place, { value: place, source: 'place' });
  }
  const described = keyedToken(message.tokens, keys.weak, taken);
  if (described && looksRight(described)) return taking(taken, described, { value: described, source: 'description' });
  if (!optional && (FREE_TEXT.has(name.toLowerCase()) || keys.strong.some((key) => FREE_TEXT.has(key)))) {
    const phrase = freeText(message);
    if (phrase.length > 0 && fits(phrase)) return { value: phrase, source: 'message' };
  }
  return undefined;
}

/**
 * The value the message gives property `name` (whose schema is `schema`, within `root`), or
 * undefined when it gives none. `optional`: the property is not required, so only a clear
 * mention counts (never the whole message as free text). `taken`: the tokens the call's other
 * properties took.
 */
export function valueFromText(
  name: string,
  schema: unknown,
  root: SchemaNode,
  message: MessageText,
  optional = false,
  taken: TakenTokens = new Set(),
): TextValue | undefined {
  const node = resolved(schema, root);
  if (!node) return undefined;
  const enumValue = enumMember(node, message, taken);
  if (enumValue) return enumValue;
  if (Array.isArray(node['enum']) || 'const' in node) return undefined;
  const types = typesOf(node, root);
  const keys = keysOf(name, node['description']);

  if (types.has('string') || types.size === 0) {
    const found = stringFromText(name, node, message, keys, taken, optional);
    if (found) return found;
  }
  if (types.has('number')) {
    const figure = afterKey(message.tokens, keys.leading, isNumberToken, taken) ?? numberBeforeKey(message.tokens, keys.leading);
    const count = keys.parts.some((part) => COUNTS.has(part));
    const only = message.tokens.filter(isNumberToken);
    const chosen = figure ?? (count && only.length === 1 && !taken.has(only[0]!) ? only[0] : undefined);
    if (chosen !== undefined) {
      const value = Number(chosen);
      if (!types.has('integer') || Number.isInteger(value) || types.size > 2) return taking(taken, chosen, { value, source: 'name' });
    }
  }
  if (types.has('array')) {
    const items = isNode(node['items']) ? resolved(node['items'], root) : undefined;
    if (items && typesOf(items, root).has('string')) {
      // Every token keyed by the property's name, singular ("skus sku_1 and sku_2"), or of its items' format or pattern (every address for `attendees` of emails).
      const singular = keys.strong.map(stem);
      const itemShape = typeof items['format'] === 'string' ? FORMAT_SHAPES[items['format']] : undefined;
      const found = message.tokens.filter(
        (token) =>
          !taken.has(token) &&
          fitsString(token, items) &&
          (keyedToken([token], singular, taken) !== undefined || itemShape?.test(token) || (items['pattern'] !== undefined && patternOf(items) !== undefined)),
      );
      if (found.length > 0) {
        for (const token of found) taken.add(token);
        return { value: [...new Set(found)].slice(0, 32), source: 'name' };
      }
    }
  }
  return undefined;
}

/** A small count for a count property the message gives no figure for (faker's would be any integer): 5, within its bounds. */
export function defaultCount(name: string, node: SchemaNode): number | undefined {
  if (!nameParts(name).some((part) => COUNTS.has(part))) return undefined;
  const minimum = typeof node['minimum'] === 'number' ? node['minimum'] : typeof node['exclusiveMinimum'] === 'number' ? node['exclusiveMinimum'] + 1 : 1;
  const maximum = typeof node['maximum'] === 'number' ? node['maximum'] : typeof node['exclusiveMaximum'] === 'number' ? node['exclusiveMaximum'] - 1 : 5;
  const value = Math.min(Math.max(5, Math.ceil(minimum)), Math.floor(maximum));
  return value >= minimum ? value : undefined;
}
