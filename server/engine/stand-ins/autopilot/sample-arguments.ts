import { generateSync, type JsonSchema } from 'json-schema-faker';
import type { MessageText } from './message-text.ts';
import { isNode, propertyNames, propertySchema, resolved, typesOf, type SchemaNode } from './schema-nodes.ts';
import { defaultCount, valueFromText, type TakenTokens } from './text-values.ts';
import { FIXED_LIMITS } from '../../../../schemas/fixed-limits.ts';

/**
 * Arguments for a tool, as a model writes them: values the user's message gives (text-values.ts)
 * over a value json-schema-faker makes from the tool's `parameters` (its `examples`, `default`,
 * `enum`, `const`, `format` and `pattern`, `$ref`, `anyOf`/`oneOf`/`allOf`, nested objects and
 * arrays; only required properties, as a model fills them). Several candidates, best first: the
 * caller keeps the first that its schema check passes (runtime checkAgainstSchema).
 *
 * json-schema-faker is bounded by nothing (a `minItems` of millions makes millions of items):
 * this runs in the autopilot's thread, under its deadline, on a copy of the schema whose
 * minimum sizes are clamped (a value then breaks the schema, and the check says so).
 */

/** The most items, characters or properties a generated value is made to have at least. */
const MAX_GENERATED_SIZE = 64;
const MAX_GENERATED_STRING = 4_096;
/** A pattern's counted repeat (`{n}`, `{n,}`, `{n,m}`). */
const QUANTIFIER = /(?<!\\)\{(\d+)(,)?(\d*)\}/g;
/** The most repeats all of a pattern's counted ones may come to, multiplied (they may be nested): `a{100000000}` asks for 100 MB, `((a{256}){256}){256}` for 16 MB. */
const MAX_REPEATS = 4_096;
/** The longest JSON of arguments the autopilot makes for one call: a schema's `const` of 16 KiB in arrays of 64 of arrays of 64 asks for 64 MiB. */
export const MAX_ARGUMENT_CHARS = FIXED_LIMITS.autopilotArgumentChars.value;
/** Candidates per tool: the text's values over faker's, then faker's alone, for this many seeds. */
const SEEDS_PER_TOOL = 3;
/** How deep the text's values are looked for in nested objects and arrays. */
const MAX_OVERLAY_DEPTH = 8;

export interface ArgumentCandidate {
  readonly value: unknown;
  /** Properties whose value came from the message, as `path ← source`. */
  readonly fromText: readonly string[];
}

/**
 * A pattern whose counted repeats are clamped so that, multiplied, they come to at most
 * MAX_REPEATS: each to the k-th root of it for a pattern of k of them (`\d{3}-\d{4}` keeps its
 * own; three nested `{256}` become `{16}`).
 */
function clampedPattern(pattern: string): string {
  const counted = [...pattern.matchAll(QUANTIFIER)].length;
  if (counted === 0) return pattern;
  const each = Math.max(1, Math.floor(MAX_REPEATS ** (1 / counted)));
  const clamp = (raw: string): number => Math.min(Number(raw), each);
  return pattern.replace(
    QUANTIFIER,
    (_, low: string, comma: string | undefined, high: string) => `{${clamp(low)}${comma ?? ''}${high ? Math.max(clamp(high), clamp(low)) : ''}}`,
  );
}

/** A copy of a schema whose minimum sizes are clamped to what the autopilot will make. */
function clamped(schema: unknown, budget = { nodes: 200_000 }): unknown {
  if (budget.nodes-- <= 0) return schema;
  if (Array.isArray(schema)) return schema.map((entry) => clamped(entry, budget));
  if (!isNode(schema)) return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if ((key === 'minItems' || key === 'minProperties' || key === 'minContains') && typeof value === 'number') copy[key] = Math.min(value, MAX_GENERATED_SIZE);
    else if (key === 'minLength' && typeof value === 'number') copy[key] = Math.min(value, MAX_GENERATED_STRING);
    else if (key === 'pattern' && typeof value === 'string') copy[key] = clampedPattern(value);
    else copy[key] = clamped(value, budget);
  }
  return copy;
}

/** What faker makes of a schema with this seed; undefined when it cannot (a remote `$ref`, an unknown type). */
function fakerValue(schema: unknown, seed: number): unknown {
  try {
    return generateSync(clamped(schema) as JsonSchema, {
      seed,
      optionalsProbability: 0,
      fixedProbabilities: true,
      useDefaultValue: true,
      useExamplesValue: true,
      validateSchemaVersion: false,
      failOnInvalidTypes: false,
      maxDepth: 6,
      refDepthMax: 3,
      maxDefaultItems: 2,
      maxItems: MAX_GENERATED_SIZE,
      maxLength: MAX_GENERATED_STRING,
    });
  } catch {
    return undefined;
  }
}

/** Whether a node is a plain string with nothing that says what it holds (faker makes random letters for it). */
function plainString(node: SchemaNode, root: SchemaNode): boolean {
  const types = typesOf(node, root);
  return (
    types.size === 1 &&
    types.has('string') &&
    !['format', 'pattern', 'minLength', 'maxLength', 'enum', 'const', 'examples', 'default'].some((key) => key in node)
  );
}

/**
 * `value` (faker's, for `node`) with the message's values put in: each declared property the
 * message gives a value for, required or not, and in nested objects and arrays likewise (one
 * `taken` set for the whole call: a token one property took, another's pattern or enum passes
 * over). A plain string the message says nothing of becomes `<name>-sample`, which reads better
 * than faker's letters, and a count (`limit`, `top`) a small one.
 */
function overlay(
  value: unknown,
  node: SchemaNode | undefined,
  root: SchemaNode,
  message: MessageText,
  path: string,
  found: string[],
  taken: TakenTokens,
  depth = 0,
): unknown {
  if (!node || depth > MAX_OVERLAY_DEPTH) return value;
  if (Array.isArray(value)) {
    const items = resolved(node['items'], root);
    return items ? value.map((item, index) => overlay(item, items, root, message, `${path}[${index}]`, found, taken, depth + 1)) : value;
  }
  if (!isNode(value)) return value;
  const required = new Set(Array.isArray(node['required']) ? node['required'].filter((name): name is string => typeof name === 'string') : []);
  const result: Record<string, unknown> = { ...value };
  for (const name of propertyNames(node, root)) {
    const schema = propertySchema(node, name, root);
    if (!schema) continue;
    const where = path === '' ? name : `${path}.${name}`;
    const fromText = valueFromText(name, schema, root, message, !required.has(name), taken);
    if (fromText) {
      setOwn(result, name, fromText.value);
      found.push(`${where} ← ${fromText.source}`);
    } else if (Object.hasOwn(result, name)) {
      const count = typeof result[name] === 'number' ? defaultCount(name, schema) : undefined;
      setOwn(
        result,
        name,
        count !== undefined
          ? count
          : typeof result[name] === 'string' && plainString(schema, root)
            ? `${name}-sample`
            : overlay(result[name], schema, root, message, where, found, taken, depth + 1),
      );
    }
  }
  return result;
}

/** Sets an own property, whatever its name: `result.__proto__ = …` would set the prototype instead. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Candidate arguments for `parameters` (a function's or an MCP tool's), best first; none when every one made is too large. */
export function argumentCandidates(parameters: unknown, message: MessageText, seed: number): ArgumentCandidate[] {
  const root = isNode(parameters) ? parameters : { type: 'object', properties: {} };
  const candidates: ArgumentCandidate[] = [];
  const seen = new Set<string>();
  const add = (value: unknown, fromText: readonly string[]): void => {
    if (!isNode(value)) return;
    const key = JSON.stringify(value);
    // Arguments a model would not write: a program of megabytes, for nobody's good.
    if (key.length > MAX_ARGUMENT_CHARS || seen.has(key)) return;
    seen.add(key);
    candidates.push({ value, fromText });
  };
  for (let attempt = 0; attempt < SEEDS_PER_TOOL; attempt++) {
    const made = fakerValue(root, (seed + attempt) >>> 0);
    const found: string[] = [];
    add(overlay(made ?? {}, root, root, message, '', found, new Set()), found);
    if (made !== undefined) add(made, []);
  }
  return candidates;
}

/**
 * The input of a custom tool (one string): a `code span` or a quoted phrase of the message, or
 * the message itself; for a tool whose grammar is a regular expression, a string of it when the
 * message's text is not one.
 */
export function customInput(grammar: { readonly syntax: string; readonly definition: string } | undefined, message: MessageText, seed: number): string {
  const phrase = message.code[0] ?? message.quoted[0] ?? message.text.trim().slice(0, 2_000);
  if (grammar?.syntax !== 'regex') return phrase;
  try {
    if (new RegExp(`^(?:${grammar.definition})$`, 'u').test(phrase)) return phrase;
  } catch {
    return phrase;
  }
  const made = fakerValue({ type: 'string', pattern: `^(?:${grammar.definition})$` }, seed);
  return typeof made === 'string' ? made : phrase;
}
