import { contentWords, nameParts, stem, type MessageText } from './message-text.ts';
import { isNode, resolved, typesOf, type SchemaNode } from './schema-nodes.ts';

/**
 * Where the autopilot finds an argument in the user's words, as a model would: a property named
 * `sku` takes `sku_123` from "demand for sku_123"; `city` takes "Paris" from "the city Paris"; a
 * `format: date` property takes the message's date; an enum takes the member the message names;
 * a number takes the figure beside the property's name ("5 units", "limit 20"); a free-text
 * property (`query`, `question`, …) takes a quoted phrase, or the message itself.
 */

/** Tokens shaped as each string `format` is; a token that fits fills a property of that format. */
const FORMAT_SHAPES: Readonly<Record<string, RegExp>> = {
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
};

/** Words of a property's name that say its format when the schema does not. */
const NAMED_FORMATS: Readonly<Record<string, RegExp>> = {
  email: FORMAT_SHAPES.email!,
  mail: FORMAT_SHAPES.email!,
  date: FORMAT_SHAPES.date!,
  day: FORMAT_SHAPES.date!,
  url: FORMAT_SHAPES.uri!,
  uri: FORMAT_SHAPES.uri!,
  link: FORMAT_SHAPES.uri!,
  website: FORMAT_SHAPES.uri!,
  uuid: FORMAT_SHAPES.uuid!,
  ip: FORMAT_SHAPES.ipv4!,
  timestamp: FORMAT_SHAPES['date-time']!,
};

/** Property names whose value is a piece of free text: they take a quoted phrase, or the message. */
const FREE_TEXT = new Set(['query', 'q', 'question', 'prompt', 'text', 'message', 'input', 'content', 'search', 'instructions', 'request', 'task', 'body', 'note', 'comment']);

/** Words that may stand between a property's name and its value: "city: Paris", "limit of 20". */
const LINKING = new Set(['is', 'of', 'for', '=', ':', '#', 'to', 'at', 'in', 'as', 'the', 'no', 'number', 'id']);

/** The longest free text the autopilot passes as one value. */
const MAX_FREE_TEXT = 2_000;

export interface TextValue {
  readonly value: unknown;
  /** How it was found, for the program's comments: `message`, `format`, `enum`, `name`. */
  readonly source: string;
}

/**
 * The words a property is known by: its name's parts (a token keyed by any of them, `sku_123`,
 * is its value); the words a value may follow in the message ("city Paris"): the whole name,
 * or its last part, the noun it names, when that is a word of its own (`start_city` → `city`,
 * never `id` of `customer_id`); and, weaker, its description's words.
 */
function keysOf(name: string, description: unknown): { strong: string[]; leading: string[]; weak: string[] } {
  const parts = nameParts(name);
  const strong = [...new Set([name.toLowerCase(), ...parts.filter((part) => part.length >= 2)])];
  const last = parts.at(-1);
  const leading = [...new Set([name.toLowerCase(), ...(last !== undefined && (parts.length === 1 || last.length >= 3) ? [last] : [])])];
  const weak = typeof description === 'string' ? [...contentWords(description.slice(0, 500))].filter((word) => word.length >= 3 && !strong.includes(word)) : [];
  return { strong, leading, weak };
}

/** A token that starts with a key and goes on after a separator or a digit: `sku_123` for `sku`, `ORD-7` for `ord`. */
function keyedToken(tokens: readonly string[], keys: readonly string[]): string | undefined {
  for (const token of tokens) {
    const lower = token.toLowerCase();
    for (const key of keys) {
      if (key.length < 2 || lower.length <= key.length || !lower.startsWith(key)) continue;
      if (/[_\-#:/.0-9]/.test(lower[key.length]!) && /[A-Za-z0-9]/.test(lower.slice(key.length))) return token;
    }
  }
  return undefined;
}

/** The token after a key ("city Paris", "city: Paris", "limit of 20"), skipping linking words. */
function tokenAfterKey(tokens: readonly string[], keys: readonly string[], accept: (token: string) => boolean): string | undefined {
  for (const [index, token] of tokens.entries()) {
    const lower = token.toLowerCase().replace(/[:=]$/, '');
    if (!keys.some((key) => key === lower || stem(key) === stem(lower))) continue;
    for (let next = index + 1; next < Math.min(tokens.length, index + 4); next++) {
      const candidate = tokens[next]!;
      if (LINKING.has(candidate.toLowerCase())) continue;
      if (accept(candidate)) return candidate;
      break;
    }
  }
  return undefined;
}

/** A number token just before a key ("5 units", "20 results"). */
function numberBeforeKey(tokens: readonly string[], keys: readonly string[]): string | undefined {
  for (const [index, token] of tokens.entries()) {
    const lower = stem(token.toLowerCase());
    if (index === 0 || !keys.some((key) => stem(key) === lower)) continue;
    const before = tokens[index - 1]!;
    if (isNumberToken(before)) return before;
  }
  return undefined;
}

function isNumberToken(token: string): boolean {
  return /^-?\d+(?:\.\d+)?$/.test(token);
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

/** The enum (or const) member the message names, matched without regard to case. */
function enumMember(node: SchemaNode, message: MessageText): TextValue | undefined {
  const members = Array.isArray(node['enum']) ? node['enum'] : 'const' in node ? [node['const']] : undefined;
  if (!members) return undefined;
  const lowerText = message.text.toLowerCase();
  const tokens = new Set(message.tokens.map((token) => token.toLowerCase()));
  for (const member of members.slice(0, 1_000)) {
    if (typeof member === 'string' && member.length > 0) {
      const lower = member.toLowerCase();
      if (tokens.has(lower) || (lower.includes(' ') && lowerText.includes(lower))) return { value: member, source: 'enum' };
    } else if (typeof member === 'number' && tokens.has(String(member))) {
      return { value: member, source: 'enum' };
    }
  }
  return undefined;
}

/**
 * The value the message gives property `name` (whose schema is `schema`, within `root`), or
 * undefined when it gives none. `optional`: the property is not required, so only a clear
 * mention counts (never the whole message as free text).
 */
export function valueFromText(name: string, schema: unknown, root: SchemaNode, message: MessageText, optional = false): TextValue | undefined {
  const node = resolved(schema, root);
  if (!node) return undefined;
  const enumValue = enumMember(node, message);
  if (enumValue) return enumValue;
  if (Array.isArray(node['enum']) || 'const' in node) return undefined;
  const types = typesOf(node, root);
  const { strong, leading, weak } = keysOf(name, node['description']);

  if (types.has('string') || types.size === 0) {
    const format = typeof node['format'] === 'string' ? FORMAT_SHAPES[node['format']] : undefined;
    const pattern = patternOf(node);
    // The word the property is named by: `sku_123` for `sku`, "from LIS" for `from`.
    const keyed = keyedToken(message.tokens, strong) ?? tokenAfterKey(message.tokens, leading, (token) => fitsString(token, node) && !LINKING.has(token.toLowerCase()));
    if (keyed && fitsString(keyed, node)) return { value: keyed, source: 'name' };
    // A token of the property's format or pattern.
    if (format || pattern) {
      const fitting = message.tokens.find((token) => fitsString(token, node));
      if (fitting) return { value: fitting, source: format ? 'format' : 'pattern' };
    }
    // A name that says the format (`email`, `start_date`, `homepage_url`): a token of that shape.
    const implied = strong.map((key) => NAMED_FORMATS[key]).find((shape) => shape !== undefined);
    if (implied && !format) {
      const fitting = message.tokens.find((token) => implied.test(token) && fitsString(token, node));
      if (fitting) return { value: fitting, source: 'format' };
    }
    const described = keyedToken(message.tokens, weak);
    if (described && fitsString(described, node)) return { value: described, source: 'description' };
    if (!optional && (FREE_TEXT.has(name.toLowerCase()) || strong.some((key) => FREE_TEXT.has(key)))) {
      const phrase = message.quoted[0] ?? message.text.trim().slice(0, MAX_FREE_TEXT);
      if (phrase.length > 0 && fitsString(phrase, node)) return { value: phrase, source: 'message' };
    }
  }
  if (types.has('number')) {
    const figure = tokenAfterKey(message.tokens, leading, isNumberToken) ?? numberBeforeKey(message.tokens, leading);
    if (figure !== undefined) {
      const value = Number(figure);
      if (!types.has('integer') || Number.isInteger(value) || types.size > 2) return { value, source: 'name' };
    }
  }
  if (types.has('array')) {
    const items = isNode(node['items']) ? resolved(node['items'], root) : undefined;
    if (items && typesOf(items, root).has('string')) {
      // "skus sku_1 and sku_2": every token keyed by the property's name, singular.
      const singular = strong.map(stem);
      const found = message.tokens.filter((token) => keyedToken([token], singular) !== undefined && fitsString(token, items));
      if (found.length > 0) return { value: [...new Set(found)].slice(0, 32), source: 'name' };
    }
  }
  return undefined;
}
